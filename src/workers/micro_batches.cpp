#include "verl/workers/micro_batches.h"

#include "verl/common/error.h"

#if __has_include("verl/workers/seqlen_balancing.h")
#include "verl/workers/seqlen_balancing.h"
#define VERL_HAVE_SEQLEN_BALANCING 1
#else
#define VERL_HAVE_SEQLEN_BALANCING 0
#endif

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

MicroBatches dynamic_micro_batches(const protocol::DataProto& data, int64_t max_token_len, const std::string& what) {
#if VERL_HAVE_SEQLEN_BALANCING
  VERL_CHECK(max_token_len > 0, "workers", what, " must be > 0 with use_dynamic_bsz, got ", max_token_len);
  MicroBatchPlan plan = rearrange_micro_batches(data.tensor("attention_mask"), max_token_len);
  MicroBatches out;
  for (const auto& rows : plan.micro_batches) {
    out.parts.push_back(data.index(rows));
    out.order.insert(out.order.end(), rows.begin(), rows.end());
  }
  VERL_ASSERT(static_cast<int64_t>(out.order.size()) == data.size(), "workers", "dynamic micro-batches cover ",
              out.order.size(), " of ", data.size(), " rows");
  return out;
#else
  (void)data;
  (void)max_token_len;
  VERL_FAIL("workers", "use_dynamic_bsz (", what,
            ") needs the sequence-length balancing module (workers/seqlen_balancing.h), which this build lacks; "
            "set use_dynamic_bsz=false");
#endif
}

}  // namespace verl::workers
