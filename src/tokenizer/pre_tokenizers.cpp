#include "verl/tokenizer/pre_tokenizers.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "pipeline_part.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/tokenizer/regex.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

// GPT-2's pre-tokenization regex, used by ByteLevel when use_regex is true.
const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Applies `split_one` to each piece, keeping at_text_start only on the first sub-piece of a piece.
template <typename F>
void split_each(std::vector<Piece>& pieces, F&& split_one) {
  size_t bytes = 0;
  for (const Piece& piece : pieces) bytes += piece.text.size();
  std::vector<Piece> out;
  out.reserve(std::max(pieces.size() * 2, bytes / 4));  // ~4 bytes per piece for words of prose
  for (Piece& piece : pieces) {
    std::vector<std::string> parts = split_one(piece.text);
    bool first = piece.at_text_start;
    for (std::string& part : parts) {
      if (part.empty()) continue;
      out.push_back(Piece{std::move(part), first});
      first = false;
    }
  }
  pieces.swap(out);
}

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, "ByteLevel pre-tokenizer") : nullptr) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (!regex_) {  // one piece in, one piece out: map in place
      for (Piece& piece : pieces) {
        const bool prefix = add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ');
        piece.text = map_bytes(piece.text, prefix);
      }
      return;
    }
    split_each(pieces, [&](const std::string& text) {
      const bool prefix = add_prefix_space_ && (text.empty() || text[0] != ' ');
      std::vector<std::string> parts;
      if (regex_) {
        const std::string prefixed = prefix ? " " + text : std::string();
        const std::string& source = prefix ? prefixed : text;
        parts = split_by_matches(source, regex_->find_all(source), SplitBehavior::Isolated, false);
        for (std::string& part : parts) part = map_bytes(part, false);
      } else {
        parts.push_back(map_bytes(text, prefix));
      }
      return parts;
    });
  }

 private:
  // The text's bytes in GPT-2's byte alphabet (one or two UTF-8 bytes each), optionally after a space.
  std::string map_bytes(const std::string& text, bool prefix_space) const {
    std::string mapped;
    mapped.reserve(text.size() * 2 + 2);
    if (prefix_space) mapped += byte_to_unicode(' ');
    for (unsigned char byte : text) {
      const MappedByte& m = table_[byte];
      mapped.push_back(m.bytes[0]);
      if (m.length == 2) mapped.push_back(m.bytes[1]);
    }
    return mapped;
  }
  struct MappedByte {
    char bytes[2];
    uint8_t length;
  };
  static std::array<MappedByte, 256> make_table() {
    std::array<MappedByte, 256> table{};
    for (int b = 0; b < 256; ++b) {
      const std::string& utf8 = byte_to_unicode(static_cast<uint8_t>(b));
      table[b].length = static_cast<uint8_t>(utf8.size());
      table[b].bytes[0] = utf8[0];
      table[b].bytes[1] = utf8.size() > 1 ? utf8[1] : 0;
    }
    return table;
  }
  std::array<MappedByte, 256> table_ = make_table();

  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

// Split; also Whitespace and WhitespaceSplit, as the fixed patterns HF tokenizers splits them by.
class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(const std::string& pattern, SplitBehavior behavior, bool invert, const std::string& where)
      : regex_(pattern, where), behavior_(behavior), invert_(invert) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      return split_by_matches(text, regex_.find_all(text), behavior_, invert_);
    });
  }

 private:
  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

// Splits on Unicode numeric characters: each digit alone, or runs of digits together.
class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const std::string& text) {
      std::vector<std::pair<size_t, size_t>> matches;
      size_t pos = 0;
      while (pos < text.size()) {
        const size_t begin = pos;
        const bool digit = is_numeric(next_code_point(text, pos));
        if (digit) matches.emplace_back(begin, pos);
      }
      return split_by_matches(text, matches, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous,
                              false);
    });
  }

 private:
  bool individual_;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (Piece& piece : pieces) {
      std::string text;
      for (char ch : piece.text) {
        if (ch == ' ') {
          text += replacement_;
        } else {
          text += ch;
        }
      }
      const bool prepend = scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && piece.at_text_start);
      if (prepend && text.compare(0, replacement_.size(), replacement_) != 0) text = replacement_ + text;
      if (!split_) {
        out.push_back(Piece{std::move(text), piece.at_text_start});
        continue;
      }
      std::vector<std::pair<size_t, size_t>> matches;
      for (size_t at = text.find(replacement_); at != std::string::npos; at = text.find(replacement_, at + replacement_.size())) {
        matches.emplace_back(at, at + replacement_.size());
      }
      bool first = piece.at_text_start;
      for (std::string& part : split_by_matches(text, matches, SplitBehavior::MergedWithNext, false)) {
        out.push_back(Piece{std::move(part), first});
        first = false;
      }
    }
    pieces.swap(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& part : parts_) part->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

SplitBehavior parse_behavior(const json& config, const std::string& where) {
  VERL_CHECK(config.contains("behavior") && config["behavior"].is_string(), "tokenizer", where,
             ": expected string field \"behavior\"");
  const std::string name = config["behavior"].get<std::string>();
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  VERL_FAIL("tokenizer", where, ": unknown split behavior '", name,
            "' (valid: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

PrependScheme parse_prepend_scheme(const json& config, const std::string& where) {
  if (config.contains("prepend_scheme") && config["prepend_scheme"].is_string()) {
    const std::string name = config["prepend_scheme"].get<std::string>();
    if (name == "always") return PrependScheme::Always;
    if (name == "first") return PrependScheme::First;
    if (name == "never") return PrependScheme::Never;
    VERL_FAIL("tokenizer", where, ": unknown prepend_scheme '", name, "' (valid: always, first, never)");
  }
  // Older files: add_prefix_space true means "always".
  return config.value("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
}

}  // namespace

std::vector<std::string> split_by_matches(const std::string& text,
                                          const std::vector<std::pair<size_t, size_t>>& matches,
                                          SplitBehavior behavior, bool invert) {
  if (behavior == SplitBehavior::Isolated && !invert) {  // the common case (byte-level BPE regexes): no bookkeeping
    std::vector<std::string> out;
    out.reserve(matches.size() * 2 + 1);
    size_t prev = 0;
    for (const auto& [begin, end] : matches) {
      if (prev < begin) out.emplace_back(text, prev, begin - prev);
      if (begin < end) out.emplace_back(text, begin, end - begin);
      prev = end;
    }
    if (prev < text.size()) out.emplace_back(text, prev, text.size() - prev);
    return out;
  }
  // Mark every span of the text as delimiter (true) or not, as HF does before applying the behaviour.
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> spans;
  size_t prev = 0;
  for (const auto& [begin, end] : matches) {
    if (prev < begin) spans.push_back({{prev, begin}, false});
    spans.push_back({{begin, end}, true});
    prev = end;
  }
  if (prev < text.size()) spans.push_back({{prev, text.size()}, false});
  if (invert) {
    for (auto& span : spans) span.second = !span.second;
  }

  std::vector<std::pair<size_t, size_t>> parts;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& [range, is_delim] : spans) {
        if (!is_delim) parts.push_back(range);
      }
      break;
    case SplitBehavior::Isolated:
      for (const auto& [range, is_delim] : spans) parts.push_back(range);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool previous_was_delim = false;  // HF: a delimiter joins the piece before it
      for (const auto& [range, is_delim] : spans) {
        if (is_delim && !parts.empty() && !previous_was_delim) {
          parts.back().second = range.second;
        } else {
          parts.push_back(range);
        }
        previous_was_delim = is_delim;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous_was_delim = false;
      for (const auto& [range, is_delim] : spans) {
        if (!is_delim && previous_was_delim && !parts.empty()) {
          parts.back().second = range.second;
        } else {
          parts.push_back(range);
        }
        previous_was_delim = is_delim;
      }
      break;
    }
    case SplitBehavior::Contiguous: {
      bool previous_was_delim = false;
      for (const auto& [range, is_delim] : spans) {
        if (is_delim && previous_was_delim && !parts.empty()) {
          parts.back().second = range.second;
        } else {
          parts.push_back(range);
        }
        previous_was_delim = is_delim;
      }
      break;
    }
  }
  std::vector<std::string> out;
  out.reserve(parts.size());
  for (const auto& [begin, end] : parts) {
    if (end > begin) out.emplace_back(text, begin, end - begin);
  }
  return out;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  const std::string type = detail::pipeline_part_type(config, where);
  const std::string here = where + " " + type;
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevelPreTokenizer>(config.value("add_prefix_space", true),
                                                   config.value("use_regex", true));
  }
  if (type == "Split") {
    VERL_CHECK(config.contains("pattern") && config["pattern"].is_object(), "tokenizer", here,
               ": expected a \"pattern\" object with \"String\" or \"Regex\"");
    const json& pattern = config["pattern"];
    std::string regex;
    if (pattern.contains("String") && pattern["String"].is_string()) {
      regex = Regex::escape(pattern["String"].get<std::string>());
    } else {
      VERL_CHECK(pattern.contains("Regex") && pattern["Regex"].is_string(), "tokenizer", here,
                 ": pattern must have a string \"String\" or \"Regex\", got ", json_excerpt(pattern));
      regex = pattern["Regex"].get<std::string>();
    }
    return std::make_unique<SplitPreTokenizer>(regex, parse_behavior(config, here), config.value("invert", false),
                                               here);
  }
  if (type == "Digits") return std::make_unique<DigitsPreTokenizer>(config.value("individual_digits", false));
  if (type == "Metaspace") {
    std::string replacement = config.value("replacement", std::string("\xE2\x96\x81"));
    VERL_CHECK(!replacement.empty(), "tokenizer", here, ": \"replacement\" must not be empty");
    return std::make_unique<MetaspacePreTokenizer>(replacement, parse_prepend_scheme(config, here),
                                                   config.value("split", true));
  }
  if (type == "Whitespace") {
    return std::make_unique<SplitPreTokenizer>(R"(\w+|[^\w\s]+)", SplitBehavior::Removed, true, here);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitPreTokenizer>(R"(\s+)", SplitBehavior::Removed, false, here);
  }
  if (type == "Sequence") {
    return std::make_unique<SequencePreTokenizer>(
        detail::sequence_parts<PreTokenizer>(config, "pretokenizers", here, make_pre_tokenizer));
  }
  VERL_FAIL("tokenizer", where, ": unsupported pre_tokenizer type '", type,
            "' (supported: ByteLevel, Split, Digits, Metaspace, Whitespace, WhitespaceSplit, Sequence)");
}

}  // namespace verl::tokenizer
