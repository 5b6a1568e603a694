#include "verl/config/config_reader.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::config {

namespace {
std::string shown(const Node& node) {
  return str_cat(kind_name(node.kind()), " '", node.to_text(), "'");
}

void collect_leaves(const Node& node, const std::string& prefix, std::vector<std::string>& out) {
  if (!node.is_map() || node.fields().empty()) {
    out.push_back(prefix);
    return;
  }
  for (const auto& [key, child] : node.fields()) collect_leaves(child, prefix.empty() ? key : prefix + "." + key, out);
}
}  // namespace

const Node& ConfigReader::require(const std::string& path) {
  const Node* node = find_path(root_, path);
  VERL_CHECK(node != nullptr, "config", "config key '", path, "' is missing");
  read_.insert(path);
  return *node;
}

bool ConfigReader::contains(const std::string& path) const { return find_path(root_, path) != nullptr; }

const Node* ConfigReader::optional_node(const std::string& path) {
  const Node& node = require(path);
  return node.is_null() ? nullptr : &node;
}

bool ConfigReader::get_bool(const std::string& path) {
  auto value = get_optional_bool(path);
  VERL_CHECK(value.has_value(), "config", "config key '", path, "' expects bool, got null");
  return *value;
}

int64_t ConfigReader::get_int(const std::string& path) {
  auto value = get_optional_int(path);
  VERL_CHECK(value.has_value(), "config", "config key '", path, "' expects int, got null");
  return *value;
}

double ConfigReader::get_double(const std::string& path) {
  auto value = get_optional_double(path);
  VERL_CHECK(value.has_value(), "config", "config key '", path, "' expects float, got null");
  return *value;
}

std::string ConfigReader::get_string(const std::string& path) {
  auto value = get_optional_string(path);
  VERL_CHECK(value.has_value(), "config", "config key '", path, "' expects string, got null");
  return *value;
}

std::optional<bool> ConfigReader::get_optional_bool(const std::string& path) {
  const Node* node = optional_node(path);
  if (node == nullptr) return std::nullopt;
  VERL_CHECK(node->kind() == Kind::Bool, "config", "config key '", path, "' expects bool, got ", shown(*node));
  return node->as_bool();
}

std::optional<int64_t> ConfigReader::get_optional_int(const std::string& path) {
  const Node* node = optional_node(path);
  if (node == nullptr) return std::nullopt;
  VERL_CHECK(node->kind() == Kind::Int, "config", "config key '", path, "' expects int, got ", shown(*node));
  return node->as_int();
}

std::optional<double> ConfigReader::get_optional_double(const std::string& path) {
  const Node* node = optional_node(path);
  if (node == nullptr) return std::nullopt;
  VERL_CHECK(node->kind() == Kind::Int || node->kind() == Kind::Float, "config", "config key '", path,
             "' expects float, got ", shown(*node));
  return node->as_double();
}

std::optional<std::string> ConfigReader::get_optional_string(const std::string& path) {
  const Node* node = optional_node(path);
  if (node == nullptr) return std::nullopt;
  VERL_CHECK(node->kind() == Kind::String, "config", "config key '", path, "' expects string, got ", shown(*node));
  return node->as_string();
}

std::vector<std::string> ConfigReader::get_string_list(const std::string& path) {
  const Node& node = require(path);
  VERL_CHECK(node.is_list(), "config", "config key '", path, "' expects list of strings, got ", shown(node));
  std::vector<std::string> out;
  for (const auto& item : node.items()) {
    VERL_CHECK(item.kind() == Kind::String, "config", "config key '", path, "' expects list of strings, but item ",
               shown(item), " is not a string");
    out.push_back(item.as_string());
  }
  return out;
}

std::vector<double> ConfigReader::get_double_list(const std::string& path) {
  const Node& node = require(path);
  VERL_CHECK(node.is_list(), "config", "config key '", path, "' expects list of floats, got ", shown(node));
  std::vector<double> out;
  for (const auto& item : node.items()) {
    VERL_CHECK(item.kind() == Kind::Int || item.kind() == Kind::Float, "config", "config key '", path,
               "' expects list of floats, but item ", shown(item), " is not a number");
    out.push_back(item.as_double());
  }
  return out;
}

Node ConfigReader::get_node(const std::string& path) {
  const Node& node = require(path);
  // A whole subtree read as one value counts as read throughout.
  for (const auto& sub : all_paths(node)) read_.insert(path + "." + sub);
  return node;
}

std::string ConfigReader::get_choice(const std::string& path, const std::vector<std::string>& choices) {
  std::string value = get_string(path);
  for (const auto& choice : choices) {
    if (value == choice) return value;
  }
  std::string near = closest_match(value, choices);
  VERL_FAIL("config", "config key '", path, "' is '", value, "'; expected one of: ", join(choices, ", "),
            near.empty() ? "" : str_cat(" (did you mean '", near, "'?)"));
}

std::vector<std::string> ConfigReader::unread_leaves() const {
  std::vector<std::string> leaves;
  collect_leaves(root_, "", leaves);
  std::vector<std::string> unread;
  for (const auto& leaf : leaves) {
    if (!leaf.empty() && !read_.count(leaf)) unread.push_back(leaf);
  }
  return unread;
}

void ConfigReader::check_all_read() const {
  std::vector<std::string> leaves;
  collect_leaves(root_, "", leaves);
  for (const auto& leaf : leaves) {
    if (leaf.empty() || read_.count(leaf)) continue;
    VERL_FAIL("config", "config key '", leaf,
              "' is not used by verl.cpp (added with '+'?); remove it or check its spelling");
  }
}

}  // namespace verl::config
