#include "verl/data/numpy_random.h"

#include <algorithm>
#include <array>
#include <unordered_set>

#include "verl/common/error.h"

namespace verl::data {

namespace {

using u128 = unsigned __int128;

// SeedSequence constants (numpy/random/bit_generator.pyx).
constexpr uint32_t kInitA = 0x43b0d7e5u;
constexpr uint32_t kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu;
constexpr uint32_t kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu;
constexpr uint32_t kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr size_t kPoolSize = 4;

uint32_t hashmix(uint32_t value, uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

// SeedSequence(seed).generate_state(n_words, np.uint32).
std::vector<uint32_t> seed_sequence_state(uint64_t seed, size_t n_words) {
  std::vector<uint32_t> entropy;  // the integer's 32-bit words, least significant first; 0 is [0]
  if (seed == 0) entropy.push_back(0);
  for (uint64_t s = seed; s > 0; s >>= 32) entropy.push_back(static_cast<uint32_t>(s & 0xffffffffu));

  std::array<uint32_t, kPoolSize> pool{};
  uint32_t hash_const = kInitA;
  for (size_t i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0u, hash_const);
  for (size_t src = 0; src < kPoolSize; ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
    }
  }
  for (size_t src = kPoolSize; src < entropy.size(); ++src) {
    for (size_t dst = 0; dst < kPoolSize; ++dst) pool[dst] = mix(pool[dst], hashmix(entropy[src], hash_const));
  }

  std::vector<uint32_t> state(n_words);
  uint32_t hash = kInitB;
  for (size_t i = 0; i < n_words; ++i) {
    uint32_t value = pool[i % kPoolSize];
    value ^= hash;
    hash *= kMultB;
    value *= hash;
    value ^= value >> kXShift;
    state[i] = value;
  }
  return state;
}

const u128 kPcgMultiplier = (static_cast<u128>(0x2360ed051fc65da4ull) << 64) | 0x4385df649fccf645ull;

}  // namespace

NumpyGenerator::NumpyGenerator(uint64_t seed) {
  // PCG64 seeds from generate_state(4, np.uint64): words (lo, hi) pairs; seed = val[0]:val[1], inc = val[2]:val[3].
  const std::vector<uint32_t> words = seed_sequence_state(seed, 8);
  uint64_t val[4];
  for (int i = 0; i < 4; ++i) val[i] = static_cast<uint64_t>(words[2 * i]) | (static_cast<uint64_t>(words[2 * i + 1]) << 32);
  const u128 initstate = (static_cast<u128>(val[0]) << 64) | val[1];
  const u128 initseq = (static_cast<u128>(val[2]) << 64) | val[3];
  state_ = 0;
  inc_ = (initseq << 1) | 1;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMultiplier + inc_;
}

uint64_t NumpyGenerator::next_uint64() {
  state_ = state_ * kPcgMultiplier + inc_;
  const uint64_t folded = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (folded >> rot) | (folded << ((64 - rot) & 63));
}

uint32_t NumpyGenerator::next_uint32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  const uint64_t next = next_uint64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next & 0xffffffffu);
}

uint64_t NumpyGenerator::bounded(uint64_t max) {
  if (max == 0) return 0;
  if (max <= 0xffffffffull) {
    if (max == 0xffffffffull) return next_uint32();
    const uint32_t range = static_cast<uint32_t>(max) + 1;
    uint64_t m = static_cast<uint64_t>(next_uint32()) * range;
    uint32_t leftover = static_cast<uint32_t>(m & 0xffffffffu);
    if (leftover < range) {
      const uint32_t threshold = (0xffffffffu - static_cast<uint32_t>(max)) % range;
      while (leftover < threshold) {
        m = static_cast<uint64_t>(next_uint32()) * range;
        leftover = static_cast<uint32_t>(m & 0xffffffffu);
      }
    }
    return m >> 32;
  }
  if (max == ~0ull) return next_uint64();
  const uint64_t range = max + 1;
  u128 m = static_cast<u128>(next_uint64()) * range;
  uint64_t leftover = static_cast<uint64_t>(m);
  if (leftover < range) {
    const uint64_t threshold = (~0ull - max) % range;
    while (leftover < threshold) {
      m = static_cast<u128>(next_uint64()) * range;
      leftover = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

std::vector<int64_t> NumpyGenerator::choice_without_replacement(int64_t population, int64_t size) {
  VERL_CHECK(population >= 0 && size >= 0 && size <= population, "data",
             "cannot choose ", size, " distinct rows out of ", population);
  // numpy's in-place Fisher-Yates over data[first..n), from the end.
  auto shuffle_tail = [this](std::vector<int64_t>& data, int64_t n, int64_t first) {
    for (int64_t i = n - 1; i >= first; --i) {
      const auto j = static_cast<int64_t>(bounded(static_cast<uint64_t>(i)));
      std::swap(data[static_cast<size_t>(i)], data[static_cast<size_t>(j)]);
    }
  };
  if (size == 0) return {};
  const int64_t cutoff = 50;  // shuffle=True
  if (population > 10000 && size > population / cutoff) {
    // Tail shuffle: the last `size` entries of a partially shuffled arange.
    std::vector<int64_t> idx(static_cast<size_t>(population));
    for (int64_t i = 0; i < population; ++i) idx[static_cast<size_t>(i)] = i;
    shuffle_tail(idx, population, std::max<int64_t>(population - size, 1));
    return std::vector<int64_t>(idx.end() - size, idx.end());
  }
  // Floyd's algorithm, then a shuffle of the picks.
  std::vector<int64_t> picks;
  picks.reserve(static_cast<size_t>(size));
  std::unordered_set<int64_t> taken;
  for (int64_t j = population - size; j < population; ++j) {
    const auto val = static_cast<int64_t>(bounded(static_cast<uint64_t>(j)));
    const int64_t pick = taken.count(val) ? j : val;
    taken.insert(pick);
    picks.push_back(pick);
  }
  shuffle_tail(picks, size, 1);
  return picks;
}

}  // namespace verl::data
