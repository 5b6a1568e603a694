#include "verl/runtime/cpu_threads.h"

#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "verl/common/error.h"
#include "verl/common/logging.h"

namespace verl::runtime {

int choose_cpu_threads(std::optional<int64_t> from_config) {
  if (from_config) {
    VERL_CHECK(*from_config > 0, "threads", "trainer.num_cpu_threads must be > 0, got ", *from_config);
    return static_cast<int>(*from_config);
  }
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    long value = std::strtol(env, &end, 10);
    VERL_CHECK(end != env && *end == '\0' && value > 0, "threads", "OMP_NUM_THREADS='", env,
               "' is not a positive integer");
    return static_cast<int>(value);
  }
  unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : static_cast<int>(cores);
}

int configure_cpu_threads(std::optional<int64_t> from_config) {
  int threads = choose_cpu_threads(from_config);
  torch::set_num_threads(threads);
  VERL_LOG(Debug, "threads") << "intra-op threads: " << threads;
  return threads;
}

}  // namespace verl::runtime
