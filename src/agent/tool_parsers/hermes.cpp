// verl's HermesToolParser (from vLLM's hermes parser):
//   if "<tool_call>" not in text or "</tool_call>" not in text: return text, []
//   for match in re.findall(r"<tool_call>(.*?)</tool_call>", text, DOTALL):
//       call = json.loads(match); FunctionCall(name=call["name"], arguments=json.dumps(call["arguments"]))
//       (any exception: logged, the block skipped)
//   content = re.sub(r"<tool_call>(.*?)</tool_call>", "", text)
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

constexpr const char* kHermesStart = "<tool_call>";
constexpr const char* kHermesEnd = "</tool_call>";

class HermesToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& /*tools*/) const override {
    ParsedTurn turn;
    if (text.find(kHermesStart) == std::string::npos || text.find(kHermesEnd) == std::string::npos) {
      turn.content = text;
      return turn;
    }
    for (const Delimited& block : find_delimited(text, kHermesStart, kHermesEnd)) add_call(block.inner(text), turn);
    turn.content = remove_delimited(text, kHermesStart, kHermesEnd);
    return turn;
  }
  std::string class_name() const override { return "HermesToolParser"; }

 private:
  static void add_call(const std::string& body, ParsedTurn& turn) {
    const std::optional<OJson> call = python_json_loads(body);
    // call["name"] / call["arguments"] raise on a non-object or a missing key; pydantic's `name: str` rejects a
    // name that is not a string (no coercion in lax mode).
    if (!call || !call->is_object() || !call->contains("name") || !call->contains("arguments") ||
        !(*call)["name"].is_string()) {
      ++turn.malformed;
      return;
    }
    FunctionCall out;
    out.name = (*call)["name"].get<std::string>();
    out.arguments = (*call)["arguments"];
    turn.calls.push_back(std::move(out));
  }
};

}  // namespace

std::unique_ptr<ToolParser> make_hermes() { return std::make_unique<HermesToolParser>(); }

}  // namespace verl::agent::parsers
