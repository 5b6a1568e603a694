// verl's legacy RewardModelWorker (fsdp_workers.py, spec §6.5), used when reward_model.enable is true:
//   init_model        ONE_TO_ALL        loads reward_model.model.path, a model with a trained value head
//                                       (score.weight; AutoModelForTokenClassification with num_labels=1)
//   compute_rm_score  DP_COMPUTE_PROTO  in: input_ids, attention_mask, position_ids [b, P+R], responses [b, R]
//                                       (+ raw_prompt when switching templates); out: rm_scores [b, R] fp32,
//                                       the row's score on its last valid token, 0 elsewhere
// Inputs: when reward_model.model.input_tokenizer is null the policy's own tokens are scored. When it is set
// (verl's default: the actor's model path) verl's _switch_chat_template runs: each response is decoded with
// the input tokenizer (eos text removed), appended to raw_prompt as the assistant turn, rendered with the
// reward model's own chat template, encoded without special tokens, right-padded / right-truncated to
// reward_model.max_length (default P+R). The score is placed on the policy layout's last valid token.
// Micro-batches of reward_model.micro_batch_size_per_gpu rows, or token budgets with use_dynamic_bsz.
#pragma once

#include <memory>
#include <optional>

#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/single_controller/worker.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::workers {

class RewardModelWorker : public single_controller::Worker {
 public:
  RewardModelWorker(const single_controller::WorkerContext& context, std::shared_ptr<const config::PPOConfig> config);

  protocol::DataProto init_model(const protocol::DataProto& input);
  protocol::DataProto compute_rm_score(const protocol::DataProto& data);

  // The reward model's inputs for a policy batch: the batch's own tensors, or the re-encoded chat.
  protocol::DataProto reward_model_inputs(const protocol::DataProto& data) const;
  model::CausalLM& module();  // after init_model

 private:
  protocol::DataProto switch_chat_template(const protocol::DataProto& data) const;

  std::shared_ptr<const config::PPOConfig> config_;
  std::string model_path_;
  std::unique_ptr<model::CausalLM> module_;
  std::unique_ptr<tokenizer::Tokenizer> input_tokenizer_;  // set when switching chat templates
  std::unique_ptr<tokenizer::Tokenizer> rm_tokenizer_;
  int64_t pad_token_id_ = 0;  // the RM tokenizer's pad id (eos when it has none, as verl sets it)
};

single_controller::WorkerFactory reward_model_worker_factory(std::shared_ptr<const config::PPOConfig> config);

}  // namespace verl::workers
