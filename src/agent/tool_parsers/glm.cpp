// verl's GLMToolParser (GLM-4.5 and later):
//   if "<tool_call>" not in text or "</tool_call>" not in text: return text, []
//   for block in re.findall(r"<tool_call>(.*?)</tool_call>", text, DOTALL):
//       NAME = block[:block.find("<arg_key>")].strip() (the whole block stripped when there is none)
//       pairs: re.findall(r"<arg_key>(.*?)</arg_key>\s*<arg_value>(.*?)</arg_value>", rest, DOTALL):
//              {key.strip(): json.loads(value.strip()) or the stripped text}
//   content = text[:text.find("<tool_call>")] without a leading "<think>...</think>" or "</think>"
// The turn stops at <|observation|> (its stop_token_ids).
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

const std::string kGlmOpen = "<tool_call>";
const std::string kGlmClose = "</tool_call>";
const std::string kKeyOpen = "<arg_key>";
const std::string kKeyClose = "</arg_key>";
const std::string kValueOpen = "<arg_value>";
const std::string kValueClose = "</arg_value>";

// re.findall of the pair regex. The lazy key runs to the first </arg_key> followed by `\s*<arg_value>`; the value
// to the first </arg_value> after that. Without one, no later start can match either.
std::vector<std::pair<std::string, std::string>> find_pairs(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = 0;
  while (true) {
    const size_t at = text.find(kKeyOpen, pos);
    if (at == std::string::npos) break;
    const size_t key = at + kKeyOpen.size();
    size_t value = std::string::npos, key_close = key;
    for (size_t k = text.find(kKeyClose, key); k != std::string::npos; k = text.find(kKeyClose, k + 1)) {
      const size_t v = skip_regex_space(text, k + kKeyClose.size());
      if (text.compare(v, kValueOpen.size(), kValueOpen) == 0) {
        key_close = k;
        value = v + kValueOpen.size();
        break;
      }
    }
    if (value == std::string::npos) break;
    const size_t value_close = text.find(kValueClose, value);
    if (value_close == std::string::npos) break;
    out.emplace_back(text.substr(key, key_close - key), text.substr(value, value_close - value));
    pos = value_close + kValueClose.size();
  }
  return out;
}

// verl's _strip_thinking_markers: re.sub(r"^\s*<think>.*?</think>", "", c, DOTALL), then re.sub(r"^\s*</think>").
std::string strip_thinking_markers(std::string content) {
  size_t p = skip_regex_space(content, 0);
  if (content.compare(p, 7, "<think>") == 0) {
    const size_t close = content.find("</think>", p + 7);
    if (close != std::string::npos) content.erase(0, close + 8);
  }
  p = skip_regex_space(content, 0);
  if (content.compare(p, 8, "</think>") == 0) content.erase(0, p + 8);
  return content;
}

class GLMToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& /*tools*/) const override {
    ParsedTurn turn = parse_tagged_blocks(text, kGlmOpen, kGlmClose, [](const std::string& body, ParsedTurn& out) {
      FunctionCall call;
      call.arguments = OJson::object();
      const size_t first_key = body.find(kKeyOpen);
      if (first_key == std::string::npos) {
        call.name = py_strip(body);
      } else {
        call.name = py_strip(body.substr(0, first_key));
        for (const auto& [key, value] : find_pairs(body.substr(first_key))) {
          call.arguments[py_strip(key)] = stripped_json_or_text(value);
        }
      }
      out.calls.push_back(std::move(call));
    });
    const bool tagged = text.find(kGlmOpen) != std::string::npos && text.find(kGlmClose) != std::string::npos;
    if (tagged) turn.content = strip_thinking_markers(turn.content);  // only the content before the calls
    return turn;
  }
  std::vector<std::string> stop_tokens() const override { return {"<|observation|>"}; }
  std::string class_name() const override { return "GLMToolParser"; }
};

}  // namespace

std::unique_ptr<ToolParser> make_glm() { return std::make_unique<GLMToolParser>(); }

}  // namespace verl::agent::parsers
