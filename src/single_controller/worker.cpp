#include "verl/single_controller/worker.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::single_controller {

const MethodSpec& Worker::method_spec(const std::string& name) const {
  for (const auto& spec : specs_) {
    if (spec.name == name) return spec;
  }
  std::vector<std::string> names;
  for (const auto& spec : specs_) names.push_back(spec.name);
  VERL_FAIL("worker", "worker group '", context_.group_name, "' has no method '", name, "'; methods: ", join(names, ", "));
}

DataProto Worker::invoke(const std::string& name, const DataProto& input) {
  method_spec(name);  // names the valid methods when unknown
  return functions_.at(name)(input);
}

MeshRankInfo Worker::mesh_info(const std::string& mesh) const {
  auto it = mesh_infos_.find(mesh);
  if (it != mesh_infos_.end()) return it->second;
  return MeshRankInfo{context_.rank, true};
}

void Worker::register_method(MethodSpec spec, Method method) {
  VERL_ASSERT(!functions_.count(spec.name), "worker", "method '", spec.name, "' registered twice");
  functions_[spec.name] = std::move(method);
  specs_.push_back(std::move(spec));
}

void Worker::adopt_methods(const std::string& prefix, Worker& inner) {
  for (const auto& spec : inner.methods()) {
    MethodSpec renamed = spec;
    renamed.name = prefix + "_" + spec.name;
    const std::string inner_name = spec.name;
    register_method(renamed, [&inner, inner_name](const DataProto& input) { return inner.invoke(inner_name, input); });
  }
  for (const auto& [mesh, info] : inner.mesh_infos_) set_mesh_info(mesh, info);
}

ColocatedWorker::ColocatedWorker(const WorkerContext& context,
                                 const std::vector<std::pair<std::string, WorkerFactory>>& roles)
    : Worker(context) {
  for (const auto& [prefix, factory] : roles) {
    VERL_ASSERT(!workers_.count(prefix), "worker", "role prefix '", prefix, "' co-located twice");
    auto worker = factory(context);
    adopt_methods(prefix, *worker);
    workers_[prefix] = std::move(worker);
  }
}

Worker& ColocatedWorker::role_worker(const std::string& prefix) {
  auto it = workers_.find(prefix);
  VERL_CHECK(it != workers_.end(), "worker", "no co-located role '", prefix, "'");
  return *it->second;
}

WorkerFactory colocated_factory(std::vector<std::pair<std::string, WorkerFactory>> roles) {
  return [roles](const WorkerContext& context) -> std::unique_ptr<Worker> {
    return std::make_unique<ColocatedWorker>(context, roles);
  };
}

}  // namespace verl::single_controller
