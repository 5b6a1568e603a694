// WorkerGroup: the controller's handle on the workers of one role (or of a co-located pool).
//   group.call("compute_log_prob", batch)        blocking; split and gathered by the method's dispatch mode
//   group.call_async("update_critic", batch)     a future, so groups on different pools overlap
//   group.call_each("method", {in0, in1, ...})   ALL_TO_ALL: one input and one output per rank
// A co-located group's spawn({"actor_rollout", "critic"}) returns per-role views: view.call("update_actor")
// calls "actor_rollout_update_actor" on the shared workers.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "verl/single_controller/transport.h"

namespace verl::single_controller {

class WorkerGroup {
 public:
  WorkerGroup(std::string name, std::shared_ptr<Transport> transport, std::string method_prefix = "");

  const std::string& name() const { return name_; }
  int world_size() const { return transport_->world_size(); }
  bool has_method(const std::string& method) const;

  DataProto call(const std::string& method, const DataProto& input = DataProto());
  std::future<DataProto> call_async(const std::string& method, const DataProto& input = DataProto());
  std::vector<DataProto> call_each(const std::string& method, const std::vector<DataProto>& per_rank);

  std::map<std::string, WorkerGroup> spawn(const std::vector<std::string>& prefixes) const;

 private:
  const MethodSpec& spec(const std::string& full_name) const;
  std::string full_name(const std::string& method) const;

  std::string name_;
  std::shared_ptr<Transport> transport_;
  std::string prefix_;
};

}  // namespace verl::single_controller
