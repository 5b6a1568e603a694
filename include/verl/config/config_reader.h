// Typed, tracked reads from a resolved config tree. Every read records its key; after the typed
// sections are built, `check_all_read()` turns any key nobody read (e.g. one added with `+`) into an
// error, so no setting is ever silently ignored. Type errors name the key, the expected type and the value.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "verl/config/config_node.h"

namespace verl::config {

class ConfigReader {
 public:
  explicit ConfigReader(const Node& resolved_root) : root_(resolved_root) {}

  bool get_bool(const std::string& path);
  int64_t get_int(const std::string& path);
  double get_double(const std::string& path);  // ints are accepted
  std::string get_string(const std::string& path);
  std::vector<std::string> get_string_list(const std::string& path);
  std::vector<double> get_double_list(const std::string& path);
  Node get_node(const std::string& path);  // any value, e.g. a free-form map

  // null gives nullopt.
  std::optional<bool> get_optional_bool(const std::string& path);
  std::optional<int64_t> get_optional_int(const std::string& path);
  std::optional<double> get_optional_double(const std::string& path);
  std::optional<std::string> get_optional_string(const std::string& path);

  // Whether the key exists (verl's optional keys a run adds with '+', e.g. fsdp_config.mixed_precision).
  bool contains(const std::string& path) const;

  // A string that must be one of `choices`.
  std::string get_choice(const std::string& path, const std::vector<std::string>& choices);

  // Throws naming the first key in the tree that no get_* call read.
  void check_all_read() const;

  // The leaves (dotted paths) no get_* call has read yet, in tree order; mark_read() accepts one without a typed
  // read (verl's keys that verl.cpp takes without an implementation: config/verl_key_rules.h).
  std::vector<std::string> unread_leaves() const;
  void mark_read(const std::string& path) { read_.insert(path); }

 private:
  const Node& require(const std::string& path);
  const Node* optional_node(const std::string& path);

  const Node& root_;
  std::set<std::string> read_;
};

}  // namespace verl::config
