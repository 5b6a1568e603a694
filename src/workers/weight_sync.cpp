#include "verl/workers/weight_sync.h"

#include <sstream>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/model/lora.h"

namespace verl::workers {

namespace {

constexpr const char* kWeightSyncComponent = "weight_sync";

// The parameters a sync of `scope` sends, in the same order on every rank.
model::NamedTensors synced_parameters(model::CausalLM& module, WeightSyncScope scope) {
  if (scope == WeightSyncScope::AdaptersOnly) {
    VERL_CHECK(model::lora_state(module) != nullptr, kWeightSyncComponent,
               "an adapters-only sync of a model without LoRA");
    return model::lora_named_parameters(module);
  }
  model::NamedTensors out;
  for (const auto& item : module->named_parameters()) out.emplace_back(item.key(), item.value());
  return out;
}

// "name shape dtype" per parameter, one a line: what sender and receivers must agree on.
std::string parameter_signature(const model::NamedTensors& parameters) {
  std::ostringstream out;
  for (const auto& [name, t] : parameters) out << name << " " << t.sizes() << " " << t.scalar_type() << "\n";
  return out.str();
}

// The first line where two signatures differ (for the error).
std::string first_difference(const std::string& mine, const std::string& theirs) {
  std::istringstream a(mine), b(theirs);
  std::string line_a, line_b;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, line_a));
    const bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a && !more_b) return "";
    if (!more_a) return "the actor has '" + line_b + "', the rollout has no more parameters";
    if (!more_b) return "the rollout has '" + line_a + "', the actor has no more parameters";
    if (line_a != line_b) return "the actor has '" + line_b + "', the rollout has '" + line_a + "'";
  }
}

}  // namespace

void broadcast_weights(parallel::Comm& comm, model::CausalLM& module, WeightSyncScope scope) {
  VERL_CHECK(!module.is_empty(), kWeightSyncComponent, "no model to sync");
  const model::NamedTensors named = synced_parameters(module, scope);
  const std::string mine = parameter_signature(named);
  std::string theirs = mine;
  comm.broadcast_bytes(theirs, 0);
  const std::string difference = comm.rank() == 0 ? std::string() : first_difference(mine, theirs);
  // Every rank learns whether any receiver disagrees, so nobody starts a broadcast the others skip.
  torch::Tensor mismatch = torch::tensor({static_cast<int64_t>(difference.empty() ? 0 : 1)});
  comm.all_reduce(mismatch, parallel::ReduceOp::Max);
  VERL_CHECK(difference.empty(), kWeightSyncComponent, "the rollout model (rank ", comm.rank(),
             " of the weight-sync group) does not match the actor's: ", difference);
  VERL_CHECK(mismatch.item<int64_t>() == 0, kWeightSyncComponent,
             "a rollout rank's model does not match the actor's; no weights were sent");

  std::vector<torch::Tensor> parameters;
  for (const auto& [name, t] : named) parameters.push_back(t);
  // MPI moves host memory: a CUDA model goes through a host copy and back.
  const bool on_host = parameters.empty() || parameters.front().device().is_cpu();
  if (on_host) {
    parallel::broadcast_coalesced(comm, parameters, 0);
    return;
  }
  std::vector<torch::Tensor> host;
  for (const auto& p : parameters) host.push_back(p.detach().to(torch::kCPU));
  parallel::broadcast_coalesced(comm, host, 0);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i) parameters[i].copy_(host[i]);
}

}  // namespace verl::workers
