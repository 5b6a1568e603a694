// config.json of a model folder: parse_hf_config_text (nesting limit, field types, size bounds, validate).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/model/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  verl::fuzz::expect_only_verl_errors([&] {
    const verl::model::HFConfig config = verl::model::parse_hf_config_text(text, "config.json");
    // What the reader accepted, the writer writes and the reader reads back.
    verl::model::parse_hf_config_text(verl::model::hf_config_to_json(config), "rewritten config.json");
  });
  return 0;
}
