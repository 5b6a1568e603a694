// The rows one data-parallel rank reads in an epoch: torch.utils.data.DistributedSampler(dataset, num_replicas,
// rank, shuffle, seed, drop_last=True) after set_epoch(epoch), as verl's SFT trainers use it.
//   shuffle: torch.randperm(n) from a generator seeded with seed + epoch; else 0 .. n-1
//   the first (n / replicas) * replicas of those (drop_last), then every replicas-th from position rank
// A step's batch of B rows is then B / replicas consecutive rows of each rank's list, so the global batch of step
// b is positions [b * B, (b + 1) * B) of the epoch's permutation whatever the number of ranks.
#pragma once

#include <cstdint>
#include <vector>

namespace verl::data {

std::vector<int64_t> distributed_sampler_indices(int64_t dataset_size, int64_t replicas, int64_t rank, bool shuffle,
                                                 int64_t seed, int64_t epoch);

}  // namespace verl::data
