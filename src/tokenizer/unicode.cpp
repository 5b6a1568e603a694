#include "verl/tokenizer/unicode.h"

#include "verl/common/utf8.h"

#include <utf8proc.h>

#include <array>
#include <vector>

namespace verl::tokenizer {

namespace {

// Length of the valid UTF-8 sequence at text[pos], or 0 when it is invalid (overlong, surrogate, > U+10FFFF,
// truncated). Follows the Unicode "maximal subpart" rules used by Rust and WHATWG decoders.
size_t valid_sequence_length(std::string_view text, size_t pos, size_t* invalid_length) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t b0 = byte(pos);
  const size_t n = text.size();
  if (b0 < 0x80) return 1;
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *invalid_length = 1;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    if (pos + k >= n) {
      *invalid_length = k;
      return 0;
    }
    const uint8_t b = byte(pos + k);
    const uint8_t low = (k == 1) ? lo : 0x80;
    const uint8_t high = (k == 1) ? hi : 0xBF;
    if (b < low || b > high) {
      *invalid_length = k;
      return 0;
    }
  }
  return need + 1;
}

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::vector<int> to_byte;  // indexed by code point (< 512)
};

const ByteTables& byte_tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    t.to_byte.assign(512, -1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const int32_t cp = printable ? b : 256 + extra++;
      append_utf8(t.to_unicode[b], cp);
      t.to_byte[cp] = b;
    }
    return t;
  }();
  return tables;
}

}  // namespace

int32_t next_code_point(std::string_view text, size_t& pos) {
  size_t invalid = 0;
  const size_t len = valid_sequence_length(text, pos, &invalid);
  if (len == 0) {
    pos += 1;
    return -1;
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  int32_t cp;
  switch (len) {
    case 1: cp = byte(0); break;
    case 2: cp = ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F); break;
    case 3: cp = ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F); break;
    default:
      cp = ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
  }
  pos += len;
  return cp;
}

void append_utf8(std::string& out, int32_t c) { verl::append_utf8(out, static_cast<char32_t>(c)); }

size_t find_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t invalid = 0;
    const size_t len = valid_sequence_length(text, pos, &invalid);
    if (len == 0) return pos;
    pos += len;
  }
  return std::string::npos;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t invalid = 0;
    const size_t len = valid_sequence_length(bytes, pos, &invalid);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      pos += invalid;
    } else {
      out.append(bytes.data() + pos, len);
      pos += len;
    }
  }
  return out;
}

bool is_whitespace(int32_t c) {
  if (c < 0) return false;
  if ((c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680) return true;
  if (c >= 0x2000 && c <= 0x200A) return true;
  return c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_word_char(int32_t c) {
  if (c < 0) return false;
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const auto cat = utf8proc_category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_NO) || cat == UTF8PROC_CATEGORY_PC ||
         c == 0x200C || c == 0x200D;
}

bool is_numeric(int32_t c) {
  if (c < 0) return false;
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto cat = utf8proc_category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

const std::string& byte_to_unicode(uint8_t byte) { return byte_tables().to_unicode[byte]; }

int unicode_to_byte(int32_t code_point) {
  if (code_point < 0 || code_point >= 512) return -1;
  return byte_tables().to_byte[code_point];
}

}  // namespace verl::tokenizer
