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
  // Hydra's --config-path DIR / --config-name NAME (also -cp / -cn): DIR/NAME.yaml, whose `defaults:` list names
  // ppo_trainer (the built-in defaults) or other YAML files of DIR, merged in order, its own keys at `_self_`.
  std::optional<std::string> config_path;
  std::optional<std::string> config_name;
  std::vector<std::string> overrides;  // a.b=c, +a.b=c, ++a.b=c, ~a.b
};

// Splits command-line arguments into --config and overrides; any other argument is an error.
ConfigArgs parse_config_args(const std::vector<std::string>& args);

// The defaults compiled into the binary, as a tree (interpolations not yet resolved).
Node default_config_tree();

// The tree of Hydra's --config-path DIR --config-name NAME (before the --config file and the overrides). NAME
// ppo_trainer (verl's own, when DIR has no such file) is the built-in defaults; ppo_megatron_trainer is
// them with model_engine=megatron (strategy=megatron for actor, ref and critic, Megatron's optimizer defaults).
// `engine`: a model_engine choice of the command line ("dp" or "megatron"; empty: none), which wins over the
// files' `model_engine` defaults entries.
Node hydra_config_tree(const std::string& config_path, const std::string& config_name, const std::string& engine = "");

// Defaults + file + overrides, before resolution.
Node compose_config(const ConfigArgs& args);

struct LoadedConfig {
  Node resolved;  // every ${...} replaced; what `config show` prints and runs save
  PPOConfig ppo;  // typed and validated
};

LoadedConfig load_config(const ConfigArgs& args);

}  // namespace verl::config
