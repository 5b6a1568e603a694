#include "verl/config/yaml_io.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/strings.h"

namespace verl::config {

namespace {

// [-+]?[0-9]+ : hand-written, a std::regex match recurses once per character and overflows the stack on a
// long number.
bool is_int_text(const std::string& t) {
  size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  if (i == t.size()) return false;
  for (; i < t.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

// [-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)? : decimal with optional exponent ("0.5", "1.",
// ".5", "1e-6", "3E+2"); OmegaConf accepts the exponent form without a dot, which YAML 1.1 does not.
bool is_float_text(const std::string& t) {
  auto digits = [&](size_t& i) {
    size_t start = i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    return i - start;
  };
  size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  size_t mantissa = digits(i);
  if (i < t.size() && t[i] == '.') {
    ++i;
    mantissa += digits(i);
  }
  if (mantissa == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    if (digits(i) == 0) return false;
  }
  return i == t.size();
}

// The first characters of a long value, for error lines.
std::string excerpt(const std::string& text) {
  return text.size() <= 40 ? text : text.substr(0, 40) + "... (" + std::to_string(text.size()) + " characters)";
}

// YAML -> Node with the limits of verl/common/input_limits.h: nesting depth, nodes after alias expansion
// (aliases share yaml-cpp nodes; converting copies them, so "billion laughs" would expand here), aliases that
// refer to a node containing them (a cycle), and number length.
class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  Node convert(const YAML::Node& yaml, const std::string& path) {
    ++nodes_;
    VERL_CHECK(nodes_ <= kMaxYamlNodes, "config", source_, ": more than ", kMaxYamlNodes,
               " nodes after expanding aliases (at '", path, "'; limit ", kMaxYamlNodes,
               "); an alias (*name) that repeats a large anchor multiplies the size");
    switch (yaml.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return Node::null();
      case YAML::NodeType::Scalar:
        // yaml-cpp tags quoted scalars "!" and plain ones "?".
        if (yaml.Tag() == "!") return Node::string(yaml.Scalar());
        return parse_plain_scalar(yaml.Scalar(), source_ + " at '" + path + "'");
      case YAML::NodeType::Sequence:
      case YAML::NodeType::Map:
        break;
    }
    for (const YAML::Node& ancestor : ancestors_) {
      VERL_CHECK(!ancestor.is(yaml), "config", source_, ": '", path,
                 "' is an alias of a node that contains it (a cycle); anchors (&name) can only be used after they end");
    }
    VERL_CHECK(static_cast<int>(ancestors_.size()) < kMaxNestingDepth, "config", source_, ": '", excerpt(path),
               "' is nested deeper than ", kMaxNestingDepth, " levels (limit ", kMaxNestingDepth, ")");
    ancestors_.push_back(yaml);
    Node out = yaml.IsSequence() ? convert_list(yaml, path) : convert_map(yaml, path);
    ancestors_.pop_back();
    return out;
  }

 private:
  Node convert_list(const YAML::Node& yaml, const std::string& path) {
    Node list = Node::list();
    size_t i = 0;
    for (const auto& item : yaml) list.items().push_back(convert(item, path + "[" + std::to_string(i++) + "]"));
    return list;
  }

  Node convert_map(const YAML::Node& yaml, const std::string& path) {
    Node map = Node::map();
    for (const auto& entry : yaml) {
      VERL_CHECK(entry.first.IsScalar(), "config", source_, ": map keys must be plain strings");
      const std::string key = entry.first.Scalar();
      VERL_CHECK(map.find(key) == nullptr, "config", source_, ": key '", excerpt(key), "' appears twice");
      VERL_CHECK(key.find('.') == std::string::npos, "config", source_, ": key '", excerpt(key),
                 "' contains '.', which separates key paths; nest it instead");
      map.set(key, convert(entry.second, path.empty() ? key : path + "." + key));
    }
    return map;
  }

  const std::string& source_;
  std::vector<YAML::Node> ancestors_;
  size_t nodes_ = 0;
};

// A string that parse_plain_scalar would not read back as the same string needs quotes.
bool needs_quotes(const std::string& text) {
  if (text.empty()) return true;
  if (is_int_text(text) || is_float_text(text)) return true;
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

Node parse_plain_scalar(const std::string& raw, const std::string& where) {
  const std::string text = trim(raw);
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return Node::null();
  if (text == "true" || text == "True" || text == "TRUE") return Node::boolean(true);
  if (text == "false" || text == "False" || text == "FALSE") return Node::boolean(false);
  const bool is_int = is_int_text(text);
  const bool is_float = !is_int && is_float_text(text);
  VERL_CHECK(!(is_int || is_float) || text.size() <= kMaxNumberChars, "config", where, ": a number of ", text.size(),
             " characters, '", excerpt(text), "' (limit ", kMaxNumberChars, ")");
  if (is_int) {
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno != ERANGE) return Node::integer(value);
    return Node::string(text);  // beyond int64: leave it as text rather than lose digits
  }
  if (is_float) return Node::floating(std::strtod(text.c_str(), nullptr));
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
  } catch (const YAML::DeepRecursion& e) {
    VERL_FAIL("config", source, ": nested deeper than ", kMaxNestingDepth, " levels at line ", e.mark.line + 1,
              ", column ", e.mark.column + 1, " (limit ", kMaxNestingDepth, ")");
  } catch (const YAML::Exception& e) {
    VERL_FAIL("config", source, ": not valid YAML: ", e.what());
  }
  return Converter(source).convert(yaml, "");
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
