#include "verl/single_controller/worker_group.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::single_controller {

WorkerGroup::WorkerGroup(std::string name, std::shared_ptr<Transport> transport, std::string method_prefix)
    : name_(std::move(name)), transport_(std::move(transport)), prefix_(std::move(method_prefix)) {
  VERL_ASSERT(transport_ != nullptr, "worker_group", "no transport");
}

std::string WorkerGroup::full_name(const std::string& method) const {
  return prefix_.empty() ? method : prefix_ + "_" + method;
}

const MethodSpec& WorkerGroup::spec(const std::string& full) const {
  for (const auto& spec : transport_->methods()) {
    if (spec.name == full) return spec;
  }
  std::vector<std::string> names;
  for (const auto& spec : transport_->methods()) {
    if (prefix_.empty()) {
      names.push_back(spec.name);
    } else if (starts_with(spec.name, prefix_ + "_")) {
      names.push_back(spec.name.substr(prefix_.size() + 1));
    }
  }
  VERL_FAIL("worker_group", "worker group '", name_, "' has no method '",
            prefix_.empty() ? full : full.substr(prefix_.size() + 1), "'; methods: ", join(names, ", "));
}

bool WorkerGroup::has_method(const std::string& method) const {
  for (const auto& spec : transport_->methods()) {
    if (spec.name == full_name(method)) return true;
  }
  return false;
}

std::future<DataProto> WorkerGroup::call_async(const std::string& method, const DataProto& input) {
  const MethodSpec& method_spec = spec(full_name(method));
  std::vector<MeshRankInfo> mesh;
  if (method_spec.dispatch == Dispatch::NdComputeProto) mesh = transport_->mesh_info(method_spec.mesh);
  DispatchPlan plan = dispatch_input(method_spec, input, world_size(), mesh);
  auto outputs = transport_->execute(method_spec.name, plan.per_rank).share();
  MethodSpec spec_copy = method_spec;
  return std::async(std::launch::deferred, [outputs, plan = std::move(plan), spec_copy, mesh]() {
    return collect_output(spec_copy, outputs.get(), plan, mesh);
  });
}

DataProto WorkerGroup::call(const std::string& method, const DataProto& input) {
  return call_async(method, input).get();
}

std::vector<DataProto> WorkerGroup::call_each(const std::string& method, const std::vector<DataProto>& per_rank) {
  const MethodSpec& method_spec = spec(full_name(method));
  DispatchPlan plan = dispatch_per_rank(method_spec, per_rank, world_size());
  RankOutputs outputs = transport_->execute(method_spec.name, plan.per_rank).get();
  std::vector<DataProto> results;
  for (auto& output : outputs) results.push_back(output ? std::move(*output) : DataProto());
  return results;
}

std::map<std::string, WorkerGroup> WorkerGroup::spawn(const std::vector<std::string>& prefixes) const {
  std::map<std::string, WorkerGroup> views;
  for (const auto& prefix : prefixes) {
    bool found = false;
    for (const auto& spec : transport_->methods()) found = found || starts_with(spec.name, prefix + "_");
    VERL_CHECK(found, "worker_group", "worker group '", name_, "' hosts no role '", prefix, "'");
    views.emplace(prefix, WorkerGroup(name_ + "/" + prefix, transport_, prefix));
  }
  return views;
}

}  // namespace verl::single_controller
