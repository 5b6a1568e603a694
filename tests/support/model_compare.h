// Test helpers shared by the tests that check a distributed model (tensor-parallel slices, ZeRO-3 shards) against
// the whole model: the comparison, a batch of verl's layout and a loss that reaches every parameter.
#pragma once

#include <torch/torch.h>

#include "tensor_compare.h"
#include "verl/model/transformer.h"

namespace verl::test {

// input_ids / attention_mask / position_ids [B, P+R] and responses [B, R].
struct ModelBatch {
  torch::Tensor input_ids, attention_mask, position_ids, responses;
};

// A ragged left-padded batch (P = 5, R = 4), different per seed, on the CPU. Draws from the global RNG: make it on
// one thread.
inline ModelBatch ragged_model_batch(int64_t vocab, int seed) {
  torch::manual_seed(seed);
  ModelBatch b;
  b.input_ids = torch::randint(0, vocab - 2, {3, 9}, torch::kInt64);
  b.attention_mask = torch::ones({3, 9}, torch::kInt64);
  b.attention_mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
  b.attention_mask.index_put_({2, torch::indexing::Slice(0, 1 + seed % 4)}, 0);
  b.position_ids = model::position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, 5, 4);
  return b;
}

// Log-probs (temperature 0.7) and entropy of the responses weighted by fixed numbers, in fp64, on their device.
inline torch::Tensor weighted_log_prob_loss(model::CausalLM& m, const ModelBatch& b) {
  auto out = model::response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true);
  auto w = torch::linspace(-1.0, 1.0, out.log_probs.numel(),
                           torch::TensorOptions().dtype(torch::kFloat64).device(out.log_probs.device()))
               .view(out.log_probs.sizes());
  return (out.log_probs.to(torch::kFloat64) * w).sum() + 0.3 * out.entropy.to(torch::kFloat64).sum();
}

}  // namespace verl::test
