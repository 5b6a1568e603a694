// UTF-8 encoding of one code point, shared by the tokenizer and the reward scorers.
#pragma once

#include <cstdint>
#include <string>

namespace verl {

// Appends the 1-4 byte UTF-8 form of `code_point` (callers pass valid code points).
void append_utf8(std::string& out, char32_t code_point);

}  // namespace verl
