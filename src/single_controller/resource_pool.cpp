#include "verl/single_controller/resource_pool.h"

#include <numeric>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::single_controller {

int ResourcePool::world_size() const { return std::accumulate(process_on_nodes.begin(), process_on_nodes.end(), 0); }

ResourcePoolManager::ResourcePoolManager(std::vector<std::pair<std::string, std::vector<int>>> resource_pool_spec,
                                         std::map<Role, std::string> mapping)
    : mapping_(std::move(mapping)) {
  VERL_CHECK(!resource_pool_spec.empty(), "resource_pool", "resource_pool_spec is empty; give at least one pool");
  int next_slot = 0;
  std::vector<std::string> names;
  for (auto& [name, nodes] : resource_pool_spec) {
    for (const auto& existing : names) {
      VERL_CHECK(existing != name, "resource_pool", "resource pool '", name, "' is defined twice");
    }
    VERL_CHECK(!nodes.empty(), "resource_pool", "resource pool '", name, "' has no nodes");
    for (int slots : nodes) {
      VERL_CHECK(slots > 0, "resource_pool", "resource pool '", name, "' has a node with ", slots,
                 " slots; every node needs at least 1");
    }
    ResourcePool pool{name, nodes, next_slot};
    next_slot += pool.world_size();
    pools_.push_back(pool);
    names.push_back(name);
  }
  for (const auto& [role, pool] : mapping_) {
    bool known = false;
    for (const auto& name : names) known = known || name == pool;
    VERL_CHECK(known, "resource_pool", "role '", role_name(role), "' is mapped to unknown resource pool '", pool,
               "'; defined pools: ", join(names, ", "));
  }
  for (const auto& pool : pools_) {
    VERL_CHECK(!roles_on(pool.name).empty(), "resource_pool", "resource pool '", pool.name,
               "' has no role mapped to it");
  }
}

const ResourcePool& ResourcePoolManager::pool_for(Role role) const {
  auto it = mapping_.find(role);
  VERL_CHECK(it != mapping_.end(), "resource_pool", "role '", role_name(role), "' is not mapped to a resource pool");
  for (const auto& pool : pools_) {
    if (pool.name == it->second) return pool;
  }
  VERL_ASSERT(false, "resource_pool", "mapped pool vanished");
}

std::vector<Role> ResourcePoolManager::roles_on(const std::string& pool) const {
  std::vector<Role> roles;
  for (const auto& [role, name] : mapping_) {
    if (name == pool) roles.push_back(role);
  }
  return roles;
}

int ResourcePoolManager::total_slots() const {
  int total = 0;
  for (const auto& pool : pools_) total += pool.world_size();
  return total;
}

size_t ResourcePoolManager::pool_index_of_slot(int slot) const {
  for (size_t i = 0; i < pools_.size(); ++i) {
    if (slot >= pools_[i].first_slot && slot < pools_[i].first_slot + pools_[i].world_size()) return i;
  }
  VERL_FAIL("resource_pool", "slot ", slot, " is not in any resource pool (", total_slots(), " slots)");
}

}  // namespace verl::single_controller
