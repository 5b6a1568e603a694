#include "verl/workers/micro_batches.h"

#include "verl/common/error.h"
#include "verl/model/fully_sharded_model.h"

namespace verl::workers {

torch::Tensor MicroBatches::restore(const std::vector<torch::Tensor>& outputs) const {
  VERL_ASSERT(!outputs.empty(), "workers", "no micro-batch outputs to restore");
  torch::Tensor all = torch::cat(outputs, 0);
  if (order.empty()) return all;
  VERL_ASSERT(static_cast<int64_t>(order.size()) == all.size(0), "workers", "micro-batch order covers ", order.size(),
              " rows, outputs have ", all.size(0));
  // all[i] belongs at row order[i].
  torch::Tensor index = torch::tensor(order, torch::kInt64).to(all.device());
  torch::Tensor restored = torch::empty_like(all);
  restored.index_copy_(0, index, all);
  return restored;
}

MicroBatches fixed_micro_batches(const protocol::DataProto& data, int64_t micro_batch_size, const std::string& what) {
  VERL_CHECK(micro_batch_size > 0, "workers", what, " must be set to a positive number of rows (got ",
             micro_batch_size, ") when use_dynamic_bsz is false");
  MicroBatches out;
  out.parts = data.split(micro_batch_size);
  return out;
}

MicroBatchPlan micro_batch_plan(const torch::Tensor& attention_mask, int64_t max_token_len,
                                const model::FullyShardedModel* sharded, const DataParallelGroup* group) {
  MicroBatchPlan plan = rearrange_micro_batches(attention_mask, max_token_len);
  if (sharded == nullptr && group == nullptr) return plan;
  int64_t count = static_cast<int64_t>(plan.micro_batches.size());
  if (sharded != nullptr) count = sharded->max_over_group(count);
  if (group != nullptr) count = group->max(count);
  VERL_CHECK(count <= attention_mask.size(0), "workers", "use_dynamic_bsz: another data-parallel rank needs ", count,
             " micro-batches, more than this rank's ", attention_mask.size(0), " rows");
  if (count == static_cast<int64_t>(plan.micro_batches.size())) return plan;
  return rearrange_micro_batches(attention_mask, max_token_len, count);
}

MicroBatches dynamic_micro_batches(const protocol::DataProto& data, int64_t max_token_len, const std::string& what,
                                   const model::FullyShardedModel* sharded, const DataParallelGroup* group) {
  VERL_CHECK(max_token_len > 0, "workers", what, " must be > 0 with use_dynamic_bsz, got ", max_token_len);
  MicroBatchPlan plan = micro_batch_plan(data.tensor("attention_mask"), max_token_len, sharded, group);
  MicroBatches out;
  for (const auto& rows : plan.micro_batches) {
    out.parts.push_back(data.index(rows));
    out.order.insert(out.order.end(), rows.begin(), rows.end());
  }
  VERL_ASSERT(static_cast<int64_t>(out.order.size()) == data.size(), "workers", "dynamic micro-batches cover ",
              out.order.size(), " of ", data.size(), " rows");
  return out;
}

}  // namespace verl::workers
