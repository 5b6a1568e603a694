#include "verl/common/input_limits.h"

#include "verl/common/error.h"

namespace verl {

namespace {

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

}  // namespace

void check_json_limits(std::string_view text, const std::string& where) {
  int depth = 0;
  bool in_string = false;
  size_t line = 1;
  size_t line_start = 0;
  size_t number_start = std::string_view::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      } else if (c == '\n') {  // invalid inside a JSON string; the parser reports it, keep positions right
        ++line;
        line_start = i + 1;
      }
      continue;
    }
    if (number_char(c)) {
      if (number_start == std::string_view::npos) number_start = i;
      VERL_CHECK(i - number_start + 1 <= kMaxNumberChars, "json", where, ": a number longer than ", kMaxNumberChars,
                 " characters at line ", line, ", column ", number_start - line_start + 1, " (limit ",
                 kMaxNumberChars, ")");
      continue;
    }
    number_start = std::string_view::npos;
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        ++depth;
        VERL_CHECK(depth <= kMaxNestingDepth, "json", where, ": arrays/objects nested deeper than ", kMaxNestingDepth,
                   " levels at line ", line, ", column ", i - line_start + 1, " (limit ", kMaxNestingDepth, ")");
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case '\n':
        ++line;
        line_start = i + 1;
        break;
      default: break;
    }
  }
}

}  // namespace verl
