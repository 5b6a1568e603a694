// numpy's legacy RandomState (np.random.seed(int), np.random.RandomState(int)), for the places where verl draws
// with it: MT19937 seeded by init_genrand; randint(0, n) and shuffle take each index from rk_interval(max): 32-bit
// outputs ANDed with the smallest all-ones mask covering max, retried while above it (max == 0 draws nothing).
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace verl {

class NumpyLegacyRandom {
 public:
  explicit NumpyLegacyRandom(uint32_t seed) : mt_(seed) {}

  // randint(0, n) for 1 <= n <= 2^32.
  uint32_t randint_below(uint64_t n) { return interval(static_cast<uint32_t>(n - 1)); }

  // shuffle(list): Fisher-Yates from the end.
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i-- > 1;) std::swap(items[i], items[interval(static_cast<uint32_t>(i))]);
  }

 private:
  // Uniform in [0, max].
  uint32_t interval(uint32_t max) {
    if (max == 0) return 0;
    uint32_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t value;
    do {
      value = static_cast<uint32_t>(mt_()) & mask;
    } while (value > max);
    return value;
  }

  std::mt19937 mt_;
};

}  // namespace verl
