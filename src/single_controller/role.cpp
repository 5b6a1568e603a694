#include "verl/single_controller/role.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::single_controller {

namespace {
struct RoleNames {
  Role role;
  const char* name;       // verl's str(Role)
  const char* enum_name;  // verl's Role.<name>
};

const std::vector<RoleNames>& role_table() {
  static const std::vector<RoleNames> table = {
      {Role::Actor, "actor", "Actor"},
      {Role::Rollout, "rollout", "Rollout"},
      {Role::ActorRollout, "actor_rollout", "ActorRollout"},
      {Role::Critic, "critic", "Critic"},
      {Role::RefPolicy, "ref", "RefPolicy"},
      {Role::RewardModel, "rm", "RewardModel"},
      {Role::ActorRolloutRef, "actor_rollout_ref", "ActorRolloutRef"},
      {Role::TeacherModel, "teacher", "TeacherModel"},
  };
  return table;
}
}  // namespace

std::string role_name(Role role) {
  for (const auto& entry : role_table()) {
    if (entry.role == role) return entry.name;
  }
  VERL_ASSERT(false, "single_controller", "role without a name");
}

Role parse_role(const std::string& name) {
  std::vector<std::string> valid;
  for (const auto& entry : role_table()) {
    if (name == entry.name || name == entry.enum_name) return entry.role;
    valid.push_back(entry.name);
  }
  VERL_FAIL("single_controller", "unknown role '", name, "'; expected one of: ", join(valid, ", "));
}

const std::vector<Role>& all_roles() {
  static const std::vector<Role> roles = [] {
    std::vector<Role> out;
    for (const auto& entry : role_table()) out.push_back(entry.role);
    return out;
  }();
  return roles;
}

}  // namespace verl::single_controller
