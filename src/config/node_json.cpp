#include "verl/config/node_json.h"

namespace verl::config {

nlohmann::ordered_json node_to_json(const Node& node) {
  switch (node.kind()) {
    case Kind::Null: return nullptr;
    case Kind::Bool: return node.as_bool();
    case Kind::Int: return node.as_int();
    case Kind::Float: return node.as_double();
    case Kind::String: return node.as_string();
    case Kind::List: {
      nlohmann::ordered_json out = nlohmann::ordered_json::array();
      for (const auto& item : node.items()) out.push_back(node_to_json(item));
      return out;
    }
    case Kind::Map: {
      nlohmann::ordered_json out = nlohmann::ordered_json::object();
      for (const auto& [key, item] : node.fields()) out[key] = node_to_json(item);
      return out;
    }
  }
  return nullptr;
}

}  // namespace verl::config
