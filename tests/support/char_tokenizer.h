// Test helper: the character tokenizer of verl's digit-completion task (reference spec §12) as a Hugging
// Face tokenizer folder: vocab S=0 (separator / generation prompt), E=1 (eos), P=2 (pad), U=3 (unk),
// '0'..'9' = 4..13, ',' = 14, ':' = 15; no merges, so every character is one token; chat template =
// the user contents concatenated, then "S" as the generation prompt.
#pragma once

#include <string>

namespace verl::test {

// Writes tokenizer.json, tokenizer_config.json and generation_config.json into `dir` (created).
void write_char_tokenizer(const std::string& dir);

}  // namespace verl::test
