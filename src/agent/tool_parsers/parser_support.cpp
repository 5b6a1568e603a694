#include "parser_support.h"

#include <cmath>
#include <limits>

#include <pybind11/pybind11.h>

#include "verl/python/interpreter.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::agent::parsers {

namespace py = pybind11;

namespace {

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

void unquote_python_constants(OJson& value) {
  if (value.is_string()) {
    const auto& s = value.get_ref<const std::string&>();
    if (s == kNanMarker)
      value = std::numeric_limits<double>::quiet_NaN();
    else if (s == kInfMarker)
      value = std::numeric_limits<double>::infinity();
    else if (s == kNegInfMarker)
      value = -std::numeric_limits<double>::infinity();
  } else if (value.is_structured()) {
    for (auto& item : value) unquote_python_constants(item);
  }
}

// verl's conversions, written as verl writes them; each returns json.dumps of the value or None where verl's
// code catches an exception.
constexpr const char* kValuesSource = R"PY(
import ast
import json


def as_int(text):
    try:
        return json.dumps(int(text))
    except Exception:
        return None


def as_float(text):
    try:
        return json.dumps(float(text))
    except Exception:
        return None


def as_integral_float(text):
    try:
        value = float(text)
        return json.dumps(value if value - int(value) != 0 else int(value))
    except Exception:
        return None


def loads_dumps(text):
    """json.loads(text) written back as JSON this side reads (None where Python raises or the value does not encode)."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False).encode("utf-8").decode("utf-8")
    except Exception:
        return None


def dumps(text):
    return json.dumps(json.loads(text), ensure_ascii=False)


def as_literal(text):
    try:
        value = ast.literal_eval(text)
    except Exception:
        return (False, None)
    try:
        return (True, json.dumps(value, ensure_ascii=False))
    except Exception:
        return (True, None)
)PY";

py::object values_module() {
  py::dict modules = py::module_::import("sys").attr("modules");
  if (modules.contains("_verl_cpp_tool_values")) return modules["_verl_cpp_tool_values"];
  py::module_ module = py::module_::import("types").attr("ModuleType")("_verl_cpp_tool_values");
  module.attr("__builtins__") = py::module_::import("builtins");
  py::exec(kValuesSource, module.attr("__dict__"));
  modules["_verl_cpp_tool_values"] = module;
  return std::move(module);
}

std::optional<OJson> call_value_function(const char* function, const std::string& text) {
  const std::optional<std::string> dumped = python::with_gil("agent", [&]() -> std::optional<std::string> {
    py::object result = values_module().attr(function)(py::str(text));
    if (result.is_none()) return std::nullopt;
    return result.cast<std::string>();
  });
  if (!dumped) return std::nullopt;
  return python_json_loads(*dumped);
}

bool is_regex_space(char32_t c) { return reward::py::is_space(c) && !(c >= 0x1c && c <= 0x1f); }

// JSON text Python reads back as the same value: nlohmann writes NaN / inf as null, Python's json wants NaN, Infinity.
std::string python_readable_json(const OJson& value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double v = value.get<double>();
    return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
  }
  if (value.is_object()) {
    std::string out = "{";
    for (const auto& item : value.items()) {
      if (out.size() > 1) out += ",";
      out += OJson(item.key()).dump(-1, ' ', false, OJson::error_handler_t::replace) + ":" +
             python_readable_json(item.value());
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (const auto& item : value) out += (out.size() > 1 ? "," : "") + python_readable_json(item);
    return out + "]";
  }
  return value.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

}  // namespace

std::optional<OJson> python_json_loads(const std::string& text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) return std::nullopt;  // Python: "Unexpected UTF-8 BOM"
  OJson value = OJson::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded()) return value;
  bool replaced = false;
  const std::string quoted = quote_python_constants(text, replaced);
  if (replaced) {
    value = OJson::parse(quoted, nullptr, /*allow_exceptions=*/false);
    if (!value.is_discarded()) {
      unquote_python_constants(value);
      return value;
    }
  }
  // What nlohmann refuses and Python may read (1e400 is inf there): Python's own reading, written back. Text that
  // cannot start a JSON value, or is not UTF-8 (Python never sees such text), is refused here.
  const size_t first = text.find_first_not_of(" \t\n\r");
  if (first == std::string::npos || std::string("{[\"-0123456789tfnNI").find(text[first]) == std::string::npos ||
      reward::py::sanitize_utf8(text) != text) {
    return std::nullopt;
  }
  const std::optional<std::string> rewritten = python::with_gil("agent", [&]() -> std::optional<std::string> {
    py::object result = values_module().attr("loads_dumps")(py::str(text));
    if (result.is_none()) return std::nullopt;
    return result.cast<std::string>();
  });
  if (!rewritten) return std::nullopt;
  bool constants = false;
  value = OJson::parse(quote_python_constants(*rewritten, constants), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  unquote_python_constants(value);
  return value;
}

std::string without_pad(const std::string& text, const std::string& pad_token) {
  return pad_token.empty() ? text : reward::py::replace(text, pad_token, "");
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

std::string py_strip(const std::string& text) { return reward::py::strip(text); }

std::string py_lower(const std::string& text) { return reward::py::lower(text); }

OJson stripped_json_or_text(const std::string& raw) {
  std::string value = py_strip(raw);
  std::optional<OJson> parsed = python_json_loads(value);
  return parsed ? std::move(*parsed) : OJson(std::move(value));
}

size_t skip_regex_space(const std::string& text, size_t pos) {
  while (pos < text.size()) {
    const unsigned char lead = static_cast<unsigned char>(text[pos]);
    if (lead < 0x80) {
      if (!is_regex_space(lead)) break;
      ++pos;
      continue;
    }
    const size_t width = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    const std::u32string cp = reward::py::decode(text.substr(pos, width));
    if (cp.size() != 1 || !is_regex_space(cp[0])) break;
    pos += width;
  }
  return pos;
}

std::vector<Delimited> find_delimited(const std::string& text, const std::string& open, const std::string& close) {
  std::vector<Delimited> out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t begin = text.find(open, pos);
    if (begin == std::string::npos) break;
    const size_t inner_begin = begin + open.size();
    const size_t close_at = text.find(close, inner_begin);
    if (close_at == std::string::npos) break;  // none later either
    out.push_back({begin, close_at + close.size(), inner_begin, close_at});
    pos = close_at + close.size();
  }
  return out;
}

std::string remove_delimited(const std::string& text, const std::string& open, const std::string& close) {
  std::string out;
  size_t pos = 0;
  for (const Delimited& m : find_delimited(text, open, close)) {
    out.append(text, pos, m.begin - pos);
    pos = m.end;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

ParsedTurn parse_tagged_blocks(const std::string& text, const std::string& open, const std::string& close,
                               const std::function<void(const std::string& block, ParsedTurn& turn)>& parse_block) {
  ParsedTurn turn;
  const size_t start = text.find(open);
  if (start == std::string::npos || text.find(close) == std::string::npos) {
    turn.content = text;
    return turn;
  }
  for (const Delimited& block : find_delimited(text, open, close)) parse_block(block.inner(text), turn);
  turn.content = text.substr(0, start);
  return turn;
}

std::optional<OJson> python_int(const std::string& text) { return call_value_function("as_int", text); }

std::optional<OJson> python_float(const std::string& text) { return call_value_function("as_float", text); }

std::optional<OJson> python_integral_float(const std::string& text) {
  return call_value_function("as_integral_float", text);
}

LiteralValue python_literal_eval(const std::string& text) {
  LiteralValue out;
  const std::optional<std::string> dumped = python::with_gil("agent", [&]() -> std::optional<std::string> {
    py::tuple result = values_module().attr("as_literal")(py::str(text));
    out.evaluated = result[0].cast<bool>();
    if (result[1].is_none()) return std::nullopt;
    return result[1].cast<std::string>();
  });
  if (dumped) out.json = python_json_loads(*dumped);
  return out;
}

std::string python_json_dumps(const OJson& value) {
  const std::string text = python_readable_json(value);
  return python::with_gil("agent", [&] { return values_module().attr("dumps")(py::str(text)).cast<std::string>(); });
}

const OJson* find_function_schema(const OJson& tools, const std::string& name) {
  if (!tools.is_array()) return nullptr;
  for (const OJson& tool : tools) {
    if (!tool.is_object() || tool.value("type", "") != "function") continue;
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) continue;
    const auto n = function->find("name");
    if (n != function->end() && n->is_string() && n->get_ref<const std::string&>() == name) return &*function;
  }
  return nullptr;
}

}  // namespace verl::agent::parsers
