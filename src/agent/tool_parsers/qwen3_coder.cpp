// verl's Qwen3XMLToolParser (qwen3_coder; from Qwen3-Coder's qwen3coder_tool_parser.py):
//   if "<tool_call>" not in text: return text, []
//   blocks:     re.findall(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*?)$", text, DOTALL)
//   functions:  re.findall(r"<function=(.*?)</function>|<function=(.*)$", block, DOTALL)
//   each: NAME up to the first ">" (none: skipped), then
//   parameters: re.findall(r"<parameter=(.*?)</parameter>|<parameter=(.*?)$", rest, DOTALL): KEY up to the first
//               ">" (none: skipped), the value with one leading and one trailing "\n" removed, converted by the
//               tool schema's type for KEY (convert_param_value below)
//   content = text[:text.find("<tool_call>")]; any exception (a value json.dumps cannot write): return text, []
// `$` without MULTILINE also matches before a final "\n", so an unclosed lazy match stops there.
#include "parser_support.h"

namespace verl::agent::parsers {

namespace {

const std::string kBlockOpen = "<tool_call>";
const std::string kBlockClose = "</tool_call>";
const std::string kFunctionOpen = "<function=";
const std::string kFunctionClose = "</function>";
const std::string kParameterOpen = "<parameter=";
const std::string kQwenParameterClose = "</parameter>";

// The lazy `$` of an unclosed match starting at `from`: before a final "\n", else the end.
size_t lazy_end(const std::string& text, size_t from) {
  return !text.empty() && text.back() == '\n' && text.size() - 1 >= from ? text.size() - 1 : text.size();
}

// re.findall(OPEN(.*?)CLOSE|OPEN(.*?)$) (lazy_tail) or re.findall(OPEN(.*?)CLOSE|OPEN(.*)$) (greedy tail).
std::vector<std::string> find_closed_or_tail(const std::string& text, const std::string& open, const std::string& close,
                                             bool lazy_tail) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t at = text.find(open, pos);
    if (at == std::string::npos) break;
    const size_t inner = at + open.size();
    const size_t closing = text.find(close, inner);
    if (closing != std::string::npos) {
      out.push_back(text.substr(inner, closing - inner));
      pos = closing + close.size();
      continue;
    }
    const size_t end = lazy_tail ? lazy_end(text, inner) : text.size();
    out.push_back(text.substr(inner, end - inner));
    pos = end;  // the match is never empty (it holds OPEN): the scan resumes at its end
  }
  return out;
}

// Thrown where verl's json.dumps raises (the whole turn then has no calls).
struct NotSerializable {};

// verl's convert_param_value: the value by the type the tool's schema gives KEY.
OJson convert_param_value(const std::string& value, const std::string& key, const OJson* properties) {
  if (py_lower(value) == "null") return nullptr;
  if (properties == nullptr || !properties->is_object() || !properties->contains(key)) return value;
  const OJson& config = (*properties)[key];
  std::string type = "string";
  if (config.is_object() && config.contains("type")) {
    const OJson& t = config["type"];
    // str(list) starts with "[", a type no branch below names but the last.
    type = py_lower(py_strip(t.is_string() ? t.get<std::string>() : "[" + t.dump()));
  }
  if (type == "string" || type == "str" || type == "text" || type == "varchar" || type == "char" || type == "enum") {
    return value;
  }
  if (starts_with(type, "int") || starts_with(type, "uint") || starts_with(type, "long") ||
      starts_with(type, "short") || starts_with(type, "unsigned")) {
    std::optional<OJson> number = python_int(value);
    return number ? std::move(*number) : OJson(value);
  }
  if (starts_with(type, "num") || starts_with(type, "float")) {
    std::optional<OJson> number = python_integral_float(value);
    return number ? std::move(*number) : OJson(value);
  }
  if (type == "boolean" || type == "bool" || type == "binary") return py_lower(value) == "true";
  if (type == "object" || starts_with(type, "dict")) {
    if (std::optional<OJson> object = python_json_loads(value)) return std::move(*object);
  }
  const LiteralValue literal = python_literal_eval(value);
  if (!literal.evaluated) return value;
  if (!literal.json) throw NotSerializable{};
  return *literal.json;
}

class Qwen3XMLToolParser : public ToolParser {
 public:
  ParsedTurn parse(const std::string& text, const OJson& tools) const override {
    ParsedTurn turn;
    const size_t start = text.find(kBlockOpen);
    if (start == std::string::npos) {
      turn.content = text;
      return turn;
    }
    std::vector<std::string> blocks = find_closed_or_tail(text, kBlockOpen, kBlockClose, /*lazy_tail=*/true);
    if (blocks.empty()) blocks.push_back(text);
    std::vector<std::string> functions;
    for (const std::string& block : blocks) {
      for (std::string& f : find_closed_or_tail(block, kFunctionOpen, kFunctionClose, /*lazy_tail=*/false)) {
        functions.push_back(std::move(f));
      }
    }
    if (functions.empty()) {
      turn.content = text;
      return turn;
    }
    try {
      for (const std::string& function : functions) {
        std::optional<FunctionCall> call = parse_function(function, tools);
        if (call) {
          turn.calls.push_back(std::move(*call));
        } else {
          ++turn.malformed;
        }
      }
    } catch (const NotSerializable&) {
      return ParsedTurn{text, {}, static_cast<int64_t>(functions.size())};
    }
    turn.content = text.substr(0, start);
    return turn;
  }
  std::string class_name() const override { return "Qwen3XMLToolParser"; }

 private:
  static std::optional<FunctionCall> parse_function(const std::string& function, const OJson& tools) {
    const size_t name_end = function.find('>');
    if (name_end == std::string::npos) return std::nullopt;  // a truncated header
    FunctionCall call;
    call.name = function.substr(0, name_end);
    const OJson* schema = find_function_schema(tools, call.name);
    const OJson* properties = nullptr;
    if (schema != nullptr && schema->contains("parameters") && (*schema)["parameters"].is_object() &&
        (*schema)["parameters"].contains("properties")) {
      properties = &(*schema)["parameters"]["properties"];
    }
    call.arguments = OJson::object();
    const std::string rest = function.substr(name_end + 1);
    for (const std::string& parameter : find_closed_or_tail(rest, kParameterOpen, kQwenParameterClose, true)) {
      const size_t key_end = parameter.find('>');
      if (key_end == std::string::npos) continue;  // verl skips it with a warning
      std::string value = parameter.substr(key_end + 1);
      if (!value.empty() && value.front() == '\n') value.erase(0, 1);
      if (!value.empty() && value.back() == '\n') value.pop_back();
      const std::string key = parameter.substr(0, key_end);
      call.arguments[key] = convert_param_value(value, key, properties);
    }
    return call;
  }
};

}  // namespace

std::unique_ptr<ToolParser> make_qwen3_coder() { return std::make_unique<Qwen3XMLToolParser>(); }

}  // namespace verl::agent::parsers
