// `${...}` references as OmegaConf resolves them in verl's configs:
//   ${trainer.project_name}   absolute key path
//   ${.save_contents}         sibling key (one more dot per parent level: ${..x})
//   ${oc.env:NAME}            environment variable, ${oc.env:NAME,default} with a fallback
//   ${oc.select:key,default}  the key's value when it exists (null stays null), else the default: a YAML value or
//                             another ${...} (verl's generated config nests them)
// A value that is exactly one reference takes the referenced value with its type; a reference inside
// longer text is spliced in as text. `\${` writes a literal `${`. Cycles and missing keys are errors.
#pragma once

#include <string>

#include "verl/config/config_node.h"

namespace verl::config {

// A copy of `root` with every reference replaced.
Node resolve_interpolations(const Node& root);

// The kind a key will have once resolved (following a whole-value reference), used to type overrides.
Kind expected_kind(const Node& root, const std::string& path);

}  // namespace verl::config
