// Micro-batches of a DataProto for the workers' forward/backward passes: fixed row counts (verl's
// data.split(micro_batch_size)) or token budgets (use_dynamic_bsz: verl's rearrange_micro_batches, rows
// regrouped by workload, with the order restored afterwards).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "verl/protocol/data_proto.h"
#include "verl/workers/global_batch.h"
#include "verl/workers/seqlen_balancing.h"

namespace verl::model {
class FullyShardedModel;
}

namespace verl::workers {

struct MicroBatches {
  std::vector<protocol::DataProto> parts;
  // Row i of the concatenated per-part outputs is input row order[i]; empty when the parts are in order.
  std::vector<int64_t> order;
  // Per-part outputs concatenated along dim 0 and put back in input row order.
  torch::Tensor restore(const std::vector<torch::Tensor>& outputs) const;
};

// Consecutive parts of `micro_batch_size` rows (the last may be shorter). `what` names the config key in
// errors (e.g. "critic.forward_micro_batch_size_per_gpu").
MicroBatches fixed_micro_batches(const protocol::DataProto& data, int64_t micro_batch_size, const std::string& what);

// rearrange_micro_batches, except that every rank gets the largest count (verl's same_micro_num_in_dp) of the ZeRO-3
// shard group (`sharded` set: its collectives run per micro-batch) and of `group` (set for updates: verl 0.9.1's
// engine equalises the count over the data-parallel ranks). Collective then.
MicroBatchPlan micro_batch_plan(const torch::Tensor& attention_mask, int64_t max_token_len,
                                const model::FullyShardedModel* sharded = nullptr,
                                const DataParallelGroup* group = nullptr);

// Token-budget parts: at most `max_token_len` attention-mask tokens each (verl's rearrange_micro_batches, through
// micro_batch_plan). `what` names the config key in errors.
MicroBatches dynamic_micro_batches(const protocol::DataProto& data, int64_t max_token_len, const std::string& what,
                                   const model::FullyShardedModel* sharded = nullptr,
                                   const DataParallelGroup* group = nullptr);

}  // namespace verl::workers
