// verl 0.9.1's global-batch loss normalisation (workers/utils/losses.py with the engines' forward_backward_batch):
// each micro-batch's loss is aggregated against its whole mini-batch on every data-parallel rank, so the summed
// micro-batch gradients, averaged over the ranks, are the gradient of the mini-batch's loss whatever the
// micro-batch split (fixed or dynamic) and the number of ranks:
//   token-mean          sum(L m) / batch_num_tokens * dp_size   batch_num_tokens = the mini-batch's response tokens
//                                                               summed over the data-parallel ranks
//   token-sum           sum(L m) * dp_size
//   seq-mean-*          sum_i seq_i / global_batch_size * dp_size   global_batch_size = mini-batch rows x dp_size
// (algo::agg_loss applies them.) The loss metrics are then sums over a mini-batch's micro-batches.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "verl/algo/core_algos.h"
#include "verl/model/flops_counter.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

// The ranks a worker's gradients are averaged over, seen as verl's engine sees its data-parallel group: every
// `copies` ranks of it (the Ulysses or context-parallel parts of each sequence) hold the same rows and compute the
// same loss, so the distinct data ranks number comm size / copies.
class DataParallelGroup {
 public:
  DataParallelGroup() = default;  // this rank alone
  // `comm` null: this rank alone. `copies` must divide the comm's size.
  DataParallelGroup(std::shared_ptr<parallel::Comm> comm, int64_t copies);

  int64_t size() const;              // distinct data ranks (verl's dp_size)
  double sum(double local) const;    // sum of `local` over the distinct data ranks; collective
  int64_t max(int64_t local) const;  // largest `local` over the group; collective

 private:
  std::shared_ptr<parallel::Comm> comm_;
  int64_t copies_ = 1;
};

// verl's global_batch_info for one mini-batch: `response_mask` [b, R] this rank's rows of it, `rows_per_rank` the
// configured mini-batch rows per rank (verl's ppo_mini_batch_size x n / dp), `loss_scale_factor` the
// seq-mean-token-sum-norm divisor. Collective over `group`.
algo::AggLossOptions global_batch_info(const DataParallelGroup& group, const torch::Tensor& response_mask,
                                       int64_t rows_per_rank, std::optional<double> loss_scale_factor);

// The sequence lengths of a mini-batch on every data-parallel rank (`attention_mask` [b, T] this rank's rows), as
// verl's MFU estimate reads them. Collective over `group`.
model::SequenceLengthSums global_sequence_lengths(const DataParallelGroup& group, const torch::Tensor& attention_mask);

}  // namespace verl::workers
