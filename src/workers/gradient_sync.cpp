#include "verl/workers/gradient_sync.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

GradientAverager gradient_averager(std::shared_ptr<parallel::Comm> comm, torch::ScalarType reduce_dtype) {
  if (!comm || comm->size() == 1) return nullptr;
  return [comm, reduce_dtype](const std::vector<torch::Tensor>& parameters) {
    std::vector<torch::Tensor> grads, reduced;
    for (const auto& p : parameters) {
      if (!p.requires_grad()) continue;
      // A parameter no loss reached on this rank still joins the collective (as zeros), so every rank
      // passes the same tensors in the same order.
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
      // fp32 (the default) leaves the gradients in their own dtype.
      reduced.push_back(reduce_dtype == torch::kFloat32 ? p.grad() : p.grad().to(reduce_dtype));
    }
    parallel::all_reduce_coalesced(*comm, reduced, parallel::ReduceOp::Average);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!reduced[i].is_same(grads[i])) grads[i].copy_(reduced[i]);
    }
  };
}

OptimizerShard::OptimizerShard(std::shared_ptr<parallel::Comm> comm, std::vector<torch::Tensor> parameters,
                               bool reduces_gradients, torch::ScalarType reduce_dtype)
    : comm_(std::move(comm)),
      parameters_(std::move(parameters)),
      owner_(parameters_.size(), 0),
      reduces_gradients_(reduces_gradients),
      reduce_dtype_(reduce_dtype) {
  VERL_ASSERT(comm_ != nullptr, "optimizer_shard", "an optimizer shard needs a communicator");
  std::vector<size_t> order(parameters_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return parameters_[a].numel() > parameters_[b].numel(); });
  std::vector<int64_t> load(static_cast<size_t>(comm_->size()), 0);
  for (size_t i : order) {
    const int rank = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owner_[i] = rank;
    load[static_cast<size_t>(rank)] += parameters_[i].numel();
  }
  owned_numel_ = load[static_cast<size_t>(comm_->rank())];
}

void OptimizerShard::reduce_gradients() {
  torch::NoGradGuard no_grad;
  const int size = comm_->size(), me = comm_->rank();
  constexpr int64_t kBucketBytes = 25LL << 20;
  std::vector<size_t> trainable;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (parameters_[i].requires_grad()) trainable.push_back(i);
  }
  size_t begin = 0;
  while (begin < trainable.size()) {
    // A bucket of consecutive parameters, at least one, up to 25 MiB.
    size_t end = begin;
    int64_t bytes = 0;
    while (end < trainable.size()) {
      const auto& p = parameters_[trainable[end]];
      const int64_t b = p.numel() * static_cast<int64_t>(p.element_size());
      if (end > begin && bytes + b > kBucketBytes) break;
      bytes += b;
      ++end;
    }
    // Rank r's chunk holds the gradients of the bucket's parameters r owns, in order, padded to the longest.
    std::vector<int64_t> chunk(static_cast<size_t>(size), 0);
    for (size_t k = begin; k < end; ++k) chunk[static_cast<size_t>(owner_[trainable[k]])] += parameters_[trainable[k]].numel();
    const int64_t width = *std::max_element(chunk.begin(), chunk.end());
    if (width > 0) {
      torch::Tensor buffer = torch::zeros({size * width}, parameters_[trainable[begin]].options());
      std::vector<int64_t> offset(static_cast<size_t>(size), 0);
      for (size_t k = begin; k < end; ++k) {
        const auto& p = parameters_[trainable[k]];
        const int owner = owner_[trainable[k]];
        if (p.grad().defined()) {
          buffer.narrow(0, owner * width + offset[static_cast<size_t>(owner)], p.numel()).copy_(p.grad().reshape({-1}));
        }
        offset[static_cast<size_t>(owner)] += p.numel();
      }
      const auto wire = reduce_dtype_ == torch::kFloat32 ? buffer.scalar_type() : reduce_dtype_;
      torch::Tensor mine = comm_->reduce_scatter(buffer.to(wire), parallel::ReduceOp::Average).to(buffer.scalar_type());
      int64_t at = 0;
      for (size_t k = begin; k < end; ++k) {
        auto& p = parameters_[trainable[k]];
        if (owner_[trainable[k]] != me) {
          if (p.grad().defined()) p.mutable_grad().reset();
          continue;
        }
        p.mutable_grad() = mine.narrow(0, at, p.numel()).view(p.sizes()).clone();
        at += p.numel();
      }
    }
    begin = end;
  }
}

void OptimizerShard::step(torch::optim::Optimizer& optimizer) {
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (owner_[i] != comm_->rank() && parameters_[i].grad().defined()) parameters_[i].mutable_grad().reset();
  }
  optimizer.step();
  // One broadcast per owner: its parameters flattened into one buffer (same dtype: the module's).
  torch::NoGradGuard no_grad;
  for (int rank = 0; rank < comm_->size(); ++rank) {
    std::vector<torch::Tensor> flat;
    std::vector<size_t> members;
    for (size_t i = 0; i < parameters_.size(); ++i) {
      if (owner_[i] != rank) continue;
      flat.push_back(parameters_[i].detach().reshape({-1}));
      members.push_back(i);
    }
    if (members.empty()) continue;
    torch::Tensor buffer = torch::cat(flat);
    comm_->broadcast(buffer, rank);
    if (rank == comm_->rank()) continue;
    int64_t offset = 0;
    for (size_t i : members) {
      const int64_t n = parameters_[i].numel();
      parameters_[i].detach().copy_(buffer.narrow(0, offset, n).view(parameters_[i].sizes()));
      offset += n;
    }
  }
}

GradientPlacement average_gradients(const std::vector<torch::Tensor>& parameters, OptimizerShard* shard,
                                    const GradientAverager& all_reduce, parallel::Comm* tensor_parallel,
                                    std::vector<bool> is_slice) {
  GradientPlacement placement;
  if (shard != nullptr && shard->reduces_gradients()) {
    shard->reduce_gradients();
    placement.owners = &shard->comm();
  } else if (all_reduce) {
    all_reduce(parameters);
  }
  if (tensor_parallel != nullptr) {
    placement.tensor_parallel = tensor_parallel;
    placement.is_slice = std::move(is_slice);
  }
  return placement;
}

void add_pipeline_stages(GradientPlacement& placement, model::CausalLM& model, std::vector<bool> counts_in_norm) {
  if (!model->pp.active()) return;
  placement.pipeline = model->pp.links->stages.get();
  placement.counts_in_norm = std::move(counts_in_norm);
}

std::shared_ptr<parallel::Comm> optimizer_sharding_group(const std::shared_ptr<parallel::Comm>& data_parallel,
                                                         int64_t tp_size, bool use_distributed_optimizer,
                                                         int64_t fsdp_size, const std::string& fsdp_size_key) {
  if (tp_size > 1) return use_distributed_optimizer ? data_parallel : nullptr;
  return sharding_group(data_parallel, fsdp_size, fsdp_size_key);
}

std::shared_ptr<parallel::Comm> sharding_group(std::shared_ptr<parallel::Comm> comm, int64_t fsdp_size,
                                               const std::string& key) {
  if (!comm || fsdp_size == -1 || fsdp_size == comm->size()) return comm;
  VERL_CHECK(fsdp_size >= 1 && comm->size() % fsdp_size == 0, "config", key, "=", fsdp_size,
             " must divide the worker group's ", comm->size(), " ranks");
  // Consecutive ranks shard together (verl's HSDP mesh: replicate x shard, shard innermost).
  const int group = static_cast<int>(comm->rank() / fsdp_size);
  return comm->split(group, comm->rank());
}

std::shared_ptr<OptimizerShard> optimizer_shard(std::shared_ptr<parallel::Comm> comm,
                                                const std::vector<torch::Tensor>& parameters, const char* component,
                                                const std::shared_ptr<parallel::Comm>& data_parallel,
                                                torch::ScalarType reduce_dtype) {
  if (!comm || comm->size() == 1) return nullptr;
  int64_t total = 0;
  for (const auto& p : parameters) total += p.numel();
  const bool zero2 = data_parallel == comm;
  auto shard = std::make_shared<OptimizerShard>(comm, parameters, zero2, reduce_dtype);
  VERL_LOG(Info, component) << (zero2 ? "ZeRO-2" : "ZeRO-1") << " over " << comm->size()
                            << " ranks: this rank's optimizer holds " << shard->owned_numel() << " of " << total
                            << " parameters" << (zero2 ? " and keeps only their gradients after each reduction" : "");
  return shard;
}

std::shared_ptr<model::FullyShardedModel> fully_shard(model::CausalLM module,
                                                      const std::shared_ptr<parallel::Comm>& data_parallel,
                                                      int64_t fsdp_size, const std::string& fsdp_size_key,
                                                      const char* component, torch::ScalarType reduce_dtype) {
  if (!data_parallel || data_parallel->size() == 1) return nullptr;
  auto group = sharding_group(data_parallel, fsdp_size, fsdp_size_key);
  std::shared_ptr<parallel::Comm> replicas;
  if (group->size() < data_parallel->size()) {
    // The ranks holding the same shard: the same position in every sharding group.
    replicas = data_parallel->split(data_parallel->rank() % group->size(), data_parallel->rank());
  }
  if (group->size() == 1) return nullptr;  // fsdp_size=1: whole replicas, gradients all-reduced
  auto sharded = std::make_shared<model::FullyShardedModel>(std::move(module), group, replicas, reduce_dtype);
  VERL_LOG(Info, component) << "ZeRO-3 over " << group->size() << " ranks"
                            << (replicas ? " (" + std::to_string(replicas->size()) + " replicas)" : std::string())
                            << ": this rank holds " << sharded->shard_numel() << " of " << sharded->model_numel()
                            << " parameters (with padding), their gradients and optimizer state; each layer is "
                               "gathered only while it runs";
  return sharded;
}

double sharded_optimizer_step(model::FullyShardedModel& model, torch::optim::Optimizer& optimizer, double max_norm,
                              const char* component) {
  GradientPlacement placement;
  placement.sharded = &model.shard_group();
  const double grad_norm = clip_grad_norm(model.shards(), max_norm, placement);
  if (!std::isfinite(grad_norm)) {
    VERL_LOG(Warn, component) << "grad_norm is not finite (" << grad_norm << "); skipping this optimizer step";
    optimizer.zero_grad();
  } else {
    optimizer.step();
  }
  return grad_norm;
}

}  // namespace verl::workers
