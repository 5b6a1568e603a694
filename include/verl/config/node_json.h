// A config Node (YAML / overrides) as JSON, keys in the file's order: for free-form maps handed to Python or to
// templates (data.apply_chat_template_kwargs, tool and interaction configs).
#pragma once

#include <nlohmann/json.hpp>

#include "verl/config/config_node.h"

namespace verl::config {

nlohmann::ordered_json node_to_json(const Node& node);

}  // namespace verl::config
