// Resource pools (verl's ResourcePool / ResourcePoolManager): named sets of device slots, and which role
// runs on which pool. Roles that share a pool are co-located: one worker per slot hosts all of them.
// Roles on different pools run in different workers and may run at the same time.
//
//   resource_pool_spec = {"global_pool": [n_gpus_per_node] * nnodes}
//   mapping            = {Role::ActorRollout: "global_pool", Role::Critic: "global_pool"}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "verl/single_controller/role.h"

namespace verl::single_controller {

struct ResourcePool {
  std::string name;
  std::vector<int> process_on_nodes;  // slots on each node
  int first_slot = 0;                 // global index of this pool's first slot (pools are laid out in spec order)

  int world_size() const;
  int nnodes() const { return static_cast<int>(process_on_nodes.size()); }
};

class ResourcePoolManager {
 public:
  // Validates: every pool has >= 1 node and >= 1 slot per node, every mapped pool exists, every pool is used.
  ResourcePoolManager(std::vector<std::pair<std::string, std::vector<int>>> resource_pool_spec,
                      std::map<Role, std::string> mapping);

  const ResourcePool& pool_for(Role role) const;  // error if the role is not mapped
  bool has_role(Role role) const { return mapping_.count(role) > 0; }
  std::vector<Role> roles_on(const std::string& pool) const;
  const std::vector<ResourcePool>& pools() const { return pools_; }
  int total_slots() const;  // verl's get_n_gpus()
  // Index in pools() of the pool holding global slot `slot` (0 <= slot < total_slots()).
  size_t pool_index_of_slot(int slot) const;

 private:
  std::vector<ResourcePool> pools_;
  std::map<Role, std::string> mapping_;
};

}  // namespace verl::single_controller
