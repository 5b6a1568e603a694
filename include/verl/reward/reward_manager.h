// Reward managers: verl's verl/workers/reward_manager/ (reference spec §6.1). A manager turns a generated
// batch into token-level rewards: for each row it decodes the valid prompt (left-padded) and the valid response
// (its length from attention_mask) without special tokens, calls compute_score(data_source, solution_str,
// ground_truth, extra_info) and puts the score on the last valid response token.
//
//   auto manager = verl::reward::load_reward_manager(config, tokenizer, /*num_examine=*/1);
//   verl::reward::RewardResult r = manager->compute(batch);   // r.reward_tensor [B, R] fp32
//
// Managers (reward_model.reward_manager):
//   naive  NaiveRewardManager: as above; a dict score puts result["score"] in the tensor and every key of the
//          dict in reward_extra_info.
//   dapo   DAPORewardManager: naive plus the eos text stripped from the response and DAPO's overlong buffer
//          penalty, configured by reward_model.reward_kwargs {max_resp_len, overlong_buffer_cfg: {enable, len,
//          penalty_factor, log}} (verl's +reward_model.reward_kwargs.* overrides).
//   digit_completion  DigitCompletionRewardManager: the dense token-level reward of verl's digit-completion e2e
//          run (tests/e2e/arithmetic_sequence/rl/main_trainer.py, reference spec §12), so GAE learns the toy
//          task from a random model; no compute_score, no custom_reward_function.
// compute_score is custom_reward_function.path/name when set (Python file or C ABI plugin, see
// reward/scorers/custom_reward_function.h), else default_compute_score. custom_reward_function.on_error
// (verl.cpp extension): "raise" (default) fails the step with the row index and data source of the sample whose
// user code raised; "zero" scores such samples 0 and logs one warning per compute() call.
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
  // dapo only
  std::optional<int64_t> max_resp_len;
  std::optional<OverlongBufferConfig> overlong_buffer;
};

// verl's NaiveRewardManager.
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
  // The decoded response as the scorer sees it (dapo strips a trailing eos text).
  virtual std::string prepare_response(std::string response) const { return response; }

  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  ComputeScoreFn compute_score_;
  RewardManagerOptions options_;
};

// verl's DAPORewardManager (overlong buffer penalty).
class DAPORewardManager : public NaiveRewardManager {
 public:
  DAPORewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer, ComputeScoreFn compute_score,
                    RewardManagerOptions options);

 protected:
  double shape_reward(double score, int64_t valid_response_length,
                      std::vector<std::pair<std::string, nlohmann::json>>& row_extra) override;
  std::string prepare_response(std::string response) const override;
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

// verl's load_reward_manager: reward_model.reward_manager (naive, dapo, digit_completion) + custom_reward_function.
std::unique_ptr<RewardManager> load_reward_manager(const config::PPOConfig& config,
                                                   std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                   int64_t num_examine);

}  // namespace verl::reward
