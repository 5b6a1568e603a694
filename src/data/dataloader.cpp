#include "verl/data/dataloader.h"

#include "verl/common/error.h"

namespace verl::data {

namespace {

BatchSamplerOptions sampler_options(const std::shared_ptr<const RLHFDataset>& dataset, int64_t batch_size,
                                    bool shuffle, uint64_t seed, bool drop_last) {
  VERL_CHECK(dataset != nullptr, "dataloader", "StatefulDataLoader needs a dataset");
  BatchSamplerOptions options;
  options.dataset_size = dataset->size();
  options.batch_size = batch_size;
  options.shuffle = shuffle;
  options.seed = seed;
  options.drop_last = drop_last;
  return options;
}

}  // namespace

StatefulDataLoader::StatefulDataLoader(std::shared_ptr<const RLHFDataset> dataset, int64_t batch_size, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_(dataset), sampler_(sampler_options(dataset, batch_size, shuffle, seed, drop_last)) {}

void StatefulDataLoader::start_epoch(int64_t epoch) { sampler_.start_epoch(epoch); }

std::vector<int64_t> StatefulDataLoader::peek_rows() const {
  VERL_CHECK(has_next(), "dataloader", "epoch ", sampler_.epoch(), " has no batches left");
  return sampler_.epoch_batches(sampler_.epoch())[static_cast<size_t>(sampler_.position())];
}

protocol::DataProto StatefulDataLoader::next() { return dataset_->collate(sampler_.next_batch()); }

}  // namespace verl::data
