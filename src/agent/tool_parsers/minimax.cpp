// verl's MiniMaxToolParser:
//   if "<minimax:tool_call>" not in text or "</minimax:tool_call>" not in text: return text, []
//   for block in re.findall(r"<minimax:tool_call>(.*?)</minimax:tool_call>", text, DOTALL):
//       for NAME, body in re.findall(r'<invoke name="([^"]+)">\s*(.*?)</invoke>', block, DOTALL):
//           re.findall(r'<parameter name="([^"]+)">(.*?)</parameter>', body, DOTALL):
//           {key.strip(): json.loads(value.strip()) or the stripped text}; the call's name NAME.strip()
//   content = text[:text.find("<minimax:tool_call>")]
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

const std::string kMinimaxOpen = "<minimax:tool_call>";
const std::string kMinimaxClose = "</minimax:tool_call>";

// re.findall(OPEN + '([^"]+)">' + (`\s*` when skip_space) + '(.*?)' + CLOSE): `[^"]+` must end at `">`, so the
// name is the run up to the first '"'.
std::vector<std::pair<std::string, std::string>> find_named(const std::string& text, const std::string& open,
                                                            const std::string& close, bool skip_space) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t at = text.find(open); at != std::string::npos;) {
    const size_t name = at + open.size();
    const size_t quote = text.find('"', name);
    if (quote != std::string::npos && quote > name && text.compare(quote, 2, "\">") == 0) {
      const size_t body = skip_space ? skip_regex_space(text, quote + 2) : quote + 2;
      const size_t closing = text.find(close, body);
      if (closing != std::string::npos) {
        out.emplace_back(text.substr(name, quote - name), text.substr(body, closing - body));
        at = text.find(open, closing + close.size());
        continue;
      }
    }
    at = text.find(open, at + 1);
  }
  return out;
}

class MiniMaxToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& /*tools*/) const override {
    return parse_tagged_blocks(text, kMinimaxOpen, kMinimaxClose, [](const std::string& block, ParsedTurn& turn) {
      for (const auto& [name, body] : find_named(block, "<invoke name=\"", "</invoke>", true)) {
        FunctionCall call;
        call.name = py_strip(name);
        call.arguments = OJson::object();
        for (const auto& [key, value] : find_named(body, "<parameter name=\"", "</parameter>", false)) {
          call.arguments[py_strip(key)] = stripped_json_or_text(value);
        }
        turn.calls.push_back(std::move(call));
      }
    });
  }
  std::string class_name() const override { return "MiniMaxToolParser"; }
};

}  // namespace

std::unique_ptr<ToolParser> make_minimax() { return std::make_unique<MiniMaxToolParser>(); }

}  // namespace verl::agent::parsers
