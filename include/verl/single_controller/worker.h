// Worker: one rank of a worker group. A subclass registers its methods (name, dispatch mode, function) in
// its constructor; constructors stay cheap (config only) because the controller may build one just to read
// the method table. Heavy set-up belongs in a registered `init_model` method.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "verl/single_controller/dispatch.h"

namespace verl::parallel {
class Comm;
}

namespace verl::single_controller {

struct WorkerContext {
  int rank = 0;
  int world_size = 1;
  std::string group_name;
  // The ranks of this worker group as a process group (gradient all-reduce, tensor parallel, weight
  // broadcast). Null when the transport gives none (in-process ranks share no communicator); workers that
  // need collectives with world_size > 1 then refuse to run.
  std::shared_ptr<parallel::Comm> comm;
  // With a separate Rollout role (actor_rollout_ref.hybrid_engine=false): actor rank 0 (its rank 0) and every
  // rollout rank, over which the actor broadcasts its weights after each update. Null on other ranks.
  std::shared_ptr<parallel::Comm> weight_sync;
};

class Worker {
 public:
  using Method = std::function<DataProto(const DataProto&)>;

  explicit Worker(WorkerContext context) : context_(std::move(context)) {}
  virtual ~Worker() = default;
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  const WorkerContext& context() const { return context_; }
  int rank() const { return context_.rank; }
  int world_size() const { return context_.world_size; }

  const std::vector<MethodSpec>& methods() const { return specs_; }
  const MethodSpec& method_spec(const std::string& name) const;  // error listing the valid names
  DataProto invoke(const std::string& name, const DataProto& input);

  // This rank's place in a named mesh; by default every rank is its own dp rank and collects.
  MeshRankInfo mesh_info(const std::string& mesh) const;

 protected:
  void register_method(MethodSpec spec, Method method);
  void set_mesh_info(const std::string& mesh, MeshRankInfo info) { mesh_infos_[mesh] = info; }
  // Copies another worker's methods under "<prefix>_<name>" (verl's colocated WorkerDict).
  void adopt_methods(const std::string& prefix, Worker& inner);

 private:
  WorkerContext context_;
  std::vector<MethodSpec> specs_;
  std::map<std::string, Method> functions_;
  std::map<std::string, MeshRankInfo> mesh_infos_;
};

// Builds the worker of one rank.
using WorkerFactory = std::function<std::unique_ptr<Worker>(const WorkerContext&)>;

// Several role workers living in one process per slot (roles mapped to the same resource pool). Methods are
// exposed as "<role>_<method>"; WorkerGroup::spawn gives per-role views that call them by plain names.
class ColocatedWorker : public Worker {
 public:
  ColocatedWorker(const WorkerContext& context, const std::vector<std::pair<std::string, WorkerFactory>>& roles);
  Worker& role_worker(const std::string& prefix);

 private:
  std::map<std::string, std::unique_ptr<Worker>> workers_;
};

// A factory for ColocatedWorker from per-role factories.
WorkerFactory colocated_factory(std::vector<std::pair<std::string, WorkerFactory>> roles);

}  // namespace verl::single_controller
