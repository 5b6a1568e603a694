#include "verl/config/yaml_io.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::config {

namespace {

const std::regex& int_pattern() {
  static const std::regex pattern(R"([-+]?[0-9]+)");
  return pattern;
}

const std::regex& float_pattern() {
  // Decimal with optional exponent ("0.5", "1.", ".5", "1e-6", "3E+2"); OmegaConf accepts the
  // exponent form without a dot, which YAML 1.1 does not.
  static const std::regex pattern(R"([-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?)");
  return pattern;
}

Node convert(const YAML::Node& yaml, const std::string& source) {
  switch (yaml.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return Node::null();
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!" and plain ones "?".
      if (yaml.Tag() == "!") return Node::string(yaml.Scalar());
      return parse_plain_scalar(yaml.Scalar());
    case YAML::NodeType::Sequence: {
      Node list = Node::list();
      for (const auto& item : yaml) list.items().push_back(convert(item, source));
      return list;
    }
    case YAML::NodeType::Map: {
      Node map = Node::map();
      for (const auto& entry : yaml) {
        VERL_CHECK(entry.first.IsScalar(), "config", source, ": map keys must be plain strings");
        const std::string key = entry.first.Scalar();
        VERL_CHECK(map.find(key) == nullptr, "config", source, ": key '", key, "' appears twice");
        VERL_CHECK(key.find('.') == std::string::npos, "config", source, ": key '", key,
                   "' contains '.', which separates key paths; nest it instead");
        map.set(key, convert(entry.second, source));
      }
      return map;
    }
  }
  return Node::null();
}

// A string that parse_plain_scalar would not read back as the same string needs quotes.
bool needs_quotes(const std::string& text) {
  if (text.empty()) return true;
  Node reread = parse_plain_scalar(text);
  if (reread.kind() != Kind::String) return true;
  if (text != trim(text)) return true;
  static const std::string special_first = "!&*-?:,[]{}#|>@`\"'%";
  if (special_first.find(text[0]) != std::string::npos) return true;
  if (text.find(": ") != std::string::npos || text.find(" #") != std::string::npos) return true;
  if (ends_with(text, ":")) return true;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') return true;
  }
  return false;
}

void emit(YAML::Emitter& out, const Node& node) {
  switch (node.kind()) {
    case Kind::Null: out << YAML::Null; break;
    case Kind::Bool: out << (node.as_bool() ? "true" : "false"); break;
    case Kind::Int: out << std::to_string(node.as_int()); break;
    case Kind::Float: out << format_double_yaml(node.as_double()); break;
    case Kind::String:
      if (needs_quotes(node.as_string())) {
        out << YAML::DoubleQuoted << node.as_string();
      } else {
        out << node.as_string();
      }
      break;
    case Kind::List: {
      bool flat = true;
      for (const auto& item : node.items()) flat = flat && item.is_scalar();
      if (flat) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node.items()) emit(out, item);
      out << YAML::EndSeq;
      break;
    }
    case Kind::Map:
      if (node.fields().empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [key, child] : node.fields()) {
        out << YAML::Key << key << YAML::Value;
        emit(out, child);
      }
      out << YAML::EndMap;
      break;
  }
}

}  // namespace

Node parse_plain_scalar(const std::string& raw) {
  const std::string text = trim(raw);
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return Node::null();
  if (text == "true" || text == "True" || text == "TRUE") return Node::boolean(true);
  if (text == "false" || text == "False" || text == "FALSE") return Node::boolean(false);
  if (std::regex_match(text, int_pattern())) {
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno != ERANGE) return Node::integer(value);
    return Node::string(text);  // beyond int64: leave it as text rather than lose digits
  }
  if (std::regex_match(text, float_pattern())) return Node::floating(std::strtod(text.c_str(), nullptr));
  if (text == ".inf" || text == "+.inf" || text == ".Inf" || text == "inf") {
    return Node::floating(std::numeric_limits<double>::infinity());
  }
  if (text == "-.inf" || text == "-.Inf" || text == "-inf") return Node::floating(-std::numeric_limits<double>::infinity());
  if (text == ".nan" || text == ".NaN" || text == "nan") return Node::floating(std::numeric_limits<double>::quiet_NaN());
  return Node::string(text);
}

Node parse_yaml(const std::string& text, const std::string& source) {
  YAML::Node yaml;
  try {
    yaml = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    VERL_FAIL("config", source, ": not valid YAML: ", e.what());
  }
  return convert(yaml, source);
}

Node load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.good(), "config", "cannot open config file '", path, "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  Node root = parse_yaml(buffer.str(), path);
  VERL_CHECK(root.is_map() || root.is_null(), "config", path, ": expected a YAML mapping at the top level, got ",
             kind_name(root.kind()));
  return root.is_null() ? Node::map() : root;
}

std::string to_yaml(const Node& root) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetNullFormat(YAML::LowerNull);
  emit(out, root);
  return std::string(out.c_str()) + "\n";
}

}  // namespace verl::config
