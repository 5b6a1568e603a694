// verl's DeepSeekV4ToolParser (DSML):
//   text = decode(ids, skip_special_tokens=False) without the pad token and <｜end▁of▁sentence｜>
//   if "<｜DSML｜tool_calls>" not in text: return strip_reasoning(text), []
//   for block in re.findall(r"<｜DSML｜tool_calls>(.*?)</｜DSML｜tool_calls>", text, DOTALL):
//       for NAME, body in re.findall(r'<｜DSML｜invoke name="(.*?)">(.*?)</｜DSML｜invoke>', block, DOTALL):
//           re.findall(r'<｜DSML｜parameter name="(.*?)" string="(true|false)">(.*?)</｜DSML｜parameter>', body):
//           string="true": the text as is; "false": json.loads(text), else the text
//   content = strip_reasoning(text[:text.index("<｜DSML｜tool_calls>")]).removesuffix("\n\n")
// strip_reasoning keeps what follows the last "</think>" (all of it when there is none).
#include "parser_support.h"

#include "verl/reward/scorers/py_str.h"

namespace verl::agent::parsers {

namespace {

const std::string kDsmlOpen = "<｜DSML｜tool_calls>";
const std::string kDsmlClose = "</｜DSML｜tool_calls>";
const std::string kInvoke = "<｜DSML｜invoke name=\"";
const std::string kInvokeClose = "</｜DSML｜invoke>";
const std::string kParameter = "<｜DSML｜parameter name=\"";
const std::string kDsmlParameterClose = "</｜DSML｜parameter>";
const std::string kEos = "<｜end▁of▁sentence｜>";

std::string strip_reasoning(const std::string& text) {
  const size_t think = text.rfind("</think>");
  return think == std::string::npos ? text : text.substr(think + 8);
}

struct Parameter {
  std::string name, value;
  bool is_string;
};

// The parameter regex: the lazy name runs to the first `" string="true">` or `" string="false">` and the value to
// the first closing tag after it; without them no later parameter matches either.
std::vector<Parameter> find_parameters(const std::string& body) {
  std::vector<Parameter> out;
  for (size_t at = body.find(kParameter); at != std::string::npos; at = body.find(kParameter, at)) {
    const size_t name = at + kParameter.size();
    size_t value = std::string::npos, name_end = 0;
    bool is_string = false;
    for (size_t q = body.find("\" string=\"", name); q != std::string::npos; q = body.find("\" string=\"", q + 1)) {
      if (body.compare(q + 10, 6, "true\">") == 0) {
        name_end = q, value = q + 16, is_string = true;
        break;
      }
      if (body.compare(q + 10, 7, "false\">") == 0) {
        name_end = q, value = q + 17, is_string = false;
        break;
      }
    }
    if (value == std::string::npos) break;
    const size_t closing = body.find(kDsmlParameterClose, value);
    if (closing == std::string::npos) break;
    out.push_back({body.substr(name, name_end - name), body.substr(value, closing - value), is_string});
    at = closing + kDsmlParameterClose.size();
  }
  return out;
}

class DeepSeekV4ToolParser : public ToolParser {
 public:
  explicit DeepSeekV4ToolParser(std::string pad_token) : pad_token_(std::move(pad_token)) {}

  ParsedTurn parse(const std::string& decoded, const OJson& /*tools*/) const override {
    const std::string text = reward::py::replace(without_pad(decoded, pad_token_), kEos, "");
    ParsedTurn turn;
    const size_t start = text.find(kDsmlOpen);
    if (start == std::string::npos) {
      turn.content = strip_reasoning(text);
      return turn;
    }
    for (const Delimited& block : find_delimited(text, kDsmlOpen, kDsmlClose)) {
      const std::string calls = block.inner(text);
      // The invoke regex: the lazy name runs to the first `">`, the body to the first closing tag after it.
      for (size_t at = calls.find(kInvoke); at != std::string::npos; at = calls.find(kInvoke, at)) {
        const size_t name = at + kInvoke.size();
        const size_t quote = calls.find("\">", name);
        if (quote == std::string::npos) break;
        const size_t closing = calls.find(kInvokeClose, quote + 2);
        if (closing == std::string::npos) break;
        FunctionCall call;
        call.name = calls.substr(name, quote - name);
        call.arguments = OJson::object();
        for (Parameter& p : find_parameters(calls.substr(quote + 2, closing - quote - 2))) {
          std::optional<OJson> parsed = p.is_string ? std::nullopt : python_json_loads(p.value);
          call.arguments[p.name] = parsed ? std::move(*parsed) : OJson(std::move(p.value));
        }
        turn.calls.push_back(std::move(call));
        at = closing + kInvokeClose.size();
      }
    }
    turn.content = strip_reasoning(text.substr(0, start));
    if (turn.content.size() >= 2 && turn.content.compare(turn.content.size() - 2, 2, "\n\n") == 0) {
      turn.content.resize(turn.content.size() - 2);
    }
    return turn;
  }
  std::string class_name() const override { return "DeepSeekV4ToolParser"; }

 private:
  std::string pad_token_;
};

}  // namespace

std::unique_ptr<ToolParser> make_deepseek_v4(std::string pad_token) {
  return std::make_unique<DeepSeekV4ToolParser>(std::move(pad_token));
}

}  // namespace verl::agent::parsers
