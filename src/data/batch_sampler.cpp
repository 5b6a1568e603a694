#include "verl/data/batch_sampler.h"

#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <numeric>

#include "verl/common/error.h"

namespace verl::data {

BatchSampler::BatchSampler(BatchSamplerOptions options) : options_(options) {
  VERL_CHECK(options_.dataset_size >= 0, "dataloader", "dataset size must be >= 0");
  VERL_CHECK(options_.batch_size > 0, "dataloader", "batch size must be > 0, got ", options_.batch_size);
  VERL_CHECK(!options_.drop_last || options_.dataset_size >= options_.batch_size, "dataloader", "the dataset has ",
             options_.dataset_size, " rows, fewer than one batch of ", options_.batch_size,
             " (drop_last leaves no batch); lower data.train_batch_size or add data");
}

int64_t BatchSampler::batches_per_epoch() const {
  const int64_t full = options_.dataset_size / options_.batch_size;
  const bool partial = options_.dataset_size % options_.batch_size != 0;
  return full + ((partial && !options_.drop_last) ? 1 : 0);
}

std::vector<int64_t> BatchSampler::epoch_order(int64_t epoch) const {
  const int64_t n = options_.dataset_size;
  if (!options_.shuffle) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  // PyTorch's RandomSampler draws randperm(n) for the epoch and then one more randperm whose slice
  // [:num_samples % n] is empty: two draws per fully iterated epoch, the first one used.
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed);
  torch::Tensor perm;
  for (int64_t e = 0; e <= epoch; ++e) {
    perm = torch::randperm(n, generator, torch::kInt64);
    torch::randperm(n, generator, torch::kInt64);
  }
  return std::vector<int64_t>(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
}

std::vector<std::vector<int64_t>> BatchSampler::epoch_batches(int64_t epoch) const {
  VERL_CHECK(epoch >= 0, "dataloader", "epoch must be >= 0");
  if (epoch == cached_epoch_) return cached_batches_;
  std::vector<int64_t> order = epoch_order(epoch);
  std::vector<std::vector<int64_t>> batches;
  for (int64_t b = 0; b < batches_per_epoch(); ++b) {
    const int64_t start = b * options_.batch_size;
    const int64_t end = std::min<int64_t>(start + options_.batch_size, options_.dataset_size);
    batches.emplace_back(order.begin() + start, order.begin() + end);
  }
  cached_epoch_ = epoch;
  cached_batches_ = batches;
  return batches;
}

std::vector<int64_t> BatchSampler::next_batch() {
  VERL_CHECK(!epoch_done(), "dataloader", "epoch ", epoch_, " has no batches left");
  return epoch_batches(epoch_)[static_cast<size_t>(next_batch_++)];
}

void BatchSampler::start_epoch(int64_t epoch) {
  if (epoch == epoch_ && next_batch_ < batches_per_epoch()) return;  // resuming mid-epoch
  epoch_ = epoch;
  next_batch_ = 0;
}

nlohmann::json BatchSampler::state_dict() const {
  return {{"format_version", 1},
          {"epoch", epoch_},
          {"next_batch", next_batch_},
          {"dataset_size", options_.dataset_size},
          {"batch_size", options_.batch_size},
          {"shuffle", options_.shuffle},
          {"seed", options_.seed},
          {"drop_last", options_.drop_last}};
}

void BatchSampler::load_state_dict(const nlohmann::json& state) {
  try {
    VERL_CHECK(state.at("format_version").get<int>() == 1, "dataloader", "dataloader state has format version ",
               state.at("format_version").dump(), ", expected 1");
    auto expect_same = [&](const char* key, const nlohmann::json& mine) {
      VERL_CHECK(state.at(key) == mine, "dataloader", "dataloader state was saved with ", key, "=",
                 state.at(key).dump(), " but this run has ", key, "=", mine.dump(),
                 "; resuming needs the same data settings");
    };
    expect_same("dataset_size", options_.dataset_size);
    expect_same("batch_size", options_.batch_size);
    expect_same("shuffle", options_.shuffle);
    expect_same("seed", options_.seed);
    expect_same("drop_last", options_.drop_last);
    epoch_ = state.at("epoch").get<int64_t>();
    next_batch_ = state.at("next_batch").get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL("dataloader", "dataloader state is malformed: ", e.what());
  }
  VERL_CHECK(epoch_ >= 0 && next_batch_ >= 0 && next_batch_ <= batches_per_epoch(), "dataloader",
             "dataloader state points outside the data (epoch ", epoch_, ", batch ", next_batch_, ")");
}

}  // namespace verl::data
