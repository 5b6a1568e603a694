// The synthetic tasks' seeded draws (arithmetic, arithmetic_tool): a 64-bit LCG with Knuth's MMIX constants, the
// high bits used, so every platform draws the same problems; and distinct / held-out problem lists.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

namespace verl::data::seeded {

class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  uint64_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return state_ >> 33;
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

// `count` distinct problems not in `exclude` (added to it). draw(rng) -> Problem, key(problem) -> Key.
template <typename Draw, typename KeyOf, typename Key>
auto draw_distinct(Lcg& rng, int64_t count, std::set<Key>& exclude, Draw draw, KeyOf key) {
  std::vector<decltype(draw(rng))> out;
  while (static_cast<int64_t>(out.size()) < count) {
    auto p = draw(rng);
    if (exclude.insert(key(p)).second) out.push_back(p);
  }
  return out;
}

// `count` problems drawn with replacement, skipping those in `exclude`.
template <typename Draw, typename KeyOf, typename Key>
auto draw_outside(Lcg& rng, int64_t count, const std::set<Key>& exclude, Draw draw, KeyOf key) {
  std::vector<decltype(draw(rng))> out;
  while (static_cast<int64_t>(out.size()) < count) {
    auto p = draw(rng);
    if (exclude.count(key(p)) == 0) out.push_back(p);
  }
  return out;
}

}  // namespace verl::data::seeded
