#include "verl/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include "verl/common/error.h"

namespace verl::tokenizer {

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// One JIT stack and match context per thread, large enough for very long words.
struct ThreadMatchState {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  ThreadMatchState() {
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    if (context && stack) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    if (stack) pcre2_jit_stack_free(stack);
    if (context) pcre2_match_context_free(context);
  }
};

pcre2_match_context* thread_match_context() {
  thread_local ThreadMatchState state;
  return state.context;
}

}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(const std::string& pattern, const std::string& where) : impl_(std::make_unique<Impl>()), where_(where) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &error_code, &error_offset, nullptr);
  VERL_CHECK(impl_->code != nullptr, "tokenizer", where, ": invalid regex '", pattern, "' at offset ", error_offset,
             ": ", pcre2_message(error_code));
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter when JIT is unavailable
}

Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  VERL_ASSERT(data != nullptr, "tokenizer", "out of memory for regex match data");
  pcre2_match_context* context = thread_match_context();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      VERL_FAIL("tokenizer", where_, ": regex match failed: ", pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    matches.emplace_back(begin, end);
    start = end;
    if (begin == end) {  // an empty match: step over one code point so the search moves on
      if (start == text.size()) break;
      ++start;
      while (start < text.size() && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

std::string Regex::replace_all(std::string_view text, const std::string& replacement) const {
  std::string out;
  size_t prev = 0;
  for (const auto& [begin, end] : find_all(text)) {
    out.append(text.data() + prev, begin - prev);
    out += replacement;
    prev = end;
  }
  out.append(text.data() + prev, text.size() - prev);
  return out;
}

std::string Regex::escape(const std::string& literal) {
  std::string out;
  for (char ch : literal) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x80 && !std::isalnum(byte)) out += '\\';
    out += ch;
  }
  return out;
}

}  // namespace verl::tokenizer
