// verl's Gemma4ToolParser (Gemma 4):
//   text = decode(ids, skip_special_tokens=False) without the pad token
//   if "<|tool_call>" not in text: return text, []
//   calls = re.findall(r"<\|tool_call>call:(\w+)\{(.*?)\}<tool_call\|>", text, DOTALL); none: return text, []
//   arguments: re.finditer(r'(\w+):(?:<\|"\|>(.*?)<\|"\|>|([^,}]*))', ARGS), without DOTALL: a quoted value as
//              is; a bare one stripped, then true / false / null (any case), int(), float(), or the text
//   content = text[:text.find("<|tool_call>")]
// The turn stops at <tool_call|> (Gemma 4 writes no eos after a call). `\w` is the `regex` package's
// (is_regex_word).
#include "parser_support.h"

#include "verl/reward/scorers/py_str.h"

namespace verl::agent::parsers {

namespace {

const std::string kGemmaOpen = "<|tool_call>";
const std::string kGemmaCall = "<|tool_call>call:";
const std::string kGemmaClose = "}<tool_call|>";
const std::u32string kQuote = U"<|\"|>";

// The end of the `\w` run of UTF-8 `text` starting at byte `pos`.
size_t word_end(const std::string& text, size_t pos) {
  while (pos < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[pos]);
    const size_t width = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    const std::u32string cp = reward::py::decode(text.substr(pos, width));
    if (cp.size() != 1 || !is_regex_word(cp[0])) break;
    pos += width;
  }
  return pos;
}

OJson bare_value(const std::string& raw) {
  const std::string value = py_strip(raw);
  const std::string lowered = py_lower(value);
  if (lowered == "true") return true;
  if (lowered == "false") return false;
  if (lowered == "null") return nullptr;
  if (std::optional<OJson> number = python_int(value)) return std::move(*number);
  if (std::optional<OJson> number = python_float(value)) return std::move(*number);
  return value;
}

// The arguments' finditer, on code points (`\w`, and the scan's steps, are per code point).
OJson parse_arguments(const std::string& utf8) {
  const std::u32string args = reward::py::decode(utf8);
  OJson out = OJson::object();
  size_t pos = 0;
  while (pos < args.size()) {
    if (!is_regex_word(args[pos])) {
      ++pos;
      continue;
    }
    size_t key_end = pos;
    while (key_end < args.size() && is_regex_word(args[key_end])) ++key_end;
    if (key_end >= args.size() || args[key_end] != U':') {
      pos = key_end;  // every start inside this run ends at the same place
      continue;
    }
    const std::string key = reward::py::encode(args.substr(pos, key_end - pos));
    const size_t value = key_end + 1;
    if (args.compare(value, kQuote.size(), kQuote) == 0) {
      // The arguments regex has no DOTALL: a quoted value ends before any "\n".
      const size_t closing = args.find(kQuote, value + kQuote.size());
      if (closing != std::u32string::npos && args.find(U'\n', value) > closing) {
        out[key] = reward::py::encode(args.substr(value + kQuote.size(), closing - value - kQuote.size()));
        pos = closing + kQuote.size();
        continue;
      }
    }
    size_t bare_end = value;
    while (bare_end < args.size() && args[bare_end] != U',' && args[bare_end] != U'}') ++bare_end;
    out[key] = bare_value(reward::py::encode(args.substr(value, bare_end - value)));
    pos = bare_end;
  }
  return out;
}

class Gemma4ToolParser : public ToolParser {
 public:
  explicit Gemma4ToolParser(std::string pad_token) : pad_token_(std::move(pad_token)) {}

  ParsedTurn parse(const std::string& decoded, const OJson& /*tools*/) const override {
    const std::string text = without_pad(decoded, pad_token_);
    ParsedTurn turn;
    const size_t start = text.find(kGemmaOpen);
    if (start == std::string::npos) {
      turn.content = text;
      return turn;
    }
    for (size_t at = text.find(kGemmaCall); at != std::string::npos;) {
      const size_t name = at + kGemmaCall.size();
      const size_t name_end = word_end(text, name);
      if (name_end == name || name_end >= text.size() || text[name_end] != '{') {
        at = text.find(kGemmaCall, at + 1);
        continue;
      }
      const size_t closing = text.find(kGemmaClose, name_end + 1);
      if (closing == std::string::npos) break;  // no later call can close either
      FunctionCall call;
      call.name = text.substr(name, name_end - name);
      call.arguments = parse_arguments(text.substr(name_end + 1, closing - name_end - 1));
      turn.calls.push_back(std::move(call));
      at = text.find(kGemmaCall, closing + kGemmaClose.size());
    }
    turn.content = turn.calls.empty() ? text : text.substr(0, start);
    return turn;
  }
  std::vector<std::string> stop_tokens() const override { return {"<tool_call|>"}; }
  std::string class_name() const override { return "Gemma4ToolParser"; }

 private:
  std::string pad_token_;
};

}  // namespace

std::unique_ptr<ToolParser> make_gemma4(std::string pad_token) {
  return std::make_unique<Gemma4ToolParser>(std::move(pad_token));
}

}  // namespace verl::agent::parsers
