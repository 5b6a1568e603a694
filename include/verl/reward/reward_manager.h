// Reward managers: verl 0.9.1's reward-loop managers (verl/experimental/reward_loop/reward_manager/), which its
// trainer uses for every rule or function reward. A manager turns a generated batch into token-level rewards: for
// each row it decodes the valid response (its length from attention_mask) without special tokens, calls
// compute_score(data_source, solution_str, ground_truth, extra_info) and puts the score on the last valid response
// token.
//
//   auto manager = verl::reward::load_reward_manager(config, tokenizer, /*num_examine=*/1);
//   verl::reward::RewardResult r = manager->compute(batch);   // r.reward_tensor [B, R] fp32
//
// reward_extra_info: a dict score gives every key of the dict ("score" included); a plain number gives "acc" (the
// score), so validation reports val-core/<data source>/acc/mean@N as verl 0.9.1 does.
//
// Managers (reward_model.reward_manager, verl 0.9.1: reward.reward_manager.name):
//   naive  NaiveRewardManager: as above; extra_info also gets the agent loop's turn_scores and tool_rewards ([] for
//          a single-turn rollout), raw_prompt when the batch holds it, num_turns and rollout_reward_scores.
//   dapo   DAPORewardManager: the sample's extra_info as is, plus DAPO's overlong buffer penalty, configured by
//          reward_model.reward_kwargs (or verl 0.9.1's reward.reward_kwargs) {max_resp_len, overlong_buffer_cfg:
//          {enable, len, penalty_factor, log}}.
//   gdpo   GDPORewardManager: extra_info gets trainer.experiment_name as "experiment_name".
//   rate_limited  RateLimitedRewardManager: calls under a concurrency, request and token budget (below).
// An `async def` compute_score is awaited, the calls of a batch concurrently, as verl's reward loop does.
//   digit_completion  DigitCompletionRewardManager: the dense token-level reward of verl's digit-completion e2e
//          run (tests/e2e/arithmetic_sequence/rl/main_trainer.py, reference spec §12), so GAE learns the toy
//          task from a random model; no compute_score, no custom_reward_function.
// compute_score is custom_reward_function.path/name when set (Python file or C ABI plugin, see
// reward/scorers/custom_reward_function.h), else default_compute_score. custom_reward_function.on_error
// (verl.cpp extension): "raise" (default) fails the step with the row index and data source of the sample whose
// user code raised; "zero" scores such samples 0 and logs one warning per compute() call.
// Beyond verl: num_examine samples per data source are printed (verl <= 0.8's managers did).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/protocol/data_proto.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::reward {

struct RewardResult {
  torch::Tensor reward_tensor;  // [B, R] fp32: the score on each row's last valid response token
  std::map<std::string, std::vector<nlohmann::json>> reward_extra_info;  // per-row values (dict scores)
};

class RewardManager {
 public:
  virtual ~RewardManager() = default;
  // Needs tensors prompts [B,P], responses [B,R], attention_mask [B,P+R] and non-tensor columns
  // reward_model ({"ground_truth": ...}), extra_info, and the data.reward_fn_key column (data_source).
  // If the batch holds "rm_scores" it is returned as the reward (verl's behaviour).
  virtual RewardResult compute(const protocol::DataProto& data) = 0;
};

// What a user-code error does to a sample (custom_reward_function.on_error).
enum class OnRewardError { kRaise, kZero };
OnRewardError parse_on_reward_error(const std::string& text);

// DAPO's overlong_buffer_cfg.
struct OverlongBufferConfig {
  bool enable = false;
  int64_t len = 0;
  double penalty_factor = 0.0;
  bool log = false;
};

struct RewardManagerOptions {
  int64_t num_examine = 0;                  // samples printed per data source and call
  std::string reward_fn_key = "data_source";
  OnRewardError on_error = OnRewardError::kRaise;
  std::string score_fn_name = "default_compute_score";  // for messages: "compute_score from 'file.py'"
  std::string experiment_name;                          // gdpo: trainer.experiment_name
  // The calls of a batch at once (a Python function: async defs run concurrently); empty: compute_score in turn.
  ComputeScoreBatchFn score_batch;
  std::optional<config::RewardRateLimits> rate_limits;  // rate_limited
  // dapo only
  std::optional<int64_t> max_resp_len;
  std::optional<OverlongBufferConfig> overlong_buffer;
};

// verl 0.9.1's NaiveRewardManager.
class NaiveRewardManager : public RewardManager {
 public:
  NaiveRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, ComputeScoreFn compute_score,
                     RewardManagerOptions options);
  RewardResult compute(const protocol::DataProto& data) override;

 protected:
  // The reward for a row from the score and the valid response length (dapo adds the overlong penalty).
  // `row_extra` receives the manager's own reward_extra_info entries for this row.
  virtual double shape_reward(double score, int64_t valid_response_length,
                              std::vector<std::pair<std::string, nlohmann::json>>& row_extra);
  // What the manager adds to row `row`'s extra_info before compute_score sees it.
  virtual void add_scorer_extra_info(const protocol::DataProto& data, size_t row, nlohmann::json& extra_info) const;
  // Every call of the batch, in order (options_.score_batch when set, else compute_score in turn, paced by
  // options_.rate_limits when set); an error that is not the user code's names the row.
  std::vector<ScoreOutcome> score_calls(const std::vector<ScoreCall>& calls,
                                        const std::vector<std::string>& data_sources);
  // A call that failed: on_error=raise ends the step with its row and data source; otherwise the row scores 0 and
  // this returns the failure's text for the batch's warning. `row_extra` takes the manager's own entries for the row.
  virtual std::string handle_failure(const ScoreOutcome& outcome, size_t row, const std::string& data_source,
                                     std::vector<std::pair<std::string, nlohmann::json>>& row_extra);
  // For the one warning of a batch with failures: "... scored 0 because the reward function <reason>".
  virtual std::string failure_reason() const { return "raised (custom_reward_function.on_error=zero)"; }

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  ComputeScoreFn compute_score_;
  RewardManagerOptions options_;
};

// verl 0.9.1's DAPORewardManager (overlong buffer penalty).
class DAPORewardManager : public NaiveRewardManager {
 public:
  DAPORewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, ComputeScoreFn compute_score,
                    RewardManagerOptions options);

 protected:
  double shape_reward(double score, int64_t valid_response_length,
                      std::vector<std::pair<std::string, nlohmann::json>>& row_extra) override;
  void add_scorer_extra_info(const protocol::DataProto& data, size_t row, nlohmann::json& extra_info) const override;
};

// verl 0.9.1's GDPORewardManager (the reward side of adv_estimator=gdpo): naive scoring, the experiment's name in
// extra_info.
class GDPORewardManager : public NaiveRewardManager {
 public:
  GDPORewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, ComputeScoreFn compute_score,
                    RewardManagerOptions options);

 protected:
  void add_scorer_extra_info(const protocol::DataProto& data, size_t row, nlohmann::json& extra_info) const override;
};

// verl 0.9.1's RateLimitedRewardManager (reward_manager=rate_limited), for reward functions that call an API: every
// call of a Python function waits for the request and token budgets (reward.max_rpm, max_tpm with
// estimated_tokens_per_request each), then for one of reward.max_concurrent places (default 1), and runs under
// reward.timeout (default 300 s); the built-in scorers and plugins run in turn. A call that raises or runs past the
// timeout scores 0 with reward_extra_info "error" (what it raised) or "timeout" (true) and "acc" 0.0;
// custom_reward_function.on_error does not apply. extra_info gets the agent loop's fields (no num_turns). verl
// shares the budget among every manager of a process; here among managers of the same settings (a run's training
// and validation managers).
class RateLimitedRewardManager : public NaiveRewardManager {
 public:
  RateLimitedRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, ComputeScoreFn compute_score,
                           RewardManagerOptions options);

 protected:
  void add_scorer_extra_info(const protocol::DataProto& data, size_t row, nlohmann::json& extra_info) const override;
  std::string handle_failure(const ScoreOutcome& outcome, size_t row, const std::string& data_source,
                             std::vector<std::pair<std::string, nlohmann::json>>& row_extra) override;
  std::string failure_reason() const override { return "failed or timed out (rate_limited scores such calls 0)"; }
};

// verl's digit-completion e2e reward function: every response token gets
// digit_completion_token_rewards(response, ground truth) (reward/scorers/digit_completion.h) times the response
// mask; reward_model.ground_truth is the completion or the task prompt ("a,b:max,k"). Token i takes the value
// of the decoded response's character i, as verl's char tokenizer makes them one-to-one.
class DigitCompletionRewardManager : public RewardManager {
 public:
  DigitCompletionRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, int64_t num_examine);
  RewardResult compute(const protocol::DataProto& data) override;

 private:
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  int64_t num_examine_;
};

// The reward_model.reward_manager names implemented here.
const std::vector<std::string>& supported_reward_managers();

// verl's load_reward_manager: reward_model.reward_manager (naive, dapo, gdpo, rate_limited, digit_completion) and
// custom_reward_function.
std::unique_ptr<RewardManager> load_reward_manager(const config::PPOConfig& config,
                                                   std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                   int64_t num_examine);

}  // namespace verl::reward
