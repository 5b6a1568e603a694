#include "verl/reward/scorers/py_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "verl/common/error.h"

namespace verl::reward::py {

const char* const kPythonSpace =
    "\\t\\n\\x{0b}\\x{0c}\\r\\x{1c}-\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}";

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() {
    if (code) pcre2_code_free(code);
  }
};

namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

struct MatchData {
  pcre2_match_data* data;
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
};

struct CompileContext {
  pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
  ~CompileContext() { pcre2_compile_context_free(context); }
};

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern), code_(std::make_unique<Code>()) {
  CompileContext context;
  VERL_ASSERT(context.context != nullptr, "reward", "out of memory creating a PCRE2 compile context");
  // Python's `.` excludes only "\n"; pin the newline convention rather than trusting the build default.
  pcre2_set_newline(context.context, PCRE2_NEWLINE_LF);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF,
                              &error_code, &error_offset, context.context);
  VERL_ASSERT(code_->code != nullptr, "reward", "bad scorer regex '", pattern, "' at offset ", error_offset, ": ",
              pcre2_message(error_code));
}

Regex::~Regex() = default;

bool Regex::find(const std::string& text, size_t start, bool not_empty_at_start, Match* match) const {
  MatchData match_data(code_->code);
  VERL_ASSERT(match_data.data != nullptr, "reward", "out of memory creating PCRE2 match data");
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), start,
                             not_empty_at_start ? PCRE2_NOTEMPTY_ATSTART : 0, match_data.data, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  VERL_CHECK(rc >= 0, "reward", "regex '", pattern_, "' failed on a ", text.size(), "-byte text: ",
             pcre2_message(rc));
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data.data);
  const uint32_t group_count = pcre2_get_ovector_count(match_data.data);
  match->groups.assign(group_count, std::string());
  for (uint32_t g = 0; g < group_count; ++g) {
    if (ovector[2 * g] == PCRE2_UNSET) continue;
    match->groups[g] = text.substr(ovector[2 * g], ovector[2 * g + 1] - ovector[2 * g]);
  }
  match->begin = ovector[0];
  match->end = ovector[1];
  return true;
}

// Python's scanner: after a match ending at `end`, search again from `end`; when that match was empty the
// next one may not be empty at the same place (Python >= 3.7, and PCRE2_NOTEMPTY_ATSTART).
template <typename OnMatch>
size_t Regex::scan(const std::string& text, OnMatch on_match) const {
  size_t start = 0;
  bool previous_empty = false;
  Match match;
  while (start <= text.size() && find(text, start, previous_empty, &match)) {
    on_match(match);
    previous_empty = match.begin == match.end;
    start = match.end;
  }
  return start;
}

std::vector<std::string> Regex::findall(const std::string& text, int group) const {
  std::vector<std::string> found;
  scan(text, [&](const Match& match) {
    VERL_ASSERT(group >= 0 && static_cast<size_t>(group) < match.groups.size(), "reward", "regex '", pattern_,
                "' has no group ", group);
    found.push_back(match.groups[group]);
  });
  return found;
}

std::string Regex::sub(const std::string& replacement, const std::string& text) const {
  std::string out;
  size_t copied = 0;
  scan(text, [&](const Match& match) {
    out.append(text, copied, match.begin - copied);
    for (size_t i = 0; i < replacement.size(); ++i) {
      const char c = replacement[i];
      if (c == '\\' && i + 1 < replacement.size() && replacement[i + 1] >= '1' && replacement[i + 1] <= '9') {
        const size_t group = static_cast<size_t>(replacement[i + 1] - '0');
        VERL_ASSERT(group < match.groups.size(), "reward", "replacement refers to missing group ", group);
        out += match.groups[group];
        ++i;
      } else {
        out += c;
      }
    }
    copied = match.end;
  });
  out.append(text, copied, std::string::npos);
  return out;
}

}  // namespace verl::reward::py
