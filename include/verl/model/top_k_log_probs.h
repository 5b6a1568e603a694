// The next-token distribution beyond the sampled token, for verl's forward_kl_topk distillation
// (verl/trainer/distillation/fsdp/losses.py): the teacher's k most likely tokens and their log-probs at each
// response position (what verl asks vLLM for as prompt_logprobs=k), and the student's log-probs at those same
// tokens, with autograd, so the loss moves the logits of tokens the student did not sample.
//   z = float(logits) / T,  lse = logsumexp(z),  log p(v) = z[v] - lse
// One fp32 copy of the [rows, vocabulary] logits is kept for backward, as verl's (unchunked) F.log_softmax path.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace verl::model {

struct TopKQuery {
  int64_t top_k = 0;         // > 0: each position's top_k largest log-probs and their token ids (no autograd)
  torch::Tensor gather_ids;  // [..., K] int64 when defined: each position's log-probs of these tokens (autograd)
  bool active() const { return top_k > 0 || gather_ids.defined(); }
};

struct TopKLogProbs {
  torch::Tensor top_k_log_probs;     // [..., top_k] fp32, largest first
  torch::Tensor top_k_ids;           // [..., top_k] int64
  torch::Tensor gathered_log_probs;  // [..., K] fp32, at query.gather_ids
};

// logits [..., V] over the whole vocabulary (any float dtype); the query's gather_ids shaped [..., K] like them.
TopKLogProbs top_k_log_probs(const torch::Tensor& logits, double temperature, const TopKQuery& query);

}  // namespace verl::model
