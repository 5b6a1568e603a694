// tokenizer_config.json (special tokens, chat template, flags) read from a model folder, with the
// folder's special_tokens_map.json and generation_config.json made from the same input.
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "verl/tokenizer/tokenizer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = verl::fuzz::scratch_path("tokenizer_config");
  static const bool made = std::filesystem::create_directories(dir) || true;
  (void)made;
  // The first byte picks which file the input is; the others are absent.
  const uint8_t pick = size > 0 ? data[0] % 3 : 0;
  const char* names[] = {"tokenizer_config.json", "special_tokens_map.json", "generation_config.json"};
  for (const char* name : names) std::filesystem::remove(dir + "/" + name);
  if (size > 0) verl::fuzz::write_bytes(dir + "/" + names[pick], data + 1, size - 1);
  verl::fuzz::expect_only_verl_errors([&] { verl::tokenizer::load_tokenizer_config(dir); });
  return 0;
}
