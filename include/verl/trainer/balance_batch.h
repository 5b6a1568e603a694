// verl's RayPPOTrainer._balance_batch: reorder a batch on the controller so that every data-parallel rank
// receives a similar number of tokens (dispatch chunks contiguously, so partition j lands on rank j).
//
//   L_i = attention_mask[i].sum()                 w_i = 24576 * L_i + L_i^2   (workers::sequence_workload)
//   partitions = Karmarkar-Karp(w, dp_size, equal_size=True)
//   each partition sorted by (w, index), then laid out part[::2] + reversed(part[1::2])  (small ones at the ends)
//   order = concatenation of the partitions
// Metrics (verl's log_seqlen_unbalance, prefix "global_seqlen"): {min,max,minmax_diff} of the token sums of
// the contiguous chunks before reordering, {balanced_min,balanced_max} of the partitions' sums, and mean =
// total tokens / dp_size.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace verl::trainer {

// (workloads, k_partitions, equal_size) -> row indices per partition (workers::get_seqlen_balanced_partitions).
using PartitionFn =
    std::function<std::vector<std::vector<int64_t>>(const std::vector<int64_t>&, int64_t, bool)>;

struct BalancePlan {
  std::vector<int64_t> order;              // new row i = old row order[i]
  std::map<std::string, double> metrics;   // global_seqlen/...
};

// seqlens: attention_mask row sums. `workload` maps a length to its cost (verl: 24576 * L + L * L).
BalancePlan plan_balanced_order(const std::vector<int64_t>& seqlens, int64_t dp_size, const PartitionFn& partition,
                                const std::function<int64_t(int64_t)>& workload,
                                const std::string& prefix = "global_seqlen");

// verl's log_seqlen_unbalance.
std::map<std::string, double> log_seqlen_unbalance(const std::vector<int64_t>& seqlens,
                                                   const std::vector<std::vector<int64_t>>& partitions,
                                                   const std::string& prefix);

}  // namespace verl::trainer
