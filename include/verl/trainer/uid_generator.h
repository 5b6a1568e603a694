// The controller's random stream for verl's per-prompt `uid` (uuid4 in verl). Here the ids are uuid4-shaped
// strings drawn from a seeded MT19937-64, so a run is reproducible, and the generator state is saved in
// checkpoints, so a resumed run draws exactly the ids the uninterrupted run would have drawn.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace verl::trainer {

class UidGenerator {
 public:
  explicit UidGenerator(uint64_t seed) : engine_(seed) {}

  // "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" (version 4, variant 10xx), lower-case hex.
  std::string next();

  // The engine's full state as text (std::mt19937_64's stream form) and back; bad text is an error.
  std::string state() const;
  void load_state(const std::string& state);

 private:
  std::mt19937_64 engine_;
};

}  // namespace verl::trainer
