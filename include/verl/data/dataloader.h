// verl's StatefulDataLoader (torchdata) over an RLHFDataset: batches of `batch_size` rows in the order of
// data/batch_sampler.h (PyTorch RandomSampler over a torch.Generator seeded with `seed` when shuffling,
// sequential otherwise; drop_last), each collated with RLHFDataset::collate. state_dict() is JSON (saved in a
// checkpoint's data.pt place); load_state_dict() on a loader over the same data and settings continues with
// exactly the batches the saved one had not yet returned.
//
//   StatefulDataLoader loader(dataset, 8, /*shuffle=*/true, /*seed=*/1, /*drop_last=*/true);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (loader.has_next()) { protocol::DataProto batch = loader.next(); ... }
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "verl/data/batch_sampler.h"
#include "verl/data/rl_dataset.h"
#include "verl/protocol/data_proto.h"

namespace verl::data {

class StatefulDataLoader {
 public:
  StatefulDataLoader(std::shared_ptr<const RLHFDataset> dataset, int64_t batch_size, bool shuffle, uint64_t seed,
                     bool drop_last);

  int64_t batches_per_epoch() const { return sampler_.batches_per_epoch(); }  // len(dataloader)
  int64_t epoch() const { return sampler_.epoch(); }
  // Starts `epoch` from its first batch, except when this loader is already inside `epoch` with batches
  // left (a resumed run), where the position is kept.
  void start_epoch(int64_t epoch);
  bool has_next() const { return !sampler_.epoch_done(); }
  // The next batch of the current epoch; an error when the epoch has no batches left.
  protocol::DataProto next();
  // The dataset rows of the next batch without consuming it (for logging and tests).
  std::vector<int64_t> peek_rows() const;

  const RLHFDataset& dataset() const { return *dataset_; }

  // {"format_version", "epoch", "next_batch", "dataset_size", "batch_size", "shuffle", "seed", "drop_last"}.
  nlohmann::json state_dict() const { return sampler_.state_dict(); }
  // Errors when the state was saved with a different dataset size or loader settings.
  void load_state_dict(const nlohmann::json& state) { sampler_.load_state_dict(state); }

 private:
  std::shared_ptr<const RLHFDataset> dataset_;
  BatchSampler sampler_;
};

}  // namespace verl::data
