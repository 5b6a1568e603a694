// How a worker-group call is split across ranks and gathered back (verl's @register dispatch modes):
//   OneToAll        the same input to every rank (init_model, save/load_checkpoint)
//   AllToAll        the caller gives one input per rank; outputs come back per rank
//   DpComputeProto  the batch is padded to a multiple of the world size, chunked contiguously, and the
//                   outputs concatenated with the padding removed (compute_log_prob, update_actor, ...)
//   DpComputeMetric like DpComputeProto, but outputs are only metrics (meta_info) and are merged
//   NdComputeProto  tensor-parallel groups: chunk by data-parallel rank, send a chunk to every rank of that
//                   dp rank, collect only from the rank each dp group marks as its collector (e.g. tp rank 0)
// Execute::RankZero runs the method on rank 0 only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verl/protocol/data_proto.h"

namespace verl::single_controller {

using protocol::DataProto;

enum class Dispatch { OneToAll, AllToAll, DpComputeProto, DpComputeMetric, NdComputeProto };
enum class Execute { All, RankZero };

const char* dispatch_name(Dispatch dispatch);

struct MethodSpec {
  std::string name;
  Dispatch dispatch = Dispatch::DpComputeProto;
  Execute execute = Execute::All;
  std::string mesh;  // NdComputeProto: the mesh ("actor", "critic", ...) whose dp ranks split the batch
};

// Where a rank sits in a named mesh.
struct MeshRankInfo {
  int dp_rank = 0;
  bool is_collect = true;
};

// Per-rank inputs for one call; nullopt: that rank does not run the method.
struct DispatchPlan {
  std::vector<std::optional<DataProto>> per_rank;
  int64_t pad = 0;  // rows appended by auto-padding, removed again on collect
};

// `mesh` holds each rank's info for spec.mesh (NdComputeProto only).
DispatchPlan dispatch_input(const MethodSpec& spec, const DataProto& input, int world_size,
                            const std::vector<MeshRankInfo>& mesh = {});
DispatchPlan dispatch_per_rank(const MethodSpec& spec, const std::vector<DataProto>& inputs, int world_size);

// Gathers the outputs of one call into a single DataProto (AllToAll and OneToAll: rank 0's output, or the
// first rank that ran; use the per-rank outputs directly when every rank's result matters).
DataProto collect_output(const MethodSpec& spec, const std::vector<std::optional<DataProto>>& outputs,
                         const DispatchPlan& plan, const std::vector<MeshRankInfo>& mesh = {});

}  // namespace verl::single_controller
