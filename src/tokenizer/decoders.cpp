#include "verl/tokenizer/decoders.h"

#include <nlohmann/json.hpp>

#include "pipeline_part.h"
#include "verl/common/error.h"
#include "verl/tokenizer/regex.h"
#include "verl/tokenizer/unicode.h"

namespace verl::tokenizer {

namespace {

using json = nlohmann::json;

// Byte-level tokens back to bytes; a token with a character outside the byte alphabet (an added token
// such as "<|im_start|>" stays as is only if all its characters map) contributes its raw UTF-8. The bytes
// are decoded lossily (invalid sequences -> U+FFFD), as HF does.
class ByteLevelDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      std::string mapped;
      bool ok = true;
      size_t pos = 0;
      while (pos < token.size()) {
        const int byte = unicode_to_byte(next_code_point(token, pos));
        if (byte < 0) {
          ok = false;
          break;
        }
        mapped += static_cast<char>(byte);
      }
      bytes += ok ? mapped : token;
    }
    return {utf8_lossy(bytes)};
  }
};

int parse_byte_token(const std::string& token) {
  // "<0xAB>" -> 0xAB; -1 otherwise.
  if (token.size() != 6 || token[0] != '<' || token[1] != '0' || token[2] != 'x' || token[5] != '>') return -1;
  auto hex = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
  };
  const int hi = hex(token[3]), lo = hex(token[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

// Runs of <0xXX> tokens become the text they encode; a run that is not valid UTF-8 becomes one U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    size_t pending_count = 0;
    auto flush = [&] {
      if (pending_count == 0) return;
      if (find_invalid_utf8(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
      pending_count = 0;
    };
    for (std::string& token : tokens) {
      const int byte = parse_byte_token(token);
      if (byte >= 0) {
        pending += static_cast<char>(byte);
        ++pending_count;
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    return out;
  }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string joined;
    for (const auto& token : tokens) joined += token;
    return {joined};
  }
};

// Removes up to `start` leading and `stop` trailing copies of `content` (one character) from each token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) {
      size_t begin = 0;
      for (size_t i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0 && !content_.empty(); ++i) {
        begin += content_.size();
      }
      size_t end = token.size();
      for (size_t i = 0; i < stop_ && end >= begin + content_.size() && !content_.empty() &&
                         token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i) {
        end -= content_.size();
      }
      token = token.substr(begin, end - begin);
    }
    return tokens;
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const std::string& pattern, std::string content, const std::string& where)
      : regex_(pattern, where), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (std::string& token : tokens) token = regex_.replace_all(token, content_);
    return tokens;
  }

 private:
  Regex regex_;
  std::string content_;
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepend) : replacement_(std::move(replacement)), prepend_(prepend) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string text;
      const std::string& token = tokens[i];
      for (size_t pos = 0; pos < token.size();) {
        if (token.compare(pos, replacement_.size(), replacement_) == 0) {
          text += ' ';
          pos += replacement_.size();
        } else {
          text += token[pos++];
        }
      }
      if (i == 0 && prepend_ && !text.empty() && text[0] == ' ') text.erase(0, 1);
      tokens[i] = std::move(text);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool prepend_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& part : parts_) tokens = part->decode_chain(std::move(tokens));
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string text;
  for (const auto& part : decode_chain(std::move(tokens))) text += part;
  return text;
}

std::unique_ptr<Decoder> make_decoder(const json& config, const std::string& where) {
  if (config.is_null()) return nullptr;
  const std::string type = detail::pipeline_part_type(config, where);
  const std::string here = where + " " + type;
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const std::string content = config.value("content", std::string(" "));
    return std::make_unique<StripDecoder>(content, config.value("start", size_t{0}), config.value("stop", size_t{0}));
  }
  if (type == "Replace") {
    VERL_CHECK(config.contains("pattern") && config["pattern"].is_object() && config.contains("content") &&
                   config["content"].is_string(),
               "tokenizer", here, ": expected \"pattern\" {\"String\"|\"Regex\"} and string \"content\"");
    const json& pattern = config["pattern"];
    std::string regex;
    if (pattern.contains("String") && pattern["String"].is_string()) {
      regex = Regex::escape(pattern["String"].get<std::string>());
    } else {
      VERL_CHECK(pattern.contains("Regex") && pattern["Regex"].is_string(), "tokenizer", here,
                 ": pattern must have a string \"String\" or \"Regex\"");
      regex = pattern["Regex"].get<std::string>();
    }
    return std::make_unique<ReplaceDecoder>(regex, config["content"].get<std::string>(), here);
  }
  if (type == "Metaspace") {
    bool prepend = config.value("add_prefix_space", true);
    if (config.contains("prepend_scheme") && config["prepend_scheme"].is_string()) {
      prepend = config["prepend_scheme"].get<std::string>() != "never";
    }
    return std::make_unique<MetaspaceDecoder>(config.value("replacement", std::string("\xE2\x96\x81")), prepend);
  }
  if (type == "Sequence") {
    return std::make_unique<SequenceDecoder>(detail::sequence_parts<Decoder>(config, "decoders", here, make_decoder));
  }
  VERL_FAIL("tokenizer", where, ": unsupported decoder type '", type,
            "' (supported: ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, Sequence)");
}

}  // namespace verl::tokenizer
