// YAML text <-> config::Node. Plain scalars are typed the way OmegaConf/Hydra users expect
// (`1e-6` is a float, `True` a bool, `~`/`null` null); quoted scalars are always strings.
#pragma once

#include <string>

#include "verl/config/config_node.h"

namespace verl::config {

// Types one plain (unquoted) scalar: null, bool, int, float, else string. A number longer than
// kMaxNumberChars (verl/common/input_limits.h) is an error naming `where`.
Node parse_plain_scalar(const std::string& text, const std::string& where = "value");

// Parses a YAML document. `source` names it in errors ("configs/x.yaml", "override a.b=..."). Limits: nesting
// depth kMaxNestingDepth, kMaxYamlNodes nodes after alias expansion, no alias of a node inside itself.

Node parse_yaml(const std::string& text, const std::string& source);
Node load_yaml_file(const std::string& path);

// Block-style YAML that parse_yaml reads back to an equal Node: strings that would read as another
// type are quoted, floats always carry a '.' and a signed exponent.
std::string to_yaml(const Node& root);

}  // namespace verl::config
