// Python `str` semantics on UTF-8 text, for scorers that must agree with verl's Python byte for byte.
// Python indexes and measures strings in code points, and its `isdigit`, `isspace` and `strip` are Unicode
// aware; these helpers do the same on std::string holding UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace verl::reward::py {

// Valid UTF-8 copy: each invalid byte sequence becomes U+FFFD (what a decode with errors="replace" yields),
// so every later step sees well-formed text.
std::string sanitize_utf8(const std::string& text);

// Decoded code points of valid UTF-8 text, and back.
std::u32string decode(const std::string& text);
std::string encode(const std::u32string& text);
std::string encode(char32_t code_point);

// len(text) in code points.
size_t length(const std::string& text);

// text[-count:] (the last `count` code points; all of it when shorter).
std::string tail(const std::string& text, size_t count);

// text[start:] for a Python int start (negative counts from the end; clamped like a slice).
std::string slice_from(const std::string& text, long long start);

// text.replace(old, new): every non-overlapping occurrence, scanning left to right. `old` must be non-empty.
std::string replace(const std::string& text, const std::string& old_text, const std::string& new_text);

// text.split(separator) with an explicit, non-empty separator (empty pieces kept).
std::vector<std::string> split(const std::string& text, const std::string& separator);

// `needle in text` for strings.
bool contains(const std::string& text, const std::string& needle);

// str.isspace() for one code point: Unicode White_Space plus the separators \x1c-\x1f.
bool is_space(char32_t code_point);

// str.isalpha(): non-empty and every code point a letter (Lu Ll Lt Lm Lo).
bool is_alpha(const std::string& text);

// str.isdigit(): non-empty and every code point has Numeric_Type Digit or Decimal (Unicode 14, Python 3.11).
bool is_digit(const std::string& text);

// str.strip() with no argument: removes leading and trailing is_space code points.
std::string strip(const std::string& text);

// str.split() with no argument: the runs of non-is_space code points.
std::vector<std::string> split_whitespace(const std::string& text);

// str.lower(): every code point's full lowercase (U+0130 gives "i" + U+0307) and the capital sigma's
// Final_Sigma context (U+03A3 lowers to U+03C2 after a cased letter and not before one), as CPython does.
// Case data come from utf8proc; code points Python 3.11 (Unicode 14) leaves unassigned may differ.
std::string lower(const std::string& text);

// `\w` of Python's re on str patterns: str.isalnum() (letters Lu Ll Lt Lm Lo, numbers Nd Nl No) or "_".
bool is_word(char32_t code_point);

// `\w` of the `regex` package (which verl's tool parsers use), not re's: letters, letter numbers, marks, decimal
// digits, connector punctuation, ZWNJ / ZWJ and the alphabetic symbols (circled / squared Latin letters); other
// numbers (², ½) are not word characters there.
bool is_regex_word(char32_t code_point);

}  // namespace verl::reward::py
