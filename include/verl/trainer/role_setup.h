// Which worker roles a PPO config needs and where they run (verl's main_ppo role wiring):
//   ActorRollout always (hybrid engine); Critic when the estimator needs it or critic.enable; RefPolicy when
//   algorithm.use_kl_in_reward or actor.use_kl_loss; RewardModel when reward_model.enable. Pools, in order:
//   - co-located: {"global_pool": [trainer.n_gpus_per_node] * trainer.nnodes}, one worker per slot hosts all;
//   - trainer.split_placement: "actor_rollout_ref_pool" (actor, ref) and "critic_pool" (critic, rm), half the
//     slots each (verl's examples/split_placement);
//   - actor_rollout_ref.hybrid_engine=false: Actor instead of ActorRollout, plus a Rollout role on a last pool
//     "rollout_pool" of [rollout.n_gpus_per_node] * rollout.nnodes (verl's one_step_off_policy layout).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "verl/trainer/main_ppo.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {

struct RoleSetup {
  RoleWorkerMapping role_worker_mapping;
  std::vector<std::pair<std::string, std::vector<int>>> resource_pool_spec;
  std::map<Role, std::string> mapping;  // role -> pool
};

RoleSetup build_role_setup(const std::shared_ptr<const config::PPOConfig>& config);

// run_ppo with the worker groups reached through `transport_factory` (nullptr: in this process).
PPORunResult run_ppo_with_transport(const config::PPOConfig& config, const std::string& resolved_yaml,
                                    const PPORunHooks& hooks, TransportFactory transport_factory);

}  // namespace verl::trainer
