#include "verl/reward/scorers/py_str.h"

#include "verl/common/utf8.h"

#include <utf8proc.h>

#include <algorithm>
#include <iterator>

#include "verl/common/error.h"

namespace verl::reward::py {

namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Length of the valid UTF-8 sequence starting at text[i] (1..4), or 0 when the bytes there are not one.
// Rejects overlong forms, surrogates and code points above U+10FFFF.
size_t valid_sequence_length(const std::string& text, size_t i, char32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  }
  size_t need;
  char32_t value;
  char32_t min_value;
  if ((lead & 0xE0) == 0xC0) {
    need = 2, value = lead & 0x1F, min_value = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    need = 3, value = lead & 0x0F, min_value = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    need = 4, value = lead & 0x07, min_value = 0x10000;
  } else {
    return 0;
  }
  if (i + need > text.size()) return 0;
  for (size_t k = 1; k < need; ++k) {
    const unsigned char next = byte(i + k);
    if ((next & 0xC0) != 0x80) return 0;
    value = (value << 6) | (next & 0x3F);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *code_point = value;
  return need;
}

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// How many bytes one U+FFFD replaces at an invalid sequence starting at text[i], as CPython's UTF-8 decoder
// with errors="replace" does: a byte that cannot start a sequence alone; otherwise the lead byte plus the
// continuation bytes that were still acceptable before the sequence broke (its "maximal subpart").
size_t invalid_subpart_length(const std::string& text, size_t i) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  size_t need;
  unsigned char second_low = 0x80, second_high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0) second_low = 0xA0;
    if (lead == 0xED) second_high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0) second_low = 0x90;
    if (lead == 0xF4) second_high = 0x8F;
  } else {
    return 1;
  }
  size_t length = 1;
  while (length < need && i + length < text.size()) {
    const unsigned char next = static_cast<unsigned char>(text[i + length]);
    const bool ok = length == 1 ? (next >= second_low && next <= second_high) : is_continuation(next);
    if (!ok) break;
    ++length;
  }
  return length;
}

// Byte offset where the code point with index `index` starts (text.size() when index == length).
size_t byte_offset_of(const std::string& text, size_t index) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_continuation(static_cast<unsigned char>(text[i]))) continue;
    if (seen == index) return i;
    ++seen;
  }
  return text.size();
}

// Code point ranges where Python 3.11's str.isdigit() is true (Unicode 14.0: Numeric_Type Decimal or Digit).
// Produced once with /usr/bin/python3: [c for c in range(0x110000) if chr(c).isdigit()], as ranges.
struct Range {
  char32_t first;
  char32_t last;
};
constexpr Range kDigitRanges[] = {
    {0x30, 0x39},       {0xB2, 0xB3},       {0xB9, 0xB9},       {0x660, 0x669},     {0x6F0, 0x6F9},
    {0x7C0, 0x7C9},     {0x966, 0x96F},     {0x9E6, 0x9EF},     {0xA66, 0xA6F},     {0xAE6, 0xAEF},
    {0xB66, 0xB6F},     {0xBE6, 0xBEF},     {0xC66, 0xC6F},     {0xCE6, 0xCEF},     {0xD66, 0xD6F},
    {0xDE6, 0xDEF},     {0xE50, 0xE59},     {0xED0, 0xED9},     {0xF20, 0xF29},     {0x1040, 0x1049},
    {0x1090, 0x1099},   {0x1369, 0x1371},   {0x17E0, 0x17E9},   {0x1810, 0x1819},   {0x1946, 0x194F},
    {0x19D0, 0x19DA},   {0x1A80, 0x1A89},   {0x1A90, 0x1A99},   {0x1B50, 0x1B59},   {0x1BB0, 0x1BB9},
    {0x1C40, 0x1C49},   {0x1C50, 0x1C59},   {0x2070, 0x2070},   {0x2074, 0x2079},   {0x2080, 0x2089},
    {0x2460, 0x2468},   {0x2474, 0x247C},   {0x2488, 0x2490},   {0x24EA, 0x24EA},   {0x24F5, 0x24FD},
    {0x24FF, 0x24FF},   {0x2776, 0x277E},   {0x2780, 0x2788},   {0x278A, 0x2792},   {0xA620, 0xA629},
    {0xA8D0, 0xA8D9},   {0xA900, 0xA909},   {0xA9D0, 0xA9D9},   {0xA9F0, 0xA9F9},   {0xAA50, 0xAA59},
    {0xABF0, 0xABF9},   {0xFF10, 0xFF19},   {0x104A0, 0x104A9}, {0x10A40, 0x10A43}, {0x10D30, 0x10D39},
    {0x10E60, 0x10E68}, {0x11052, 0x1105A}, {0x11066, 0x1106F}, {0x110F0, 0x110F9}, {0x11136, 0x1113F},
    {0x111D0, 0x111D9}, {0x112F0, 0x112F9}, {0x11450, 0x11459}, {0x114D0, 0x114D9}, {0x11650, 0x11659},
    {0x116C0, 0x116C9}, {0x11730, 0x11739}, {0x118E0, 0x118E9}, {0x11950, 0x11959}, {0x11C50, 0x11C59},
    {0x11D50, 0x11D59}, {0x11DA0, 0x11DA9}, {0x16A60, 0x16A69}, {0x16AC0, 0x16AC9}, {0x16B50, 0x16B59},
    {0x1D7CE, 0x1D7FF}, {0x1E140, 0x1E149}, {0x1E2F0, 0x1E2F9}, {0x1E950, 0x1E959}, {0x1F100, 0x1F10A},
    {0x1FBF0, 0x1FBF9},
};

bool is_digit_code_point(char32_t c) {
  for (const Range& range : kDigitRanges) {
    if (c < range.first) return false;  // ranges are sorted
    if (c <= range.last) return true;
  }
  return false;
}

// Unicode's Cased property (Lowercase, Uppercase or Lt): the letter categories with case, and the other
// code points that change under a case mapping (circled letters, Roman numerals, ...).
bool is_cased(char32_t c) {
  const auto cp = static_cast<utf8proc_int32_t>(c);
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
      return true;
    default:
      break;
  }
  if (utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp) return true;
  // Other_Lowercase / Other_Uppercase code points that have no case mapping and are not case-ignorable (the
  // others, Lm and Mn, are skipped as case-ignorable first): the ordinal indicators and the squared / negative
  // Latin capitals.
  return c == 0xAA || c == 0xBA || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
         (c >= 0x1F170 && c <= 0x1F189);
}

// Unicode's Case_Ignorable: Mn Me Cf Lm Sk, and Word_Break MidLetter / MidNumLet / Single_Quote.
bool is_case_ignorable(char32_t c) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  static constexpr char32_t kWordBreakMid[] = {0x27,   0x2E,   0x3A,   0xB7,   0x387,  0x55F,  0x5F4,  0x2018, 0x2019,
                                               0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A};
  return std::find(std::begin(kWordBreakMid), std::end(kWordBreakMid), c) != std::end(kWordBreakMid);
}

// CPython's handle_capital_sigma: U+03A3 at `i` is final when a cased code point precedes it and none follows
// it, case-ignorable ones skipped on both sides.
bool is_final_sigma(const std::u32string& text, size_t i) {
  size_t j = i;
  while (j > 0 && is_case_ignorable(text[j - 1])) --j;
  if (j == 0 || !is_cased(text[j - 1])) return false;
  for (size_t k = i + 1; k < text.size(); ++k) {
    if (!is_case_ignorable(text[k])) return !is_cased(text[k]);
  }
  return true;
}

// The letter categories (Lu Ll Lt Lm Lo), in both word classes below.
bool is_letter_category(utf8proc_category_t category) {
  switch (category) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string sanitize_utf8(const std::string& text) {
  // Fast path: find the first invalid sequence; valid text (the usual case) is returned as is.
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t code_point;
    const size_t n = valid_sequence_length(text, i, &code_point);
    if (n == 0) break;
    i += n;
  }
  if (i == text.size()) return text;
  std::string out(text, 0, i);
  out.reserve(text.size() + 2);
  while (i < text.size()) {
    char32_t code_point;
    const size_t n = valid_sequence_length(text, i, &code_point);
    if (n == 0) {
      out += encode(kReplacement);
      i += invalid_subpart_length(text, i);
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::u32string decode(const std::string& text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    char32_t code_point;
    const size_t n = valid_sequence_length(text, i, &code_point);
    VERL_ASSERT(n > 0, "reward", "decode() needs valid UTF-8; call sanitize_utf8 first");
    out.push_back(code_point);
    i += n;
  }
  return out;
}

std::string encode(char32_t c) {
  std::string out;
  verl::append_utf8(out, c);
  return out;
}

std::string encode(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t c : text) out += encode(c);
  return out;
}

size_t length(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(),
                                            [](char c) { return !is_continuation(static_cast<unsigned char>(c)); }));
}

std::string tail(const std::string& text, size_t count) {
  const size_t total = length(text);
  if (total <= count) return text;
  return text.substr(byte_offset_of(text, total - count));
}

std::string slice_from(const std::string& text, long long start) {
  const long long total = static_cast<long long>(length(text));
  if (start < 0) start = std::max(0LL, total + start);
  if (start >= total) return "";
  return text.substr(byte_offset_of(text, static_cast<size_t>(start)));
}

std::string replace(const std::string& text, const std::string& old_text, const std::string& new_text) {
  VERL_ASSERT(!old_text.empty(), "reward", "replace() with an empty pattern");
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(old_text, pos);
    if (hit == std::string::npos) break;
    out.append(text, pos, hit - pos);
    out += new_text;
    pos = hit + old_text.size();
  }
  out.append(text, pos, std::string::npos);
  return out;
}

std::vector<std::string> split(const std::string& text, const std::string& separator) {
  VERL_ASSERT(!separator.empty(), "reward", "split() with an empty separator");
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(separator, pos);
    if (hit == std::string::npos) break;
    parts.push_back(text.substr(pos, hit - pos));
    pos = hit + separator.size();
  }
  parts.push_back(text.substr(pos));
  return parts;
}

bool contains(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_digit(const std::string& text) {
  const std::u32string code_points = decode(text);
  if (code_points.empty()) return false;
  return std::all_of(code_points.begin(), code_points.end(), is_digit_code_point);
}

std::string strip(const std::string& text) {
  const std::u32string code_points = decode(text);
  size_t begin = 0;
  size_t end = code_points.size();
  while (begin < end && is_space(code_points[begin])) ++begin;
  while (end > begin && is_space(code_points[end - 1])) --end;
  return encode(code_points.substr(begin, end - begin));
}

std::vector<std::string> split_whitespace(const std::string& text) {
  std::vector<std::string> words;
  const std::u32string code_points = decode(text);
  size_t i = 0;
  while (i < code_points.size()) {
    while (i < code_points.size() && is_space(code_points[i])) ++i;
    const size_t begin = i;
    while (i < code_points.size() && !is_space(code_points[i])) ++i;
    if (i > begin) words.push_back(encode(code_points.substr(begin, i - begin)));
  }
  return words;
}

std::string lower(const std::string& text) {
  const std::u32string code_points = decode(text);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < code_points.size(); ++i) {
    const char32_t c = code_points[i];
    if (c < 0x80) {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: SpecialCasing's one two-code-point lowercase
      out += "i\xCC\x87";
    } else if (c == 0x3A3) {
      out += encode(is_final_sigma(code_points, i) ? char32_t{0x3C2} : char32_t{0x3C3});
    } else {
      out += encode(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  return out;
}

bool is_word(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return is_letter_category(category) || category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

bool is_alpha(const std::string& text) {
  const std::u32string code_points = decode(text);
  if (code_points.empty()) return false;
  for (char32_t c : code_points) {
    if (!is_letter_category(utf8proc_category(static_cast<utf8proc_int32_t>(c)))) return false;
  }
  return true;
}

bool is_regex_word(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189)) {
    return true;  // So with Other_Alphabetic
  }
  switch (const utf8proc_category_t category = utf8proc_category(static_cast<utf8proc_int32_t>(c)); category) {
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return is_letter_category(category);
  }
}

}  // namespace verl::reward::py
