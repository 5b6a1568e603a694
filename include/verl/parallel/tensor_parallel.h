// Tensor parallelism (the megatron strategy's layers, Megatron-LM's tensor_parallel) over a Comm: the ranks of
// one tensor-parallel group each hold a slice of a weight, and these functions put the slices together with
// autograd, so a loss computed the same on every rank backpropagates into each rank's slice.
//
//   copy_to_tp_region(x)              forward: x;                 backward: all-reduce of the gradient
//   reduce_from_tp_region(x)          forward: all-reduce of x;   backward: the gradient
//   gather_from_tp_region(x)          forward: all-gather along the last dim; backward: this rank's slice
//   column_parallel_linear            y_r = x W_r^T + b_r with W split by output rows (q/k/v, gate, up)
//   row_parallel_linear               y = sum_r x_r W_r^T + b with W split by input columns (o, down)
//   vocab_parallel_embedding          the embedding lookup with the table split by vocabulary rows: each rank
//                                     looks up the ids it holds, the others give zeros, and the sum is the row
//   vocab_parallel_log_probs          log p(label) and entropy from logits split along the vocabulary (the
//                                     LM head's output): global max, sum of exp and the label's logit are
//                                     reduced across ranks; no rank holds the full vocabulary
//   vocab_parallel_logsumexp          log sum exp over the whole vocabulary of logits split along it
//
// Megatron's sequence parallelism (megatron.sequence_parallel): outside the tensor-parallel regions (norms,
// residual adds) each rank holds one chunk of the tokens, ceil(n / T) of them (the last chunks padded with zeros to
// that length), instead of all n on every rank; the regions' all-reduce becomes a reduce-scatter and their input an
// all-gather (Megatron-LM's tensor_parallel/mappings.py). Chunks are along `dim`:
//   scatter_to_sequence_parallel_region(x)        forward: this rank's chunk of x; backward: all-gather, back to n
//   gather_from_sequence_parallel_region(x, sum)  forward: every chunk, T * ceil(n / T) long (the caller narrows to
//                                                 n); backward: the sum over the ranks of their gradients' chunk
//                                                 (`sum_gradient`: the input of a column-parallel region, whose
//                                                 ranks each read part of the output) or this rank's chunk (the
//                                                 gathered tensor is used the same on every rank)
//   reduce_scatter_to_sequence_parallel_region(x) forward: this rank's chunk of the sum over the ranks of x (a
//                                                 row-parallel region's partial output); backward: all-gather
//
// Reductions are the Comm's (deterministic, in rank order). The model's layers use them under the megatron strategy
// (model/tensor_parallel_model.h).
#pragma once

#include <torch/torch.h>

#include <memory>

#include "verl/parallel/comm.h"

namespace verl::parallel {

torch::Tensor copy_to_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm);
torch::Tensor reduce_from_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm);
torch::Tensor gather_from_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm);

// This rank's part of a full tensor split into comm.size() equal parts along `dim` (an error when it does not
// divide).
torch::Tensor tp_shard(const torch::Tensor& full, int64_t dim, const Comm& comm);

// weight_shard: [out / tp, in]; bias_shard: [out / tp] or undefined. Returns [..., out / tp], or [..., out]
// with gather_output.
torch::Tensor column_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight_shard,
                                     const torch::Tensor& bias_shard, const std::shared_ptr<Comm>& comm,
                                     bool gather_output = false);
// x_shard: [..., in / tp] (a column-parallel output); weight_shard: [out, in / tp]; bias: [out] (whole, added
// once after the reduction) or undefined. Returns [..., out] on every rank.
torch::Tensor row_parallel_linear(const torch::Tensor& x_shard, const torch::Tensor& weight_shard,
                                  const torch::Tensor& bias, const std::shared_ptr<Comm>& comm);

// Chunks of ceil(n / comm.size()) along `dim` (see above).
torch::Tensor scatter_to_sequence_parallel_region(const torch::Tensor& x, int64_t dim,
                                                  const std::shared_ptr<Comm>& comm);
torch::Tensor gather_from_sequence_parallel_region(const torch::Tensor& chunk, int64_t dim,
                                                   const std::shared_ptr<Comm>& comm, bool sum_gradient);
torch::Tensor reduce_scatter_to_sequence_parallel_region(const torch::Tensor& x, int64_t dim,
                                                         const std::shared_ptr<Comm>& comm);

// x_shard as row_parallel_linear's; the sum reduce-scattered along `seq_dim` (Megatron's sequence parallelism):
// [..., out] for this rank's chunk of the tokens, the bias added to it (its gradient summed over the group, since
// each rank adds it to its own tokens only).
torch::Tensor row_parallel_linear_to_sequence_chunks(const torch::Tensor& x_shard, const torch::Tensor& weight_shard,
                                                     const torch::Tensor& bias, int64_t seq_dim,
                                                     const std::shared_ptr<Comm>& comm);

// weight_shard: [V / tp, H], rank r holding rows [r V/tp, (r+1) V/tp); ids: any shape, whole-vocabulary ids.
// Returns [..., H] on every rank; with `scatter_dim` >= 0 (Megatron's sequence parallelism), this rank's chunk of the
// ids' dimension `scatter_dim` (reduce-scattered).
torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight_shard,
                                       const std::shared_ptr<Comm>& comm, int64_t scatter_dim = -1);

struct VocabParallelLogProbs {
  torch::Tensor log_probs;  // [...]: log softmax(logits)[label], fp32
  torch::Tensor entropy;    // [...]: -sum_v p_v log p_v, fp32
};
// logits_shard: [..., V / tp], rank r holding vocabulary ids [r V/tp, (r+1) V/tp); labels: [...] int64 ids of
// the whole vocabulary.
VocabParallelLogProbs vocab_parallel_log_probs(const torch::Tensor& logits_shard, const torch::Tensor& labels,
                                               const std::shared_ptr<Comm>& comm);
// log sum_v exp(logits_v) over the whole vocabulary [...], fp32, from this rank's slice [..., V / tp] (autograd:
// each rank's slice gets its softmax share).
torch::Tensor vocab_parallel_logsumexp(const torch::Tensor& logits_shard, const std::shared_ptr<Comm>& comm);

}  // namespace verl::parallel
