#include "verl/config/interpolation.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/strings.h"
#include "verl/config/yaml_io.h"

namespace verl::config {

namespace {

// One string built by interpolation ("${a}${a}..." over keys that do the same doubles at every level).
constexpr size_t kMaxInterpolatedChars = size_t{1} << 20;

struct Piece {
  bool is_reference = false;
  std::string text;  // literal text, or the reference body without ${ }
};

// The '}' that closes a '${' whose body starts at `from` (bodies nest: ${oc.select:a,${b}}, and hold flow maps:
// ${oc.select:a,{}}); npos if none.
size_t matching_brace(const std::string& value, size_t from) {
  int depth = 1;
  for (size_t i = from; i < value.size(); ++i) {
    if (value[i] == '{') {
      ++depth;  // a nested ${ or a flow map
    } else if (value[i] == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

// ${oc.select:key,default}: the key, and the default's text (absent: null) when the key does not exist.
struct Select {
  std::string key;
  std::optional<std::string> fallback;
};

Select parse_select(const std::string& spec) {
  Select out;
  int depth = 0;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '{' || spec[i] == '[') ++depth;  // a nested ${...}, a flow map or list
    if (spec[i] == '}' || spec[i] == ']') --depth;
    if (spec[i] == ',' && depth == 0) {
      out.key = trim(spec.substr(0, i));
      out.fallback = trim(spec.substr(i + 1));
      return out;
    }
  }
  out.key = trim(spec);
  return out;
}

// An oc.select default as OmegaConf reads it: a flow list / map or quoted string, another ${...}, or a scalar.
Node parse_yaml_value(const std::string& text, const std::string& source) {
  if (text.empty()) return Node::string("");
  if (text.front() == '[' || text.front() == '{' || text.front() == '"' || text.front() == '\'') {
    return parse_yaml(text, source);
  }
  if (starts_with(text, "${")) return Node::string(text);
  return parse_plain_scalar(text, source);
}

// Splits "checkpoints/${a.b}/x" into literal and reference pieces.
std::vector<Piece> tokenize(const std::string& value, const std::string& path) {
  std::vector<Piece> pieces;
  std::string literal;
  for (size_t i = 0; i < value.size();) {
    if (value[i] == '\\' && value.compare(i + 1, 2, "${") == 0) {
      literal += "${";
      i += 3;
    } else if (value.compare(i, 2, "${") == 0) {
      size_t close = matching_brace(value, i + 2);
      VERL_CHECK(close != std::string::npos, "config", "config key '", path, "': unclosed '${' in '", value, "'");
      if (!literal.empty()) pieces.push_back({false, literal});
      literal.clear();
      pieces.push_back({true, trim(value.substr(i + 2, close - i - 2))});
      i = close + 1;
    } else {
      literal += value[i++];
    }
  }
  if (!literal.empty()) pieces.push_back({false, literal});
  return pieces;
}

// Turns a reference body into an absolute path, given the path of the key that holds it.
std::string absolute_reference(const std::string& reference, const std::string& holder_path) {
  if (!starts_with(reference, ".")) return reference;
  size_t dots = 0;
  while (dots < reference.size() && reference[dots] == '.') ++dots;
  std::vector<std::string> parts = split(holder_path, '.');
  parts.pop_back();  // the holder itself: one dot means "in the same map"
  for (size_t up = 1; up < dots && !parts.empty(); ++up) parts.pop_back();
  std::string rest = reference.substr(dots);
  if (!rest.empty()) parts.push_back(rest);
  return join(parts, ".");
}

class Resolver {
 public:
  explicit Resolver(const Node& root) : root_(root) {}

  Node resolve_tree(const Node& node, const std::string& path) {
    switch (node.kind()) {
      case Kind::Map: {
        Node out = Node::map();
        for (const auto& [key, child] : node.fields()) {
          out.set(key, resolve_tree(child, path.empty() ? key : path + "." + key));
        }
        return out;
      }
      case Kind::List: {
        Node out = Node::list();
        for (size_t i = 0; i < node.items().size(); ++i) {
          out.items().push_back(resolve_value(node.items()[i], path));
        }
        return out;
      }
      default:
        return resolve_value(node, path);
    }
  }

 private:
  Node resolve_value(const Node& node, const std::string& path) {
    if (node.is_map() || node.is_list()) return resolve_tree(node, path);
    if (!node.has_interpolation()) return node;
    std::vector<Piece> pieces = tokenize(node.as_string(), path);
    if (pieces.size() == 1 && pieces[0].is_reference) return lookup(pieces[0].text, path);
    std::string text;
    for (const auto& piece : pieces) {
      if (!piece.is_reference) {
        text += piece.text;
        continue;
      }
      Node value = lookup(piece.text, path);
      VERL_CHECK(value.is_scalar(), "config", "config key '", path, "': '${", piece.text, "}' is a ",
                 kind_name(value.kind()), " and cannot be placed inside text");
      text += value.is_null() ? "None" : value.to_text();
      VERL_CHECK(text.size() <= kMaxInterpolatedChars, "config", "config key '", path, "': interpolation makes a ",
                 "string longer than ", kMaxInterpolatedChars, " characters (limit ", kMaxInterpolatedChars, ")");
    }
    return Node::string(text);
  }

  Node lookup(const std::string& reference, const std::string& holder) {
    if (starts_with(reference, "oc.env:")) return environment(reference.substr(7), holder);
    if (starts_with(reference, "oc.select:")) return select(parse_select(reference.substr(10)), holder);
    VERL_CHECK(reference.find(':') == std::string::npos, "config", "config key '", holder, "': resolver in '${",
               reference, "}' is not supported (supported: key paths, oc.env and oc.select)");
    const std::string target = absolute_reference(reference, holder);
    auto cached = done_.find(target);
    if (cached != done_.end()) return cached->second;
    for (const auto& active : active_) {
      VERL_CHECK(active != target, "config", "config key '", holder, "': interpolation cycle through '", target,
                 "' (", join(active_, " -> "), " -> ", target, ")");
    }
    const Node* found = find_path(root_, target);
    VERL_CHECK(found != nullptr, "config", "config key '", holder, "' refers to '${", reference, "}', but '", target,
               "' does not exist");
    VERL_CHECK(static_cast<int>(active_.size()) < kMaxNestingDepth, "config", "config key '", holder,
               "': interpolations refer through more than ", kMaxNestingDepth, " keys (limit ", kMaxNestingDepth, ")");
    active_.push_back(target);
    Node value = resolve_tree(*found, target);
    active_.pop_back();
    done_[target] = value;
    return value;
  }

  // OmegaConf's oc.select: the key's value when it exists (null when it is null), else the default, which is a
  // YAML scalar or flow value (`[]`, `False`, `null`, `2048`) or another interpolation.
  Node select(const Select& spec, const std::string& holder) {
    const std::string target = absolute_reference(spec.key, holder);
    if (find_path(root_, target) != nullptr) return lookup(spec.key, holder);
    if (!spec.fallback) return Node::null();
    Node fallback = parse_yaml_value(*spec.fallback, "config key '" + holder + "' (oc.select default)");
    return resolve_value(fallback, holder);
  }

  static Node environment(const std::string& spec, const std::string& holder) {
    std::string name = spec;
    std::optional<std::string> fallback;
    size_t comma = spec.find(',');
    if (comma != std::string::npos) {
      name = trim(spec.substr(0, comma));
      fallback = trim(spec.substr(comma + 1));
    }
    const char* value = std::getenv(name.c_str());
    if (value != nullptr) return Node::string(value);
    VERL_CHECK(fallback.has_value(), "config", "config key '", holder, "' reads environment variable ", name,
               ", which is not set");
    return *fallback == "null" ? Node::null() : Node::string(*fallback);
  }

  const Node& root_;
  std::map<std::string, Node> done_;
  std::vector<std::string> active_;
};

}  // namespace

Node resolve_interpolations(const Node& root) {
  Resolver resolver(root);
  return resolver.resolve_tree(root, "");
}

Kind expected_kind(const Node& root, const std::string& path) {
  std::string current = path;
  for (int hops = 0; hops < 32; ++hops) {
    const Node* node = find_path(root, current);
    if (node == nullptr) return Kind::Null;
    if (!node->has_interpolation()) return node->kind();
    std::vector<Piece> pieces = tokenize(node->as_string(), current);
    if (pieces.size() != 1 || !pieces[0].is_reference) return Kind::String;
    if (starts_with(pieces[0].text, "oc.env:")) return Kind::Null;  // untyped text from the environment
    if (starts_with(pieces[0].text, "oc.select:")) {
      const Select spec = parse_select(pieces[0].text.substr(10));
      const std::string target = absolute_reference(spec.key, current);
      if (find_path(root, target) == nullptr) {
        return spec.fallback ? parse_yaml_value(*spec.fallback, "oc.select default").kind() : Kind::Null;
      }
      current = target;
      continue;
    }
    current = absolute_reference(pieces[0].text, current);
  }
  return Kind::Null;  // a cycle; resolution reports it
}

}  // namespace verl::config
