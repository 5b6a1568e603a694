// numpy's default generator, reproduced bit for bit where verl's data loading uses it:
// `np.random.default_rng(seed)` (SeedSequence -> PCG64) and `Generator.choice(n, size, replace=False)`,
// which RLHFDataset uses to pick data.train_max_samples / val_max_samples rows when data.shuffle is true.
// Written from numpy's documented algorithms (SeedSequence hash mixing, PCG64 XSL-RR 128/64, Lemire bounded
// integers, Floyd's sampling / tail Fisher-Yates); tests compare against /usr/bin/python3's numpy.
#pragma once

#include <cstdint>
#include <vector>

namespace verl::data {

class NumpyGenerator {
 public:
  // np.random.default_rng(seed) for a non-negative integer seed.
  explicit NumpyGenerator(uint64_t seed);

  uint64_t next_uint64();
  uint32_t next_uint32();  // PCG64 hands out the low then the high half of one 64-bit draw
  // numpy's random_bounded_uint64(off=0, rng=max): uniform in [0, max], Lemire's method.
  uint64_t bounded(uint64_t max);

  // Generator.choice(population, size, replace=False, shuffle=True): distinct indices in [0, population).
  std::vector<int64_t> choice_without_replacement(int64_t population, int64_t size);

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

}  // namespace verl::data
