/* The C ABI of a reward plugin: a shared library that custom_reward_function.path names (a path ending in
 * ".so") and that exports one function named by custom_reward_function.name (default "compute_score"):
 *
 *   #include "verl/reward/reward_plugin.h"
 *   extern "C" int compute_score(const char* data_source, const char* solution_str, const char* ground_truth,
 *                                const char* extra_info_json, const char* reward_kwargs_json,
 *                                double* score, char* error, size_t error_size) {
 *     *score = std::string(solution_str).find(ground_truth) != std::string::npos ? 1.0 : 0.0;
 *     return 0;
 *   }
 *
 * Build it with `c++ -shared -fPIC -O2 my_reward.cpp -o my_reward.so` (C works the same way) and set
 * custom_reward_function.path=my_reward.so. The arguments mirror verl's Python
 * compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs):
 *
 *   data_source        the sample's data.reward_fn_key column (UTF-8, NUL-terminated)
 *   solution_str       the decoded response (special tokens skipped)
 *   ground_truth       reward_model.ground_truth: the text itself when it is a string, else its JSON text
 *   extra_info_json    the sample's extra_info as a JSON object text ("{}" when absent)
 *   reward_kwargs_json custom_reward_function.reward_kwargs as a JSON object text ("{}" when unset)
 *   score              where the function writes the score on success
 *   error, error_size  a buffer for an error message (NUL-terminated, at most error_size bytes in all)
 *
 * Return 0 on success. Any other value means the sample could not be scored: the message in `error` is
 * reported with the row index and data source, and custom_reward_function.on_error decides whether the step
 * fails (raise, the default) or the sample scores 0 (zero). The function is called from one thread at a
 * time; all pointers are valid only during the call. The plugin's score is a plain number: it has no
 * extra fields for reward_extra_info (use a Python reward function for dict results).
 */
#ifndef VERL_REWARD_REWARD_PLUGIN_H_
#define VERL_REWARD_REWARD_PLUGIN_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*verl_reward_plugin_fn)(const char* data_source, const char* solution_str, const char* ground_truth,
                                     const char* extra_info_json, const char* reward_kwargs_json, double* score,
                                     char* error, size_t error_size);

#ifdef __cplusplus
}
#endif

#endif /* VERL_REWARD_REWARD_PLUGIN_H_ */
