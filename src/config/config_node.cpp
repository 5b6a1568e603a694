#include "verl/config/config_node.h"

#include <cmath>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::config {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Map: return "map";
  }
  return "?";
}

Node Node::boolean(bool value) {
  Node node;
  node.kind_ = Kind::Bool;
  node.bool_ = value;
  return node;
}

Node Node::integer(int64_t value) {
  Node node;
  node.kind_ = Kind::Int;
  node.int_ = value;
  return node;
}

Node Node::floating(double value) {
  Node node;
  node.kind_ = Kind::Float;
  node.float_ = value;
  return node;
}

Node Node::string(std::string value) {
  Node node;
  node.kind_ = Kind::String;
  node.string_ = std::move(value);
  return node;
}

Node Node::list(std::vector<Node> items) {
  Node node;
  node.kind_ = Kind::List;
  node.items_ = std::move(items);
  return node;
}

Node Node::map() {
  Node node;
  node.kind_ = Kind::Map;
  return node;
}

bool Node::has_interpolation() const {
  return kind_ == Kind::String && string_.find("${") != std::string::npos;
}

const Node* Node::find(const std::string& key) const {
  for (const auto& field : fields_) {
    if (field.first == key) return &field.second;
  }
  return nullptr;
}

Node* Node::find(const std::string& key) {
  for (auto& field : fields_) {
    if (field.first == key) return &field.second;
  }
  return nullptr;
}

Node& Node::set(const std::string& key, Node value) {
  kind_ = Kind::Map;
  if (Node* existing = find(key)) {
    *existing = std::move(value);
    return *existing;
  }
  fields_.emplace_back(key, std::move(value));
  return fields_.back().second;
}

bool Node::erase(const std::string& key) {
  for (auto it = fields_.begin(); it != fields_.end(); ++it) {
    if (it->first == key) {
      fields_.erase(it);
      return true;
    }
  }
  return false;
}

std::string Node::to_text() const {
  switch (kind_) {
    case Kind::Null: return "null";
    case Kind::Bool: return bool_ ? "true" : "false";
    case Kind::Int: return std::to_string(int_);
    case Kind::Float: return format_double_yaml(float_);
    case Kind::String: return string_;
    case Kind::List: {
      std::vector<std::string> parts;
      for (const auto& item : items_) parts.push_back(item.to_text());
      return "[" + join(parts, ", ") + "]";
    }
    case Kind::Map: {
      std::vector<std::string> parts;
      for (const auto& field : fields_) parts.push_back(field.first + ": " + field.second.to_text());
      return "{" + join(parts, ", ") + "}";
    }
  }
  return "";
}

bool Node::operator==(const Node& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Null: return true;
    case Kind::Bool: return bool_ == other.bool_;
    case Kind::Int: return int_ == other.int_;
    case Kind::Float: return float_ == other.float_ || (std::isnan(float_) && std::isnan(other.float_));
    case Kind::String: return string_ == other.string_;
    case Kind::List: return items_ == other.items_;
    case Kind::Map: return fields_ == other.fields_;
  }
  return false;
}

const Node* find_path(const Node& root, const std::string& path) {
  const Node* current = &root;
  for (const auto& part : split(path, '.')) {
    if (!current->is_map()) return nullptr;
    current = current->find(part);
    if (current == nullptr) return nullptr;
  }
  return current;
}

Node* find_path(Node& root, const std::string& path) {
  return const_cast<Node*>(find_path(static_cast<const Node&>(root), path));
}

void set_existing_path(Node& root, const std::string& path, Node value, const std::string& what) {
  Node* node = find_path(root, path);
  VERL_ASSERT(node != nullptr, "config", what, " have no key '", path, "'");
  *node = std::move(value);
}

namespace {
void collect_paths(const Node& node, const std::string& prefix, std::vector<std::string>& out) {
  for (const auto& [key, child] : node.fields()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    out.push_back(path);
    if (child.is_map()) collect_paths(child, path, out);
  }
}
}  // namespace

std::vector<std::string> all_paths(const Node& root) {
  std::vector<std::string> out;
  if (root.is_map()) collect_paths(root, "", out);
  return out;
}

}  // namespace verl::config
