#include "verl/trainer/uid_generator.h"

#include <sstream>

#include "verl/common/error.h"

namespace verl::trainer {

std::string UidGenerator::next() {
  uint64_t high = engine_();
  uint64_t low = engine_();
  high = (high & ~uint64_t{0xF000}) | uint64_t{0x4000};                   // version 4
  low = (low & ~(uint64_t{0x3} << 62)) | (uint64_t{0x2} << 62);            // variant 10xx
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  auto put = [&](uint64_t value, int nibbles) {
    for (int i = nibbles - 1; i >= 0; --i) out += hex[(value >> (4 * i)) & 0xF];
  };
  put(high >> 32, 8);
  out += '-';
  put((high >> 16) & 0xFFFF, 4);
  out += '-';
  put(high & 0xFFFF, 4);
  out += '-';
  put(low >> 48, 4);
  out += '-';
  put(low & 0xFFFFFFFFFFFFull, 12);
  return out;
}

std::string UidGenerator::state() const {
  std::ostringstream out;
  out << engine_;
  return out.str();
}

void UidGenerator::load_state(const std::string& state) {
  std::istringstream in(state);
  std::mt19937_64 engine;
  in >> engine;
  VERL_CHECK(!in.fail(), "trainer", "checkpoint holds a malformed uid generator state");
  engine_ = engine;
}

}  // namespace verl::trainer
