// The whole config pipeline, used by every command that takes a config:
//   embedded defaults (configs/ppo_trainer.yaml) -> --config FILE merged over them -> key=value overrides
//   -> ${...} resolved -> typed sections built and validated.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verl/config/config_node.h"
#include "verl/config/ppo_config.h"

namespace verl::config {

struct ConfigArgs {
  std::optional<std::string> config_file;  // --config FILE
  std::vector<std::string> overrides;      // a.b=c, +a.b=c, ++a.b=c, ~a.b
};

// Splits command-line arguments into --config and overrides; any other argument is an error.
ConfigArgs parse_config_args(const std::vector<std::string>& args);

// The defaults compiled into the binary, as a tree (interpolations not yet resolved).
Node default_config_tree();

// Defaults + file + overrides, before resolution.
Node compose_config(const ConfigArgs& args);

struct LoadedConfig {
  Node resolved;  // every ${...} replaced; what `config show` prints and runs save
  PPOConfig ppo;  // typed and validated
};

LoadedConfig load_config(const ConfigArgs& args);

}  // namespace verl::config
