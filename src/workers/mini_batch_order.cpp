#include "verl/workers/mini_batch_order.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>

#include "verl/common/error.h"

namespace verl::workers {

std::vector<std::vector<int64_t>> mini_batch_rows(int64_t rows, int64_t mini_batch_size, int64_t epochs,
                                                  const MiniBatchOrderOptions& options) {
  VERL_CHECK(mini_batch_size > 0, "worker", "the mini-batch size must be positive, got ", mini_batch_size);
  VERL_CHECK(!options.shuffle || rows % mini_batch_size == 0, "worker", "the update's ", rows,
             " rows per rank are not a whole number of mini-batches of ", mini_batch_size,
             " (ppo_mini_batch_size x rollout.n / data-parallel ranks), which shuffle needs");
  std::vector<std::vector<int64_t>> out;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(options.seed));
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    std::vector<int64_t> order(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) order[static_cast<size_t>(i)] = i;
    if (options.shuffle && rows > 0) {
      torch::empty({}, torch::kInt64).random_(generator);  // the DataLoader iterator's _base_seed
      const torch::Tensor permutation = torch::randperm(rows, generator, torch::kInt64);
      torch::randperm(rows, generator, torch::kInt64);  // RandomSampler's trailing randperm(n)[:0]
      const int64_t* p = permutation.data_ptr<int64_t>();
      order.assign(p, p + rows);
    }
    for (int64_t start = 0; start < rows; start += mini_batch_size) {
      out.emplace_back(order.begin() + start, order.begin() + std::min(rows, start + mini_batch_size));
    }
  }
  return out;
}

protocol::DataProto take_rows(const protocol::DataProto& data, const std::vector<int64_t>& rows) {
  bool consecutive = true;
  for (size_t i = 1; i < rows.size() && consecutive; ++i) consecutive = rows[i] == rows[i - 1] + 1;
  if (consecutive && !rows.empty()) return data.slice(rows.front(), rows.back() + 1);
  return data.index(rows);
}

}  // namespace verl::workers
