// Intra-op CPU threads for LibTorch. verl.cpp uses every core unless
// told otherwise: trainer.num_cpu_threads, else $OMP_NUM_THREADS, else the machine's core count.
#pragma once

#include <cstdint>
#include <optional>

namespace verl::runtime {

// The count that would be chosen (no side effects). A bad $OMP_NUM_THREADS is an error naming it.
int choose_cpu_threads(std::optional<int64_t> from_config);

// Chooses and applies the count; returns it.
int configure_cpu_threads(std::optional<int64_t> from_config);

}  // namespace verl::runtime
