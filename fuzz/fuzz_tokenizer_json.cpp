// tokenizer.json: the streaming reader (vocab, merges, added tokens, normalizer / pre-tokenizer / decoder
// specs), the Tokenizer built from it, and an encode / decode of a fixed text.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  verl::fuzz::expect_only_verl_errors([&] {
    verl::tokenizer::Tokenizer tokenizer(verl::tokenizer::parse_tokenizer_json(text, "tokenizer.json"),
                                         verl::tokenizer::TokenizerConfig{});
    const std::vector<int32_t> ids = tokenizer.encode("Hello, world! 12 + 30 = 42\n\tcaf\xc3\xa9 <|im_end|>", true);
    tokenizer.decode(ids, false);
    tokenizer.vocab_size();
  });
  return 0;
}
