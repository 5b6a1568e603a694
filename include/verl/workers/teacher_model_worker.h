// The teachers of verl 0.9.1's on-policy distillation (distillation.teacher_models, verl's Role.TeacherModel and
// teacher loop): frozen models that score the student's own tokens. verl asks a vLLM / SGLang server per teacher for
// the prompt log-probs of prompt + response at temperature 1; this worker runs the same forward natively, on the
// ranks of the actor's pool, and holds every teacher.
//   init_model                ONE_TO_ALL        loads each teacher's model_path (an HF causal LM folder)
//   compute_teacher_log_prob  DP_COMPUTE_PROTO  in: input_ids, attention_mask, position_ids [b, P+R], responses
//                                               [b, R] (+ the distillation.teacher_key column with several
//                                               teachers); out: teacher_logprobs [b, R] fp32, log p_teacher of
//                                               each response token (0 at padding); with loss_mode
//                                               forward_kl_topk (verl's prompt_logprobs=topk) teacher_logprobs
//                                               [b, R, k] fp32 and teacher_ids [b, R, k] int64, the teacher's k
//                                               most likely tokens at each response position, largest first
// Routing (verl's _resolve_teacher_key): one teacher scores every row; with several, a row goes to the teacher
// whose key equals the row's teacher_key value, and a value no teacher has is an error listing the keys.
// Weights in rollout.dtype (verl's teacher inference.dtype follows it): bf16 on a GPU and fp32 on the CPU unless set.
// Forwards hold at most the teacher's inference.max_num_batched_tokens tokens (vLLM's per-step budget; a longer
// sequence runs alone). A token the teacher's vocabulary lacks is an error naming the teacher's folder.
#pragma once

#include <memory>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/single_controller/worker.h"

namespace verl::workers {

class TeacherModelWorker : public single_controller::Worker {
 public:
  TeacherModelWorker(const single_controller::WorkerContext& context, std::shared_ptr<const config::PPOConfig> config);

  protocol::DataProto init_model(const protocol::DataProto& input);
  protocol::DataProto compute_teacher_log_prob(const protocol::DataProto& data);

 private:
  struct Scores {
    torch::Tensor log_probs;  // [b, R], or [b, R, k] with top-k
    torch::Tensor ids;        // [b, R, k] int64 with top-k, else undefined
  };
  // One teacher's scores for `rows` of the batch.
  Scores teacher_scores(size_t teacher, const protocol::DataProto& rows);
  int64_t top_k() const;  // 0 unless the loss reads the teacher's top-k

  std::shared_ptr<const config::PPOConfig> config_;
  torch::Device device_{torch::kCPU};
  std::vector<model::CausalLM> modules_;  // per config_->distillation.teachers
};

single_controller::WorkerFactory teacher_model_worker_factory(std::shared_ptr<const config::PPOConfig> config);

}  // namespace verl::workers
