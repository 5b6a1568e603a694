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

}  // namespace verl::config
