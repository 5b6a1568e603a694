// Sequence-length balancing (verl/utils/seqlen_balancing.py): Karmarkar-Karp (largest differencing)
// partitioning of per-row workloads, used by the trainer to balance rows across data-parallel ranks
// (equal_size) and by the workers to form dynamic-batch-size micro-batches under a token budget.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace verl::workers {

// Karmarkar-Karp partition of workloads into k parts (equal_size: equal counts); returns row indices per
// part, each part sorted ascending. Tie-breaking follows verl (a binary min-heap ordered by largest spread,
// then largest first set), so the partitions are the same as verl's. Errors: k < 1, fewer items than k,
// equal_size with a count not divisible by k.
std::vector<std::vector<int64_t>> get_seqlen_balanced_partitions(const std::vector<int64_t>& seqlens, int64_t k,
                                                                 bool equal_size);

// verl's workload for a sequence length: 24576 * L + L * L
int64_t sequence_workload(int64_t length);

// rearrange_micro_batches for dynamic bsz: micro-batches (row indices) under max_token_len, and the inverse
// permutation. L_i = attention_mask[i].sum(); count = min(B, ceil(sum L / max_token_len)) (at least
// `min_num_micro_batches` when given); Karmarkar-Karp over the workloads (equal_size false); then verl's
// ordering: micro-batches sorted by (total workload, first index) descending and rearranged as
// order[::2][::-1] + order[1::2]. restore_order[j] is the position, in the concatenation of the
// micro-batches' rows, of original row j: cat(outputs).index_select(0, restore_order) is in input order.
// Errors: max_token_len smaller than the padded sequence length (attention_mask.size(1)).
struct MicroBatchPlan {
  std::vector<std::vector<int64_t>> micro_batches;
  std::vector<int64_t> restore_order;
};
MicroBatchPlan rearrange_micro_batches(const torch::Tensor& attention_mask, int64_t max_token_len,
                                       int64_t min_num_micro_batches = 1);

}  // namespace verl::workers
