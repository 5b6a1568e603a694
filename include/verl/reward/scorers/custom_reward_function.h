// The compute_score a reward manager calls for each sample, as verl's load_reward_manager picks it
// (verl/trainer/ppo/reward.py, get_custom_reward_fn):
//
//   custom_reward_function.path unset  -> default_compute_score (the rule scorers; ground_truth must be a string)
//   path ending in ".so"               -> a C ABI plugin (verl/reward/reward_plugin.h), dlopen'ed, the exported
//                                         function `name`
//   any other path                     -> a verl-style Python file loaded as a module (importlib spec loading, as
//                                         "custom_module") into the embedded interpreter; `name` (default
//                                         compute_score) is called with keyword arguments
//                                         data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs
//
// A Python function may return a number (int / float / bool, or anything with __float__ such as numpy scalars)
// or a dict with a "score" key; the dict's other values become ScoreResult::extra (None / bool / int / float /
// str as themselves, numpy scalars through .item(), anything else as its str()). An exception raised by user
// code (Python or plugin) is a RewardFunctionError, which the reward manager reports with the row index and
// data source or, with custom_reward_function.on_error=zero, scores as 0. So are:
//  - a call that runs past UserCodeLimits::timeout_s (custom_reward_function.timeout, `verl score
//    --reward-timeout`): Python code gets a TimeoutError raised inside it (python/user_code.h); code that does
//    not stop (a plugin, native code, a swallowed TimeoutError) ends the process with one line naming the
//    function and the key, python::kUserCodeGraceSeconds later;
//  - sys.exit() / os._exit() / os.abort() in Python code (SystemExit); exit() in a plugin ends the process with
//    exit code 1 and a line saying so;
//  - a non-finite score (NaN, +-inf): it would turn the advantages of the sample's whole group (GRPO) or batch
//    (whitening) into NaN and the loss with them, so it is the function's error, counted and logged with
//    on_error=zero like any other, instead of a value passed on.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/reward/scorers/score_result.h"

namespace verl::config {
struct RewardRateLimits;
}

namespace verl::reward {

class SandboxFusionClient;

// data_source, solution_str, ground_truth (any JSON value; usually a string), extra_info (a JSON object).
using ComputeScoreFn = std::function<ScoreResult(const std::string& data_source, const std::string& solution_str,
                                                 const nlohmann::json& ground_truth,
                                                 const nlohmann::json& extra_info)>;

// An exception raised inside user code (the Python function or the plugin), as opposed to a setup error.
class RewardFunctionError : public Error {
 public:
  using Error::Error;
};

// default_compute_score for the manager: a non-string ground truth is an error naming its JSON type. With a
// sandbox client (reward.sandbox_fusion.url), the code data sources are scored by that service.
ComputeScoreFn default_score_function(std::shared_ptr<const SandboxFusionClient> sandbox = nullptr);

// Limits on each call of user code.
struct UserCodeLimits {
  double timeout_s = 300;                                      // seconds per call; <= 0: no limit
  std::string timeout_key = "custom_reward_function.timeout";  // named by the timeout error
};

// One compute_score call of a batch, and what came of it.
struct ScoreCall {
  std::string data_source, solution_str;
  nlohmann::json ground_truth, extra_info;
};
struct ScoreOutcome {
  std::optional<ScoreResult> result;  // empty when the call failed
  std::string error;                  // then what the user code raised, or the time limit's message
  std::string raised;                 // Python's str() of the exception alone (verl's rate_limited records it)
  bool timed_out = false;
};

// The calls of a batch at once, as verl 0.9.1's reward loop awaits them:
//  - rate_limits null: an `async def` is awaited for every call concurrently on one event loop, each under
//    UserCodeLimits::timeout_s; a plain function is called in turn (the results are verl's; only the concurrency
//    of verl's thread pool differs, which the GIL takes from CPU-bound scorers anyway);
//  - rate_limits set (reward_manager=rate_limited): every call, async or plain (on a thread of its own), waits for
//    the request and token budgets, then for one of max_concurrent places, and runs under rate_limits->timeout.
// The outcomes are in the calls' order. A call that blocks the event loop is stopped by python::UserCallLimit once
// the batch runs past the longest time its limits allow.
using ComputeScoreBatchFn = std::function<std::vector<ScoreOutcome>(const std::vector<ScoreCall>& calls,
                                                                    const config::RewardRateLimits* rate_limits)>;

// default_score_function for a batch: verl 0.9.1 scores a batch in reward.num_workers reward-loop workers at once;
// here the calls whose scorer runs code (prime_code: seconds each, waiting on its Python processes; sandbox fusion:
// waiting on the service) run in up to num_workers threads, the others in turn. Outcomes in the calls' order; an
// error names its row.
ComputeScoreBatchFn default_score_batch(int64_t num_workers,
                                        std::shared_ptr<const SandboxFusionClient> sandbox = nullptr);

// custom_reward_function loaded: `score` for one call (an async def runs alone on the event loop), `score_batch`
// for a batch (set for Python files; a plugin has only `score`). Both reject non-finite scores.
struct RewardFunction {
  ComputeScoreFn score;
  ComputeScoreBatchFn score_batch;
};

// Loads custom_reward_function.path / .name with reward_kwargs (a JSON object). Errors (one line, naming path
// and name): missing file, a Python file that fails to import, no such function / exported symbol, a
// reward_kwargs that is not an object. The function returned enforces `limits` and rejects non-finite scores.
RewardFunction load_reward_function(const std::string& path, const std::string& name,
                                    const nlohmann::json& reward_kwargs, const UserCodeLimits& limits = {});
// load_reward_function(...).score
ComputeScoreFn load_custom_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits = {});

// The two ways, used by load_reward_function (exposed for tests).
RewardFunction load_python_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits = {});
ComputeScoreFn load_plugin_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits = {});

// Python's str() of a ScoreResult value ("True", "None", "1.0", text as is), for verl's "[key] value" lines.
std::string python_str(const ExtraValue& value);
// Python's str() of a float: "1.0", "0.5", "1e-07", "inf", "nan".
std::string python_float_str(double value);

}  // namespace verl::reward
