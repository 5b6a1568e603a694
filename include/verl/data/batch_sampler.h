// The order in which the trainer sees the dataset: verl's StatefulDataLoader with a RandomSampler over a
// torch.Generator seeded by data.seed (or a SequentialSampler when data.shuffle=false), batch_size prompts
// per batch, drop_last. Epoch e uses torch.randperm(n) draw number 2e from that generator, exactly as
// PyTorch's RandomSampler does (it draws a second, empty-sliced permutation at the end of each epoch), so
// the order matches torch.utils.data's for the same seed. The state (epoch, batches
// already taken) is saved in checkpoints; a resumed run continues with exactly the remaining batches.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace verl::data {

struct BatchSamplerOptions {
  int64_t dataset_size = 0;
  int64_t batch_size = 1;
  bool shuffle = true;
  uint64_t seed = 1;  // verl's classic default when data.seed is null
  bool drop_last = true;
};

class BatchSampler {
 public:
  explicit BatchSampler(BatchSamplerOptions options);

  // len(dataloader): full batches per epoch (plus a short last one without drop_last).
  int64_t batches_per_epoch() const;
  // Every batch of one epoch, as dataset indices.
  std::vector<std::vector<int64_t>> epoch_batches(int64_t epoch) const;

  // Stateful iteration: the current epoch's remaining batches.
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return next_batch_; }  // batches of the current epoch already taken
  bool epoch_done() const { return next_batch_ >= batches_per_epoch(); }
  std::vector<int64_t> next_batch();  // error when the epoch is done
  void start_epoch(int64_t epoch);    // keeps the position when resuming into the same epoch

  nlohmann::json state_dict() const;
  // Errors when the saved state belongs to a different dataset size, batch size, seed or shuffle setting.
  void load_state_dict(const nlohmann::json& state);

 private:
  std::vector<int64_t> epoch_order(int64_t epoch) const;

  BatchSamplerOptions options_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<std::vector<int64_t>> cached_batches_;
};

}  // namespace verl::data
