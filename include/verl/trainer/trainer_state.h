// The controller's part of a checkpoint, {default_local_dir}/global_step_N/data.json (verl's data.pt): dataloader
// state, uid generator, in-reward KL coefficient and the step's metrics line (ppo_trainer_checkpoint.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace verl::trainer {

constexpr int kTrainerStateVersion = 1;

// Reads and checks data.json: an object of this version with a "dataloader" object; "uid_generator" a string,
// "kl_ctrl_in_reward" a number and "step_metrics" an object of decimal strings where present. Anything else is
// one error naming the file and the key (the caller then reads the values without type surprises).
nlohmann::json read_trainer_state(const std::string& path);

}  // namespace verl::trainer
