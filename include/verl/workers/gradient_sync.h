// The data-parallel side of an optimizer step (actor.strategy / critic.strategy = fsdp on several ranks):
//   gradient_averager   after the backward passes of a mini-batch every rank holds the mean of the ranks'
//                       gradients (bucketed: one collective per 25 MiB; deterministic, parallel/comm.h)
//   OptimizerShard      ZeRO-1: each parameter belongs to one rank, whose optimizer alone steps it and
//                       keeps its AdamW moments, so optimizer memory per rank is ~1/DP; the owners then
//                       broadcast the updated parameters, and every replica stays bitwise the same.
//                       ZeRO-2 (when it shards over the whole data-parallel group): instead of the all-reduce,
//                       gradients are reduce-scattered so each averaged gradient reaches its owner only and the
//                       other ranks release theirs (gradient memory after the reduction ~1/DP, half the traffic);
//                       the same bits as the all-reduce, and the clip norm is assembled from the owners'.
//                       With fsdp_config.fsdp_size < DP it shards within groups of fsdp_size ranks, each
//                       group holding a full copy (verl's HSDP), after the all-reduce over all of them.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "verl/model/fully_sharded_model.h"
#include "verl/workers/optimizer.h"

namespace verl::parallel {
class Comm;
}

namespace verl::workers {

using GradientAverager = std::function<void(const std::vector<torch::Tensor>& parameters)>;

// nullptr when the group has one rank (nothing to average) or no communicator. `reduce_dtype`
// (fsdp_config.mixed_precision.reduce_dtype, FSDP's MixedPrecision): the gradients are cast to it for the
// all-reduce (on the wire and in the sums) and back to their own dtype after; fp32 (the default) leaves them
// in their own dtype.
GradientAverager gradient_averager(std::shared_ptr<parallel::Comm> comm,
                                   torch::ScalarType reduce_dtype = torch::kFloat32);

class OptimizerShard {
 public:
  // Parameters are dealt whole, largest first, each to the rank owning the fewest elements so far (ties:
  // the lower rank); every rank computes the same assignment from the same list.
  OptimizerShard(std::shared_ptr<parallel::Comm> comm, std::vector<torch::Tensor> parameters,
                 bool reduces_gradients = false, torch::ScalarType reduce_dtype = torch::kFloat32);

  // ZeRO-2: whether this shard averages the gradients itself (reduce_gradients) in place of the all-reduce.
  bool reduces_gradients() const { return reduces_gradients_; }
  // Collective: the mean over the group of each gradient lands on the parameter's owner (bucketed
  // reduce-scatter, 25 MiB per collective, rank-order sums: the all-reduce's bits, in reduce_dtype as well);
  // other ranks' gradients are released. A parameter no loss reached counts as zeros. Trainable parameters only.
  void reduce_gradients();
  parallel::Comm& comm() const { return *comm_; }

  // optimizer.step() on this rank's parameters only (the others' gradients are dropped first, so the
  // optimizer neither updates them nor allocates state for them), then each owner's parameters are
  // broadcast to every rank. The gradients must already be averaged and clipped.
  void step(torch::optim::Optimizer& optimizer);

  int64_t owned_numel() const { return owned_numel_; }
  int owner(size_t parameter_index) const { return owner_.at(parameter_index); }

 private:
  std::shared_ptr<parallel::Comm> comm_;
  std::vector<torch::Tensor> parameters_;
  std::vector<int> owner_;
  int64_t owned_numel_ = 0;
  bool reduces_gradients_ = false;
  torch::ScalarType reduce_dtype_ = torch::kFloat32;
};

// One optimizer step's averaging over the data-parallel ranks: ZeRO-2's reduce-scatter when `shard` shards
// gradients, else `all_reduce` (when set). Returns where the gradients then are, for clip_grad_norm, with the
// tensor-parallel slices (`is_slice`) when `tensor_parallel` is set.
GradientPlacement average_gradients(const std::vector<torch::Tensor>& parameters, OptimizerShard* shard,
                                    const GradientAverager& all_reduce, parallel::Comm* tensor_parallel,
                                    std::vector<bool> is_slice);

// Pipeline parallelism: the norm sums over `model`'s stages, `counts_in_norm` (per parameter of the placement)
// leaving out duplicates. Nothing without stages.
void add_pipeline_stages(GradientPlacement& placement, model::CausalLM& model, std::vector<bool> counts_in_norm);

// The group a role's optimizer state is sharded over: fsdp, groups of fsdp_size consecutive DP ranks
// (sharding_group); megatron (tp_size > 1), every DP rank with use_distributed_optimizer and none without.
std::shared_ptr<parallel::Comm> optimizer_sharding_group(const std::shared_ptr<parallel::Comm>& data_parallel,
                                                         int64_t tp_size, bool use_distributed_optimizer,
                                                         int64_t fsdp_size, const std::string& fsdp_size_key);

// fsdp_config.fsdp_size: the communicator of this rank's sharding group, consecutive ranks of `comm` in groups
// of fsdp_size (-1 or the group size: `comm` itself). Collective on `comm` when it splits. `key` names the
// config key in the error when fsdp_size does not divide the group.
std::shared_ptr<parallel::Comm> sharding_group(std::shared_ptr<parallel::Comm> comm, int64_t fsdp_size,
                                               const std::string& key);

// nullptr when the group has one rank or no communicator (the optimizer then holds everything). Otherwise
// logs, under `component`, how many of the parameters this rank's optimizer holds. `data_parallel` is the group
// the gradients are averaged over: when it is `comm` itself the shard also shards gradients (ZeRO-2).
std::shared_ptr<OptimizerShard> optimizer_shard(std::shared_ptr<parallel::Comm> comm,
                                                const std::vector<torch::Tensor>& parameters, const char* component,
                                                const std::shared_ptr<parallel::Comm>& data_parallel = nullptr,
                                                torch::ScalarType reduce_dtype = torch::kFloat32);

// fsdp_config.reshard_after_forward=true: `module`'s parameters sharded over this rank's sharding group (fsdp_size
// consecutive ranks of `data_parallel`), the groups replicating each other (HSDP), and the sharded model logged
// under `component` ("ZeRO-3 over N ranks: this rank holds ..."). Null, leaving the module whole, when the group
// has one rank (fsdp_size=1, a single rank, no communicator). Collective on `data_parallel` when it splits.
std::shared_ptr<model::FullyShardedModel> fully_shard(model::CausalLM module,
                                                      const std::shared_ptr<parallel::Comm>& data_parallel,
                                                      int64_t fsdp_size, const std::string& fsdp_size_key,
                                                      const char* component,
                                                      torch::ScalarType reduce_dtype = torch::kFloat32);

// ZeRO-3's optimizer step: the shards' gradients (already averaged by the sharded model) clipped by the whole
// model's norm, then optimizer.step() on the shards, or a skipped step on a non-finite norm. Returns the norm.
double sharded_optimizer_step(model::FullyShardedModel& model, torch::optim::Optimizer& optimizer, double max_norm,
                              const char* component);

}  // namespace verl::workers
