#include "verl/tokenizer/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "pipeline_part.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/tokenizer/regex.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

bool is_ascii(const std::string& text) {
  for (unsigned char byte : text) {
    if (byte >= 0x80) return false;
  }
  return true;
}

std::string utf8proc_transform(const std::string& text, int options) {
  if (is_ascii(text)) return text;  // every normal form of ASCII text is the text itself
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out,
                                          static_cast<utf8proc_option_t>(options));
  VERL_CHECK(n >= 0, "tokenizer", "Unicode normalization failed: ", utf8proc_errmsg(n));
  std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(std::string (*fn)(const std::string&)) : fn_(fn) {}
  std::string normalize(const std::string& text) const override { return fn_(text); }

 private:
  std::string (*fn_)(const std::string&);
};

class LowercaseNormalizer : public Normalizer {
 public:
  std::string normalize(const std::string& text) const override { return unicode_lowercase(text); }
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  std::string normalize(const std::string& text) const override { return regex_.replace_all(text, content_); }

 private:
  Regex regex_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  std::string normalize(const std::string& text) const override {
    return text.empty() ? text : prepend_ + text;
  }

 private:
  std::string prepend_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(const std::string& text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      size_t pos = 0;
      while (pos < text.size()) {
        size_t next = pos;
        if (!is_whitespace(next_code_point(text, next))) break;
        pos = next;
      }
      begin = pos;
    }
    if (right_) {
      // Walk forward remembering where the trailing whitespace run starts.
      size_t pos = begin, run_start = text.size();
      while (pos < text.size()) {
        size_t next = pos;
        const bool space = is_whitespace(next_code_point(text, next));
        if (space && run_start == text.size()) run_start = pos;
        if (!space) run_start = text.size();
        pos = next;
      }
      end = run_start;
    }
    return text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  std::string normalize(const std::string& text) const override {
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      const int32_t c = next_code_point(text, pos);
      const auto cat = utf8proc_category(c);
      if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME) continue;
      append_utf8(out, c);
    }
    return out;
  }
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(const std::string& text) const override {
    std::string current = text;
    for (const auto& part : parts_) current = part->normalize(current);
    return current;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

std::string pattern_of(const json& config, const std::string& where) {
  VERL_CHECK(config.contains("pattern") && config["pattern"].is_object(), "tokenizer", where,
             ": expected a \"pattern\" object with \"String\" or \"Regex\"");
  const json& pattern = config["pattern"];
  if (pattern.contains("String") && pattern["String"].is_string()) {
    return Regex::escape(pattern["String"].get<std::string>());
  }
  VERL_CHECK(pattern.contains("Regex") && pattern["Regex"].is_string(), "tokenizer", where,
             ": pattern must have a string \"String\" or \"Regex\", got ", json_excerpt(pattern));
  return pattern["Regex"].get<std::string>();
}

std::string string_field(const json& config, const char* key, const std::string& where) {
  VERL_CHECK(config.contains(key) && config[key].is_string(), "tokenizer", where, ": expected string field \"",
             key, "\"");
  return config[key].get<std::string>();
}

}  // namespace

std::string unicode_nfc(const std::string& text) { return utf8proc_transform(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE); }
std::string unicode_nfd(const std::string& text) {
  return utf8proc_transform(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
}
std::string unicode_nfkc(const std::string& text) {
  return utf8proc_transform(text, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
}
std::string unicode_nfkd(const std::string& text) {
  return utf8proc_transform(text, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
}

std::string unicode_lowercase(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const int32_t c = next_code_point(text, pos);
    if (c < 0x80) {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" + COMBINING DOT ABOVE
      out += "i\xCC\x87";
    } else {
      append_utf8(out, utf8proc_tolower(c));
    }
  }
  return out;
}

std::unique_ptr<Normalizer> make_normalizer(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  const std::string type = detail::pipeline_part_type(config, where);
  const std::string here = where + " " + type;
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode_nfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode_nfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode_nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode_nfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(pattern_of(config, here), string_field(config, "content", here), here);
  }
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(string_field(config, "prepend", here));
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(config.value("strip_left", true), config.value("strip_right", true));
  }
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Sequence") {
    return std::make_unique<SequenceNormalizer>(
        detail::sequence_parts<Normalizer>(config, "normalizers", here, make_normalizer));
  }
  VERL_FAIL("tokenizer", where, ": unsupported normalizer type '", type,
            "' (supported: NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip, StripAccents, Sequence)");
}

}  // namespace verl::tokenizer
