// UTF-8 and Unicode helpers shared by the tokenizer pipeline: code point iteration, validation, lossy
// decoding (Rust's from_utf8_lossy: one U+FFFD per maximal invalid subpart), character classes as
// Hugging Face tokenizers (Rust) defines them, and GPT-2's byte <-> printable-character table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace verl::tokenizer {

// Decodes the code point at text[pos] and advances pos; returns -1 (and advances one byte) on invalid UTF-8.
int32_t next_code_point(std::string_view text, size_t& pos);
void append_utf8(std::string& out, int32_t code_point);

// Byte offset of the first invalid UTF-8 sequence, or std::string::npos when `text` is valid.
size_t find_invalid_utf8(std::string_view text);

// Valid UTF-8 from arbitrary bytes: each maximal invalid subpart becomes U+FFFD.
std::string utf8_lossy(std::string_view bytes);

bool is_whitespace(int32_t c);  // Unicode White_Space (Rust char::is_whitespace, regex \s)
bool is_word_char(int32_t c);   // Rust regex \w: letters, marks, numbers, connector punctuation
bool is_numeric(int32_t c);     // Rust char::is_numeric: Nd, Nl, No

// GPT-2 byte-level alphabet: every byte maps to one printable code point (as UTF-8) and back.
const std::string& byte_to_unicode(uint8_t byte);
// The byte for a byte-level code point, or -1 when `code_point` is not in the alphabet.
int unicode_to_byte(int32_t code_point);

}  // namespace verl::tokenizer
