// A user's YAML config: parse_yaml (depth, alias cycles, alias expansion, number length), interpolation,
// and to_yaml's promise that parse_yaml reads its output back (written again: the same text).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/config/interpolation.h"
#include "verl/config/yaml_io.h"
#include "verl/tokenizer/unicode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  verl::fuzz::expect_only_verl_errors([&] {
    const verl::config::Node root = verl::config::parse_yaml(text, "fuzz.yaml");
    const std::string written = verl::config::to_yaml(root);
    // Written again from what it reads back, the text is the same (NaN compares unequal as a node). Only for
    // valid UTF-8: yaml-cpp's emitter rewrites invalid bytes (docs/fuzzing.md, finding 1).
    const verl::config::Node again = verl::config::parse_yaml(written, "rewritten.yaml");
    if (verl::tokenizer::find_invalid_utf8(text) == std::string::npos && verl::config::to_yaml(again) != written) {
      std::fprintf(stderr, "fuzz: YAML round trip differs:\n%s\n", written.c_str());
      std::abort();
    }
    if (root.is_map()) verl::config::resolve_interpolations(root);
  });
  return 0;
}
