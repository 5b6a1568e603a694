// What the four configurable parts of tokenizer.json (normalizer, pre_tokenizer, post_processor, decoder) share:
// each is null or an object with a string "type", and type "Sequence" lists parts of the same kind under one key.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::tokenizer::detail {

// The part's "type"; an error naming `where` unless `config` is an object with a string "type".
inline std::string pipeline_part_type(const nlohmann::json& config, const std::string& where) {
  VERL_CHECK(config.is_object() && config.contains("type") && config["type"].is_string(), "tokenizer", where,
             ": expected an object with a string \"type\", got ", json_excerpt(config));
  return config["type"].get<std::string>();
}

// The parts a "Sequence" at `here` lists under `key`, each made by `make(entry, where)`; a null entry is skipped.
template <typename Part, typename Make>
std::vector<std::unique_ptr<Part>> sequence_parts(const nlohmann::json& config, const std::string& key,
                                                  const std::string& here, Make make) {
  VERL_CHECK(config.contains(key) && config[key].is_array(), "tokenizer", here, ": expected an array \"", key, "\"");
  std::vector<std::unique_ptr<Part>> parts;
  for (size_t i = 0; i < config[key].size(); ++i) {
    auto part = make(config[key][i], str_cat(here, "[", i, "]"));
    if (part) parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace verl::tokenizer::detail
