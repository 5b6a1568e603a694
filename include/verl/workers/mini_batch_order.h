// The rows of each mini-batch of an update, as verl 0.9.1's engine workers iterate a rank's batch
// (verl/utils/tensordict_utils.py make_iterator: a torch DataLoader over the row indices, batch_size the
// mini-batch, `shuffle` from actor.shuffle / critic.shuffle, one torch.Generator seeded data_loader_seed + the
// data-parallel rank for all epochs).
// Without shuffle: contiguous mini-batches, the same each epoch. With shuffle, each epoch's pass draws from the
// generator what torch's DataLoader draws: one int64 for the iterator's base seed, then RandomSampler's
// randperm(n) and randperm(n)[:0] (the second, empty, still advances the generator); the order is the first
// permutation, cut into mini-batches.
#pragma once

#include <cstdint>
#include <vector>

#include "verl/protocol/data_proto.h"

namespace verl::workers {

struct MiniBatchOrderOptions {
  bool shuffle = false;
  int64_t seed = 42;  // data_loader_seed + the data-parallel rank
};

// rows: the rank's batch size. Returns, epoch after epoch, each mini-batch's row indices. With shuffle,
// mini_batch_size must divide rows (verl's make_iterator asserts so); without, the last mini-batch of an epoch may be
// shorter (verl's legacy data.split).
std::vector<std::vector<int64_t>> mini_batch_rows(int64_t rows, int64_t mini_batch_size, int64_t epochs,
                                                  const MiniBatchOrderOptions& options);

// The batch's rows `rows` (ascending and consecutive: a view, else a gathered copy), taken when the mini-batch runs so
// that no more than one shuffled copy is held at a time.
protocol::DataProto take_rows(const protocol::DataProto& data, const std::vector<int64_t>& rows);

}  // namespace verl::workers
