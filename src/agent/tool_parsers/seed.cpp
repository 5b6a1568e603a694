// verl's SeedToolParser (ByteDance Seed):
//   if "<seed:tool_call>" not in text or "</seed:tool_call>" not in text: return text, []
//   for block in re.findall(r"<seed:tool_call>(.*?)</seed:tool_call>", text, DOTALL):
//       m = re.search(r"<function=([^>\n]+)>\s*(.*?)</function>", block, DOTALL)  (none: no call)
//       NAME = m[1].strip(); re.findall(r"<parameter=([^>\n]+)>(.*?)</parameter>", m[2], DOTALL):
//       {key.strip(): json.loads(value.strip()) or the stripped text}
//   content = text[:text.find("<seed:tool_call>")]
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

const std::string kSeedOpen = "<seed:tool_call>";
const std::string kSeedClose = "</seed:tool_call>";

struct TagMatch {
  size_t end;  // where the scan resumes
  std::string name, body;
};

// `<TAG=([^>\n]+)>` + (skip `\s*` when `skip_space`) + `(.*?)CLOSE` at `at` (an occurrence of OPEN = "<TAG=").
// `[^>\n]+` must end at a ">", so it is the whole run up to the first ">" or "\n".
std::optional<TagMatch> match_tag(const std::string& text, size_t at, const std::string& open, const std::string& close,
                                  bool skip_space) {
  const size_t name = at + open.size();
  const size_t gt = text.find_first_of(">\n", name);
  if (gt == std::string::npos || gt == name || text[gt] != '>') return std::nullopt;
  const size_t body = skip_space ? skip_regex_space(text, gt + 1) : gt + 1;
  const size_t closing = text.find(close, body);
  if (closing == std::string::npos) return std::nullopt;
  return TagMatch{closing + close.size(), text.substr(name, gt - name), text.substr(body, closing - body)};
}

class SeedToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& /*tools*/) const override {
    return parse_tagged_blocks(text, kSeedOpen, kSeedClose, [](const std::string& body, ParsedTurn& turn) {
      std::optional<TagMatch> function;  // re.search: the first <function=...> that matches
      for (size_t at = body.find("<function="); at != std::string::npos && !function;
           at = body.find("<function=", at + 1)) {
        function = match_tag(body, at, "<function=", "</function>", /*skip_space=*/true);
      }
      if (!function) {
        ++turn.malformed;
        return;
      }
      FunctionCall call;
      call.name = py_strip(function->name);
      call.arguments = OJson::object();
      for (size_t at = function->body.find("<parameter="); at != std::string::npos;) {
        std::optional<TagMatch> parameter = match_tag(function->body, at, "<parameter=", "</parameter>", false);
        if (!parameter) {
          at = function->body.find("<parameter=", at + 1);
          continue;
        }
        call.arguments[py_strip(parameter->name)] = stripped_json_or_text(parameter->body);
        at = function->body.find("<parameter=", parameter->end);
      }
      turn.calls.push_back(std::move(call));
    });
  }
  std::string class_name() const override { return "SeedToolParser"; }
};

}  // namespace

std::unique_ptr<ToolParser> make_seed() { return std::make_unique<SeedToolParser>(); }

}  // namespace verl::agent::parsers
