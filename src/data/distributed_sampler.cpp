#include "verl/data/distributed_sampler.h"

#include <torch/torch.h>

#include "verl/common/error.h"

namespace verl::data {

std::vector<int64_t> distributed_sampler_indices(int64_t dataset_size, int64_t replicas, int64_t rank, bool shuffle,
                                                 int64_t seed, int64_t epoch) {
  VERL_ASSERT(dataset_size >= 0 && replicas > 0 && rank >= 0 && rank < replicas, "data",
              "distributed_sampler_indices: bad dataset size / replicas / rank");
  std::vector<int64_t> order(static_cast<size_t>(dataset_size));
  if (shuffle) {
    torch::Generator generator = at::detail::createCPUGenerator(static_cast<uint64_t>(seed + epoch));
    const torch::Tensor perm = torch::randperm(dataset_size, generator, torch::kInt64);
    std::copy(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + dataset_size, order.begin());
  } else {
    for (int64_t i = 0; i < dataset_size; ++i) order[static_cast<size_t>(i)] = i;
  }
  const int64_t total = dataset_size / replicas * replicas;  // drop_last: every rank gets the same count
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(total / replicas));
  for (int64_t i = rank; i < total; i += replicas) rows.push_back(order[static_cast<size_t>(i)]);
  return rows;
}

}  // namespace verl::data
