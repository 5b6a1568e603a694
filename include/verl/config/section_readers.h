// Typed readers of config sections that verl's PPO and SFT trainer configs share (defined in ppo_config.cpp).
#pragma once

#include <string>

#include "verl/config/config_reader.h"
#include "verl/config/ppo_config.h"
#include "verl/model/hf_config.h"

namespace verl::config {

// verl's optim section under `prefix` (FSDPOptimizerConfig: optimizer class and its arguments, the LR schedule);
// clip_grad is not read here.
OptimConfig read_optim_config(ConfigReader& in, const std::string& prefix);

// verl's model.override_config at `key`: the fields checked, applied to config.json when the model loads.
model::HFConfigOverrides read_model_override_config(ConfigReader& in, const std::string& key);

// distillation.* (src/config/distillation_config.cpp), checked when enabled; prompt_length and response_length
// are the rollout's (the teacher reads the student's whole sequence).
DistillationConfig read_distillation(ConfigReader& in, const Node& resolved, int64_t prompt_length,
                                     int64_t response_length);

}  // namespace verl::config
