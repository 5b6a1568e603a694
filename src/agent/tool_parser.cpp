#include "verl/agent/tool_parser.h"

#include <cmath>
#include <limits>
#include <optional>

#include "verl/common/error.h"

namespace verl::agent {

namespace {

constexpr const char* kComponent = "agent";
constexpr const char* kStart = "<tool_call>";
constexpr const char* kEnd = "</tool_call>";

// Python's json.loads also reads the bare constants NaN, Infinity and -Infinity, which nlohmann rejects. Outside
// strings they are swapped for marker strings before parsing and turned back into doubles after.
constexpr const char* kNanMarker = "\x01verl-json-NaN";
constexpr const char* kInfMarker = "\x01verl-json-Infinity";
constexpr const char* kNegInfMarker = "\x01verl-json--Infinity";

std::string quote_python_constants(const std::string& text, bool& replaced) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    const auto at = [&](const char* word) { return text.compare(i, std::char_traits<char>::length(word), word) == 0; };
    const char* marker = nullptr;
    size_t length = 0;
    if (at("NaN")) {
      marker = kNanMarker, length = 3;
    } else if (at("Infinity")) {
      marker = kInfMarker, length = 8;
    } else if (at("-Infinity")) {
      marker = kNegInfMarker, length = 9;
    }
    if (marker == nullptr) {
      out += c;
      continue;
    }
    out += "\"\\u0001";  // the marker's leading U+0001, escaped as JSON wants control characters
    out += marker + 1;
    out += '"';
    i += length - 1;
    replaced = true;
  }
  return out;
}

void unquote_python_constants(nlohmann::ordered_json& value) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s == kNanMarker) value = std::numeric_limits<double>::quiet_NaN();
    else if (s == kInfMarker) value = std::numeric_limits<double>::infinity();
    else if (s == kNegInfMarker) value = -std::numeric_limits<double>::infinity();
  } else if (value.is_structured()) {
    for (auto& item : value) unquote_python_constants(item);
  }
}

// json.loads(text): one JSON value with optional whitespace around it; nullopt where Python raises.
std::optional<nlohmann::ordered_json> python_json_loads(const std::string& text) {
  nlohmann::ordered_json value = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded()) return value;
  bool replaced = false;
  const std::string quoted = quote_python_constants(text, replaced);
  if (!replaced) return std::nullopt;
  value = nlohmann::ordered_json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  unquote_python_constants(value);
  return value;
}

// verl's HermesToolParser (verl/experimental/agent_loop/tool_parser.py), from vLLM's hermes parser:
//   if "<tool_call>" not in text or "</tool_call>" not in text: return text, []
//   for match in re.findall(r"<tool_call>(.*?)</tool_call>", text, DOTALL):
//       call = json.loads(match); FunctionCall(name=call["name"], arguments=json.dumps(call["arguments"]))
//       (any exception: logged, the block skipped)
//   content = re.sub(r"<tool_call>(.*?)</tool_call>", "", text)
class HermesToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text) const override {
    ParsedTurn turn;
    if (text.find(kStart) == std::string::npos || text.find(kEnd) == std::string::npos) {
      turn.content = text;
      return turn;
    }
    const size_t start_len = std::char_traits<char>::length(kStart);
    const size_t end_len = std::char_traits<char>::length(kEnd);
    size_t pos = 0;  // the regex scans left to right; a match resumes after its end tag
    while (true) {
      const size_t open = text.find(kStart, pos);
      if (open == std::string::npos) break;
      const size_t close = text.find(kEnd, open + start_len);
      if (close == std::string::npos) break;  // no later end tag: no further match
      turn.content.append(text, pos, open - pos);
      add_call(text.substr(open + start_len, close - open - start_len), turn);
      pos = close + end_len;
    }
    turn.content.append(text, pos, std::string::npos);
    return turn;
  }

 private:
  static void add_call(const std::string& body, ParsedTurn& turn) {
    const std::optional<nlohmann::ordered_json> call = python_json_loads(body);
    // call["name"] / call["arguments"] raise on a non-object or a missing key; pydantic's `name: str` rejects a
    // name that is not a string (no coercion in lax mode).
    if (!call || !call->is_object() || !call->contains("name") || !call->contains("arguments") ||
        !(*call)["name"].is_string()) {
      ++turn.malformed;
      return;
    }
    turn.calls.push_back(FunctionCall{(*call)["name"].get<std::string>(), (*call)["arguments"]});
  }
};

}  // namespace

std::unique_ptr<ToolParser> ToolParser::create(const std::string& format) {
  if (format == "hermes") return std::make_unique<HermesToolParser>();
  VERL_FAIL(kComponent, "actor_rollout_ref.rollout.multi_turn.format is '", format,
            "'; the tool-call formats implemented: hermes");
}

}  // namespace verl::agent
