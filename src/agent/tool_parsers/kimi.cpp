// verl's KimiToolParser (Kimi K2 family):
//   if "<|tool_calls_section_begin|>" not in text: return text, []
//   for ID, ARGS in re.findall(r"<\|tool_call_begin\|>(.*?)<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>",
//                              text, DOTALL):
//       arguments = json.loads(ARGS.strip()) if that is an object, else {}
//       FunctionCall(name=_infer_tool_name(ID.strip(), arguments, tools), arguments, tool_call_id=ID.strip())
//   content = text[:text.find("<|tool_calls_section_begin|>")]
// Kimi writes ids like "functions.get_weather:0"; the name is resolved against the tools (below).
// The turn stops at <|im_end|>.
#include "parser_support.h"

#include <algorithm>
#include <set>

namespace verl::agent::parsers {

namespace {

const std::string kSection = "<|tool_calls_section_begin|>";
const std::string kKimiBegin = "<|tool_call_begin|>";
const std::string kArguments = "<|tool_call_argument_begin|>";
const std::string kKimiEnd = "<|tool_call_end|>";

// verl's _infer_tool_name: the id itself when it names a tool; else the only tool whose lowercased name is in the
// lowercased id ("-" read as "_"); else the only tool whose non-empty `required` list the arguments cover; else
// the id.
std::string infer_tool_name(const std::string& raw, const OJson& arguments, const OJson& tools) {
  if (!tools.is_array() || tools.empty()) return raw;
  std::vector<const OJson*> functions;
  for (const OJson& tool : tools) {
    if (tool.is_object() && tool.value("type", "") == "function" && tool.contains("function")) {
      functions.push_back(&tool["function"]);
    }
  }
  const auto name_of = [](const OJson* f) { return f->value("name", std::string()); };
  for (const OJson* f : functions) {
    if (name_of(f) == raw) return raw;
  }
  std::string compact = py_lower(raw);
  std::replace(compact.begin(), compact.end(), '-', '_');
  std::vector<std::string> substring_matches;
  for (const OJson* f : functions) {
    if (compact.find(py_lower(name_of(f))) != std::string::npos) substring_matches.push_back(name_of(f));
  }
  if (substring_matches.size() == 1) return substring_matches[0];
  std::set<std::string> keys;
  for (const auto& item : arguments.items()) keys.insert(item.key());
  std::vector<std::string> schema_matches;
  for (const OJson* f : functions) {
    const OJson parameters = f->value("parameters", OJson::object());
    const OJson required = parameters.is_object() ? parameters.value("required", OJson::array()) : OJson::array();
    if (!required.is_array() || required.empty()) continue;
    bool covered = true;
    for (const OJson& r : required) covered = covered && r.is_string() && keys.count(r.get<std::string>()) > 0;
    if (covered) schema_matches.push_back(name_of(f));
  }
  if (schema_matches.size() == 1) return schema_matches[0];
  return raw;
}

class KimiToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& tools) const override {
    ParsedTurn turn;
    const size_t section = text.find(kSection);
    if (section == std::string::npos) {
      turn.content = text;
      return turn;
    }
    // The lazy ID runs to the first argument marker, ARGS to the first end marker after it; without them no later
    // call can match either.
    for (size_t at = text.find(kKimiBegin); at != std::string::npos; at = text.find(kKimiBegin, at)) {
      const size_t arguments_at = text.find(kArguments, at + kKimiBegin.size());
      if (arguments_at == std::string::npos) break;
      const size_t end = text.find(kKimiEnd, arguments_at + kArguments.size());
      if (end == std::string::npos) break;
      const std::string id = py_strip(text.substr(at + kKimiBegin.size(), arguments_at - at - kKimiBegin.size()));
      const size_t args_begin = arguments_at + kArguments.size();
      std::optional<OJson> arguments = python_json_loads(py_strip(text.substr(args_begin, end - args_begin)));
      FunctionCall call;
      call.arguments = arguments && arguments->is_object() ? std::move(*arguments) : OJson::object();
      call.name = infer_tool_name(id, call.arguments, tools);
      call.tool_call_id = id;
      turn.calls.push_back(std::move(call));
      at = end + kKimiEnd.size();
    }
    turn.content = text.substr(0, section);
    return turn;
  }
  std::vector<std::string> stop_tokens() const override { return {"<|im_end|>"}; }
  std::string class_name() const override { return "KimiToolParser"; }
};

}  // namespace

std::unique_ptr<ToolParser> make_kimi() { return std::make_unique<KimiToolParser>(); }

}  // namespace verl::agent::parsers
