// The response tokens' log-probabilities and the entropy of softmax(logits / temperature) in one autograd node
// that keeps only the logits for backward (in their own dtype) and works through the rows in chunks of about
// 256 MB of fp32. The unfused form (log_softmax, softmax, their products) keeps five or six fp32 copies of a
// [rows, vocabulary] tensor alive for backward: ~7 GB for 16 sequences of 128 tokens over Qwen's 151,936-token
// vocabulary, the largest share of a GPU training step's peak memory. Numbers are verl's (fp32 statistics):
//   z = float(logits) / T,  lse = logsumexp(z),  log_prob = z[token] - lse,  entropy = lse - sum softmax(z) z
// and the gradients are the analytic ones: d log_prob / dz = onehot - p, d entropy / dz = -p (log p + H).
#pragma once

#include <torch/torch.h>

namespace verl::model {

struct FusedLogProbs {
  torch::Tensor log_probs;  // [...] fp32
  torch::Tensor entropy;    // [...] fp32, undefined unless requested
};

// logits [..., V] (any float dtype, e.g. bf16 under autocast), tokens [...] int64 on the same device.
// rows_per_chunk: 0 picks ~256 MB of fp32 per chunk (tests choose a small one to cross chunk edges).
FusedLogProbs fused_log_probs(const torch::Tensor& logits, const torch::Tensor& tokens, double temperature,
                              bool with_entropy, int64_t rows_per_chunk = 0);

}  // namespace verl::model
