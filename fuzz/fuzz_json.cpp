// JSON and JSONL rows (datasets, `verl score` / `verl data convert` input, chat messages, ids files): the
// limits check, io::parse_json, and the writer's round trip (what it writes, it reads back equal).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/common/input_limits.h"
#include "verl/io/value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  verl::fuzz::expect_only_verl_errors([&] {
    const verl::io::Value value = verl::io::parse_json(text, "fuzz.jsonl:1");
    const std::string written = verl::io::to_json(value);
    const verl::io::Value again = verl::io::parse_json(written, "rewritten");
    if (verl::io::to_json(again) != written) {
      std::fprintf(stderr, "fuzz: JSON round trip differs\n");
      std::abort();
    }
  });
  return 0;
}
