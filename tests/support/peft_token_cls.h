// A PEFT TOKEN_CLS adapter folder as PEFT's save_pretrained writes it for verl's critic: the adapters and the value
// head (value_lora_named_parameters, whole) named base_model.model.*, and an adapter_config.json with
// modules_to_save [classifier, score].
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/model/weights.h"

namespace verl::test {

inline void write_token_cls_adapter(const model::NamedTensors& trainable, const std::string& dir, int64_t rank,
                                    double alpha, const nlohmann::json& target_modules = "all-linear",
                                    const std::string& task_type = "TOKEN_CLS") {
  std::filesystem::create_directories(dir);
  model::NamedTensors tensors;
  for (const auto& [name, t] : trainable) tensors.emplace_back("base_model.model." + name, t.detach());
  model::save_tensors(dir + "/adapter_model.safetensors", tensors, {{"format", "pt"}});
  const nlohmann::json config = {{"peft_type", "LORA"},          {"task_type", task_type},
                                 {"r", rank},                    {"lora_alpha", alpha},
                                 {"target_modules", target_modules}, {"modules_to_save", {"classifier", "score"}},
                                 {"bias", "none"},               {"use_dora", false}};
  std::ofstream(dir + "/adapter_config.json") << config.dump(2);
}

}  // namespace verl::test
