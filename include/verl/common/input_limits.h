// Limits on outside input. A hostile or broken file (deep nesting, a huge number, an absurd size) ends in one
// verl::Error naming the file, the place and the limit, never in a stack overflow or an unbounded allocation.
// Every JSON reader calls check_json_limits on the text before parsing it; the YAML reader
// (config/yaml_io.cpp) applies kMaxNestingDepth, kMaxNumberChars and kMaxYamlNodes while converting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace verl {

// Nesting of JSON arrays/objects and YAML sequences/maps. Hugging Face tokenizers (serde_json) stop at 128,
// real configs, tokenizer files and chat messages stay below 20.
inline constexpr int kMaxNestingDepth = 256;

// Characters of one number (sign, digits, point, exponent). A double needs at most ~30.
inline constexpr size_t kMaxNumberChars = 256;

// Nodes of one YAML document after alias expansion (the default PPO config has ~1000); bounds "billion laughs".
inline constexpr size_t kMaxYamlNodes = 100000;

// Token ids in tokenizer.json and vocab_size in config.json: 16x the largest real vocabulary (~262k), small
// enough that a table indexed by id stays in the hundreds of MB.
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 22;

// Throws verl::Error("json", "<where>: ... at line L, column C (limit N)") when `text` nests arrays/objects
// deeper than kMaxNestingDepth or holds a number longer than kMaxNumberChars. One linear pass, no recursion;
// string contents are skipped. Malformed JSON is left to the parser.
void check_json_limits(std::string_view text, const std::string& where);

// A short text for a JSON value (nlohmann::json or ordered_json) in an error line: a scalar as JSON (cut to 80
// characters), an array or object by its size and first keys, never serialised recursively.
template <typename Json>
std::string json_excerpt(const Json& value) {
  if (value.is_array()) return "an array of " + std::to_string(value.size()) + " elements";
  if (value.is_object()) {
    std::string out = "an object of " + std::to_string(value.size()) + " keys";
    size_t shown = 0;
    for (auto it = value.begin(); it != value.end() && shown < 4; ++it, ++shown)
      out += (shown == 0 ? " (\"" : ", \"") + it.key().substr(0, 40) + "\"";
    return shown == 0 ? out : out + (value.size() > shown ? ", ...)" : ")");
  }
  std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 80) + "...";
}

}  // namespace verl
