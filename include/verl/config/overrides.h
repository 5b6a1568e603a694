// Composing a config: a user YAML merged over the defaults, then Hydra-style command-line overrides.
//
//   a.b.c=value   change an existing key; the value must fit the type of the default
//   +a.b=value    add a key that does not exist yet (its parents are created)
//   ++a.b=value   add or change, whatever is there
//   ~a.b          remove a key
//
// Values: int, float (`1e-6` too), bool, null, quoted or plain strings, flow lists `[a,b]` and maps
// `{k: v}`. An unknown key is an error that names the closest valid key.
#pragma once

#include <string>

#include "verl/config/config_node.h"

namespace verl::config {

struct Override {
  enum class Op { Set, Add, ForceAdd, Remove };
  Op op = Op::Set;
  std::string path;
  Node value;
  std::string raw_value;  // the text after '=' (kept so strings keep their exact spelling)
  std::string text;       // the whole argument, for error messages
};

// True if `arg` looks like an override (`key=value`, `+key=...`, `~key`).
bool is_override_argument(const std::string& arg);
Override parse_override(const std::string& arg);

void apply_override(Node& root, const Override& override_arg);

// Merges `user` over `root` key by key; every key must already exist in `root` (source names the file).
void merge_config_file(Node& root, const Node& user, const std::string& source);

// "unknown config key 'x' (...)" plus "; did you mean 'y'?" when a close key exists.
std::string unknown_key_message(const Node& root, const std::string& path, const std::string& source);

}  // namespace verl::config
