#include "verl/workers/global_batch.h"

#include "verl/common/error.h"

namespace verl::workers {

DataParallelGroup::DataParallelGroup(std::shared_ptr<parallel::Comm> comm, int64_t copies)
    : comm_(std::move(comm)), copies_(comm_ ? copies : 1) {
  const int64_t ranks = comm_ ? comm_->size() : 1;
  VERL_CHECK(copies_ > 0 && ranks % copies_ == 0, "workers", "a data-parallel group of ", ranks, " ranks cannot hold ",
             copies_, " copies of each row");
}

int64_t DataParallelGroup::size() const { return comm_ ? comm_->size() / copies_ : 1; }

double DataParallelGroup::sum(double local) const {
  if (!comm_ || comm_->size() == 1) return local;
  torch::Tensor t = torch::tensor({local}, torch::kFloat64);
  comm_->all_reduce(t, parallel::ReduceOp::Sum);
  // Each row was counted once per copy.
  return t.item<double>() / static_cast<double>(copies_);
}

int64_t DataParallelGroup::max(int64_t local) const {
  if (!comm_ || comm_->size() == 1) return local;
  torch::Tensor t = torch::tensor({static_cast<double>(local)}, torch::kFloat64);
  comm_->all_reduce(t, parallel::ReduceOp::Max);
  return static_cast<int64_t>(t.item<double>());
}

algo::AggLossOptions global_batch_info(const DataParallelGroup& group, const torch::Tensor& response_mask,
                                       int64_t rows_per_rank, std::optional<double> loss_scale_factor) {
  algo::AggLossOptions info;
  info.dp_size = static_cast<double>(group.size());
  info.batch_num_tokens = group.sum(response_mask.sum().item<double>());
  info.global_batch_size = static_cast<double>(rows_per_rank) * info.dp_size;
  info.loss_scale_factor = loss_scale_factor;
  return info;
}

model::SequenceLengthSums global_sequence_lengths(const DataParallelGroup& group, const torch::Tensor& attention_mask) {
  model::SequenceLengthSums sums = model::SequenceLengthSums::of_attention_mask(attention_mask);
  sums.tokens = group.sum(sums.tokens);
  sums.squared_tokens = group.sum(sums.squared_tokens);
  return sums;
}

}  // namespace verl::workers
