// A reward plugin for the unit tests (tests/unit/reward/test_custom_reward_function.cpp), built as a MODULE
// library with the C ABI of verl/reward/reward_plugin.h.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "verl/reward/reward_plugin.h"

namespace {

int fail(char* error, size_t error_size, const char* message) {
  std::snprintf(error, error_size, "%s", message);
  return 7;
}

}  // namespace

// 1.0 when the solution contains the ground truth, else 0.0; a solution containing "FAIL" is an error.
extern "C" int compute_score(const char* /*data_source*/, const char* solution_str, const char* ground_truth,
                             const char* /*extra_info_json*/, const char* /*reward_kwargs_json*/, double* score,
                             char* error, size_t error_size) {
  if (std::strstr(solution_str, "FAIL") != nullptr) return fail(error, error_size, "cannot score a FAIL answer");
  *score = std::strstr(solution_str, ground_truth) != nullptr ? 1.0 : 0.0;
  return 0;
}

// Checks that every argument arrives: scores 2.5 when they are as the test sends them.
extern "C" int check_arguments(const char* data_source, const char* solution_str, const char* ground_truth,
                               const char* extra_info_json, const char* reward_kwargs_json, double* score,
                               char* error, size_t error_size) {
  if (std::strcmp(data_source, "my_source") != 0) return fail(error, error_size, data_source);
  if (std::strcmp(solution_str, "x = 42") != 0) return fail(error, error_size, solution_str);
  if (std::strcmp(ground_truth, "[1,2]") != 0) return fail(error, error_size, ground_truth);
  if (std::strstr(extra_info_json, "\"index\":7") == nullptr) return fail(error, error_size, extra_info_json);
  if (std::strcmp(reward_kwargs_json, "{\"scale\":2}") != 0) return fail(error, error_size, reward_kwargs_json);
  *score = 2.5;
  return 0;
}

// Native code that never returns (verl can only end the process: custom_reward_function.timeout).
extern "C" int spin_forever(const char*, const char*, const char*, const char*, const char*, double* score, char*,
                            size_t) {
  volatile bool forever = true;
  while (forever) {
  }
  *score = 0.0;
  return 0;
}

// A plugin that ends the process from inside the call.
extern "C" int call_exit(const char*, const char*, const char*, const char*, const char*, double*, char*, size_t) {
  std::exit(0);
}
