// verl's Role (verl/trainer/ppo/utils.py): what a worker group does in the PPO loop.
#pragma once

#include <string>
#include <vector>

namespace verl::single_controller {

enum class Role { Actor, Rollout, ActorRollout, Critic, RefPolicy, RewardModel, ActorRolloutRef, TeacherModel };

// verl's str(Role): "actor", "rollout", "actor_rollout", "critic", "ref", "rm", "actor_rollout_ref", "teacher".
std::string role_name(Role role);
// Accepts role_name() spellings and verl's enum names ("ActorRollout"); an unknown name is an error.
Role parse_role(const std::string& name);
const std::vector<Role>& all_roles();

}  // namespace verl::single_controller
