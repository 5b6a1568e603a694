// Test helpers for the dist tests: launching `verl` under mpirun, and comparing the parameters two runs saved.
#pragma once

#include <string>
#include <utility>

namespace verl::test {

// "OMP_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np N " (one thread per rank on 2 cores; CI
// runs as root).
std::string mpirun(int np);

// Largest |a - b| / max(|b|, 1e-3) over every parameter of two safetensors files, naming the worst tensor. A
// tensor missing from `a_file`, or a different tensor count, is a test failure.
std::pair<double, std::string> max_relative_difference(const std::string& a_file, const std::string& b_file);

}  // namespace verl::test
