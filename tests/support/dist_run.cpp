#include "support/dist_run.h"

#include <gtest/gtest.h>

#include <map>

#include "verl/model/weights.h"

namespace verl::test {

std::string mpirun(int np) {
  return "OMP_NUM_THREADS=1 mpirun --oversubscribe --allow-run-as-root -np " + std::to_string(np) + " ";
}

std::pair<double, std::string> max_relative_difference(const std::string& a_file, const std::string& b_file) {
  std::map<std::string, torch::Tensor> a, b;
  for (auto& [name, tensor] : model::load_tensors(a_file)) a[name] = tensor;
  for (auto& [name, tensor] : model::load_tensors(b_file)) b[name] = tensor;
  EXPECT_EQ(a.size(), b.size()) << a_file << " vs " << b_file;
  double worst = 0;
  std::string worst_name;
  for (const auto& [name, tb] : b) {
    if (!a.count(name)) {
      ADD_FAILURE() << name << " missing from " << a_file;
      continue;
    }
    const double diff = ((a.at(name) - tb).abs() / tb.abs().clamp_min(1e-3)).max().item<double>();
    if (diff > worst) {
      worst = diff;
      worst_name = name;
    }
  }
  return {worst, worst_name};
}

}  // namespace verl::test
