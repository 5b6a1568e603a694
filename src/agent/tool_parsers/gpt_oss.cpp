// verl's GptOssToolParser (from SGLang's gpt-oss detector), on the harmony format:
//   text = decode(ids, skip_special_tokens=False).replace(pad_token, "")
//   text = re.sub(r"<\|start\|>assistant<\|channel\|>analysis<\|message\|>.*?<\|end\|>", "", text)  # reasoning
//   text = re.sub(r"<\|channel\|>analysis<\|message\|>(.*?)<\|end\|>", "", text)  # its prompt-side opening
//   calls: re.findall(r"<\|start\|>assistant<\|channel\|>[^<]* to=functions\.([^<]+) "
//                     r"<\|constrain\|>json<\|message\|>(.*?)<\|call\|>", text, DOTALL): (name, arguments text)
//   none: return text, []; else content = the text with those matches removed
// The arguments text is passed on unchecked (the tool step reads it as JSON).
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

constexpr const char* kAnalysis = "<|start|>assistant<|channel|>analysis<|message|>";
constexpr const char* kPartialAnalysis = "<|channel|>analysis<|message|>";
constexpr const char* kGptOssEnd = "<|end|>";
const std::string kCallStart = "<|start|>assistant<|channel|>";
const std::string kRecipient = " to=functions.";
const std::string kConstrain = "<|constrain|>json<|message|>";
const std::string kGptOssCall = "<|call|>";

struct CallMatch {
  size_t begin, end;
  std::string name, arguments;
};

// The tool-call regex at `at` (an occurrence of kCallStart). `[^<]*` and `([^<]+) ` cannot pass a '<', so the
// header is the run up to the next '<', which must open <|constrain|>: it ends with " ", and the greedy `[^<]*`
// takes the last " to=functions." that leaves a non-empty name before that space.
std::optional<CallMatch> match_call(const std::string& text, size_t at) {
  const size_t header = at + kCallStart.size();
  const size_t lt = text.find('<', header);
  if (lt == std::string::npos || lt == header || text[lt - 1] != ' ') return std::nullopt;
  if (text.compare(lt, kConstrain.size(), kConstrain) != 0) return std::nullopt;
  const std::string head = text.substr(header, lt - 1 - header);  // without the trailing space
  size_t recipient = head.rfind(kRecipient);
  while (recipient != std::string::npos && recipient + kRecipient.size() >= head.size()) {
    recipient = recipient == 0 ? std::string::npos : head.rfind(kRecipient, recipient - 1);
  }
  if (recipient == std::string::npos) return std::nullopt;
  const size_t arguments = lt + kConstrain.size();
  const size_t call = text.find(kGptOssCall, arguments);
  if (call == std::string::npos) return std::nullopt;
  return CallMatch{at, call + kGptOssCall.size(), head.substr(recipient + kRecipient.size()),
                   text.substr(arguments, call - arguments)};
}

class GptOssToolParser : public ToolParser {
 public:
  explicit GptOssToolParser(std::string pad_token) : pad_token_(std::move(pad_token)) {}

  ParsedTurn parse(const std::string& decoded, const OJson& /*tools*/) const override {
    std::string text = without_pad(decoded, pad_token_);
    text = remove_delimited(text, kAnalysis, kGptOssEnd);
    text = remove_delimited(text, kPartialAnalysis, kGptOssEnd);
    std::vector<CallMatch> matches;
    for (size_t pos = 0;;) {
      const size_t at = text.find(kCallStart, pos);
      if (at == std::string::npos) break;
      std::optional<CallMatch> m = match_call(text, at);
      if (!m) {
        pos = at + 1;
        continue;
      }
      pos = m->end;
      matches.push_back(std::move(*m));
    }
    ParsedTurn turn;
    size_t pos = 0;
    for (CallMatch& m : matches) {
      turn.content.append(text, pos, m.begin - pos);
      pos = m.end;
      FunctionCall call;
      call.name = std::move(m.name);
      std::optional<OJson> arguments = python_json_loads(m.arguments);
      call.arguments_not_json = !arguments;
      call.arguments = arguments ? std::move(*arguments) : OJson(m.arguments);
      call.raw_arguments = std::move(m.arguments);
      turn.calls.push_back(std::move(call));
    }
    turn.content.append(text, pos, std::string::npos);
    return turn;
  }
  std::string class_name() const override { return "GptOssToolParser"; }

 private:
  std::string pad_token_;
};

}  // namespace

std::unique_ptr<ToolParser> make_gpt_oss(std::string pad_token) {
  return std::make_unique<GptOssToolParser>(std::move(pad_token));
}

}  // namespace verl::agent::parsers
