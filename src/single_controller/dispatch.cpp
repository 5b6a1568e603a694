#include "verl/single_controller/dispatch.h"

#include <algorithm>

#include "verl/common/error.h"

namespace verl::single_controller {

const char* dispatch_name(Dispatch dispatch) {
  switch (dispatch) {
    case Dispatch::OneToAll: return "ONE_TO_ALL";
    case Dispatch::AllToAll: return "ALL_TO_ALL";
    case Dispatch::DpComputeProto: return "DP_COMPUTE_PROTO";
    case Dispatch::DpComputeMetric: return "DP_COMPUTE_METRIC";
    case Dispatch::NdComputeProto: return "ND_COMPUTE_PROTO";
  }
  return "?";
}

namespace {

int mesh_dp_size(const MethodSpec& spec, const std::vector<MeshRankInfo>& mesh, int world_size) {
  VERL_CHECK(static_cast<int>(mesh.size()) == world_size, "dispatch", "method '", spec.name, "': mesh '", spec.mesh,
             "' describes ", mesh.size(), " ranks, the group has ", world_size);
  int dp_size = 0;
  for (const auto& info : mesh) dp_size = std::max(dp_size, info.dp_rank + 1);
  for (int dp = 0; dp < dp_size; ++dp) {
    int collectors = 0;
    for (const auto& info : mesh) collectors += (info.dp_rank == dp && info.is_collect) ? 1 : 0;
    VERL_CHECK(collectors == 1, "dispatch", "method '", spec.name, "': dp rank ", dp, " of mesh '", spec.mesh, "' has ",
               collectors, " collecting ranks, expected exactly 1");
  }
  return dp_size;
}

void apply_rank_zero(const MethodSpec& spec, DispatchPlan& plan) {
  if (spec.execute != Execute::RankZero) return;
  for (size_t rank = 1; rank < plan.per_rank.size(); ++rank) plan.per_rank[rank].reset();
}

}  // namespace

DispatchPlan dispatch_input(const MethodSpec& spec, const DataProto& input, int world_size,
                            const std::vector<MeshRankInfo>& mesh) {
  VERL_ASSERT(world_size > 0, "dispatch", "empty worker group");
  DispatchPlan plan;
  plan.per_rank.resize(static_cast<size_t>(world_size));
  switch (spec.dispatch) {
    case Dispatch::OneToAll:
      for (auto& slot : plan.per_rank) slot = input;
      break;
    case Dispatch::AllToAll:
      VERL_FAIL("dispatch", "method '", spec.name, "' is ALL_TO_ALL: call it with one input per rank");
    case Dispatch::DpComputeProto:
    case Dispatch::DpComputeMetric: {
      DataProto padded = input;
      plan.pad = padded.pad_to_divisor(world_size);
      std::vector<DataProto> chunks = padded.size() == 0 ? std::vector<DataProto>(world_size, padded)
                                                         : padded.chunk(world_size);
      for (int rank = 0; rank < world_size; ++rank) plan.per_rank[rank] = chunks[rank];
      break;
    }
    case Dispatch::NdComputeProto: {
      const int dp_size = mesh_dp_size(spec, mesh, world_size);
      DataProto padded = input;
      plan.pad = padded.pad_to_divisor(dp_size);
      std::vector<DataProto> chunks = padded.size() == 0 ? std::vector<DataProto>(dp_size, padded)
                                                         : padded.chunk(dp_size);
      for (int rank = 0; rank < world_size; ++rank) plan.per_rank[rank] = chunks[mesh[rank].dp_rank];
      break;
    }
  }
  apply_rank_zero(spec, plan);
  return plan;
}

DispatchPlan dispatch_per_rank(const MethodSpec& spec, const std::vector<DataProto>& inputs, int world_size) {
  VERL_CHECK(static_cast<int>(inputs.size()) == world_size, "dispatch", "method '", spec.name, "' got ", inputs.size(),
             " per-rank inputs for a group of ", world_size, " ranks");
  DispatchPlan plan;
  for (const auto& input : inputs) plan.per_rank.emplace_back(input);
  apply_rank_zero(spec, plan);
  return plan;
}

DataProto collect_output(const MethodSpec& spec, const std::vector<std::optional<DataProto>>& outputs,
                         const DispatchPlan& plan, const std::vector<MeshRankInfo>& mesh) {
  std::vector<DataProto> gathered;
  switch (spec.dispatch) {
    case Dispatch::OneToAll:
    case Dispatch::AllToAll:
      for (const auto& output : outputs) {
        if (output) return *output;
      }
      return DataProto();
    case Dispatch::DpComputeProto:
    case Dispatch::DpComputeMetric:
      for (const auto& output : outputs) {
        if (output) gathered.push_back(*output);
      }
      break;
    case Dispatch::NdComputeProto: {
      std::vector<std::pair<int, DataProto>> by_dp;
      for (size_t rank = 0; rank < outputs.size(); ++rank) {
        if (outputs[rank] && mesh[rank].is_collect) by_dp.emplace_back(mesh[rank].dp_rank, *outputs[rank]);
      }
      std::sort(by_dp.begin(), by_dp.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& entry : by_dp) gathered.push_back(std::move(entry.second));
      break;
    }
  }
  if (gathered.empty()) return DataProto();
  DataProto merged = DataProto::concat(gathered);
  // Outputs with one row per input row carry the padding; metric-only outputs have no rows.
  if (plan.pad > 0 && merged.size() > 0) merged.unpad(plan.pad);
  return merged;
}

}  // namespace verl::single_controller
