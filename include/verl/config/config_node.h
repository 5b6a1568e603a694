// The config value tree: a typed YAML document (null, bool, int, float, string, list, map) with map
// keys kept in file order. yaml-cpp only parses; typing lives here so that `1e-6` is a float,
// `"123"` stays a string and `config show` writes values back in a form that re-reads identically.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace verl::config {

enum class Kind { Null, Bool, Int, Float, String, List, Map };

const char* kind_name(Kind kind);

class Node {
 public:
  Node() = default;  // null
  static Node null() { return Node(); }
  static Node boolean(bool value);
  static Node integer(int64_t value);
  static Node floating(double value);
  static Node string(std::string value);
  static Node list(std::vector<Node> items = {});
  static Node map();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_map() const { return kind_ == Kind::Map; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_scalar() const { return kind_ != Kind::Map && kind_ != Kind::List; }

  bool as_bool() const { return bool_; }
  int64_t as_int() const { return int_; }
  double as_double() const { return kind_ == Kind::Int ? static_cast<double>(int_) : float_; }
  const std::string& as_string() const { return string_; }

  // True for a string holding an unresolved `${...}` reference.
  bool has_interpolation() const;

  // Lists.
  const std::vector<Node>& items() const { return items_; }
  std::vector<Node>& items() { return items_; }

  // Maps, in insertion order.
  const std::vector<std::pair<std::string, Node>>& fields() const { return fields_; }
  const Node* find(const std::string& key) const;
  Node* find(const std::string& key);
  // Inserts or replaces, keeping the position of an existing key.
  Node& set(const std::string& key, Node value);
  bool erase(const std::string& key);

  // Scalar as it is written in YAML (strings unquoted); lists and maps as flow YAML.
  std::string to_text() const;

  bool operator==(const Node& other) const;
  bool operator!=(const Node& other) const { return !(*this == other); }

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::string string_;
  std::vector<Node> items_;
  std::vector<std::pair<std::string, Node>> fields_;
};

// Dotted paths: "a.b.c". Returns nullptr when any part is missing or not a map.
const Node* find_path(const Node& root, const std::string& path);
Node* find_path(Node& root, const std::string& path);

// Replaces the value at an existing dotted path; a missing path is an internal error naming `what` (the tree
// the caller built from defaults, e.g. "the PPO defaults"): code that sets keys must set real ones.
void set_existing_path(Node& root, const std::string& path, Node value, const std::string& what);

// Every key path in the tree (maps and leaves), depth first, e.g. "trainer", "trainer.seed".
std::vector<std::string> all_paths(const Node& root);

}  // namespace verl::config
