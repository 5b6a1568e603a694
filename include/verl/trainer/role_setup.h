// Which worker roles a PPO config needs and where they run (verl's main_ppo role wiring):
//   ActorRollout always; Critic when the estimator needs it or critic.enable; RefPolicy when
//   algorithm.use_kl_in_reward or actor.use_kl_loss; RewardModel when reward_model.enable; all on
//   {"global_pool": [trainer.n_gpus_per_node] * trainer.nnodes}, so they share one co-located worker per slot.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {

struct RoleSetup {
  RoleWorkerMapping role_worker_mapping;
  std::vector<std::pair<std::string, std::vector<int>>> resource_pool_spec;
  std::map<Role, std::string> mapping;  // role -> pool
};

RoleSetup build_role_setup(const std::shared_ptr<const config::PPOConfig>& config);

}  // namespace verl::trainer
