#include "verl/model/tensor_parallel_model.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/parallel/tensor_parallel.h"

namespace verl::model {
namespace {

constexpr const char* kComponent = "model";

}  // namespace

int tensor_parallel_dim(const std::string& name) {
  for (const char* rows : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj."}) {
    if (name.find(rows) != std::string::npos) return 0;
  }
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return 0;
  for (const char* columns : {".o_proj.weight", ".down_proj.weight"}) {
    if (ends_with(name, columns)) return 1;
  }
  return -1;
}

CausalLM shard_model(CausalLM& whole, const TensorParallelGroup& tp) {
  VERL_CHECK(!whole->tp.active(), kComponent, "shard_model needs a whole model");
  const auto first = whole->parameters().front();
  CausalLM sharded(whole->config, whole->head, tp);
  sharded->to(first.device(), first.scalar_type());
  auto whole_params = whole->named_parameters();
  torch::NoGradGuard no_grad;
  for (auto& item : sharded->named_parameters()) {
    const torch::Tensor& full = whole_params[item.key()];
    const int dim = tensor_parallel_dim(item.key());
    item.value().copy_(dim < 0 || !tp.active() ? full : parallel::tp_shard(full, dim, *tp.comm));
  }
  sharded->train(whole->is_training());
  sharded->model->gradient_checkpointing = whole->model->gradient_checkpointing;
  return sharded;
}

NamedTensors gather_full_state(CausalLM& model) {
  NamedTensors out;
  torch::NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) {
    torch::Tensor t = item.value().detach();
    const int dim = tensor_parallel_dim(item.key());
    if (model->tp.active() && dim >= 0) {
      // all_gather concatenates along dim 0: bring the split dimension first and back.
      t = model->tp.comm->all_gather(t.movedim(dim, 0).contiguous()).movedim(0, dim).contiguous();
    }
    out.emplace_back(item.key(), t);
  }
  return out;
}

CausalLM gather_full_model(CausalLM& model) {
  if (!model->tp.active()) return model;
  NamedTensors state = gather_full_state(model);
  const auto first = model->parameters().front();
  CausalLM whole(model->config, model->head);
  whole->to(first.device(), first.scalar_type());
  auto params = whole->named_parameters();
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state) params[name].copy_(tensor);
  whole->train(model->is_training());
  return whole;
}

std::vector<bool> parameter_is_slice(CausalLM& model) {
  std::vector<bool> out;
  for (const auto& item : model->named_parameters()) {
    out.push_back(model->tp.active() && tensor_parallel_dim(item.key()) >= 0);
  }
  return out;
}

void check_same_tokens_on_tensor_parallel_ranks(const torch::Tensor& tokens, parallel::Comm& tp, int64_t step) {
  // Two checksums (the count and a position-weighted sum), compared through their max and min over the group.
  const auto flat = tokens.reshape({-1}).to(torch::kCPU).to(torch::kFloat64);
  const auto weights = torch::arange(1, flat.numel() + 1, torch::kFloat64);
  const auto sums = torch::stack({torch::tensor(static_cast<double>(flat.numel()), torch::kFloat64),
                                  (flat * weights).sum(), flat.sum()});
  auto high = sums.clone();
  tp.all_reduce(high, parallel::ReduceOp::Max);
  auto negated_low = -sums;
  tp.all_reduce(negated_low, parallel::ReduceOp::Max);
  VERL_CHECK(torch::equal(high, -negated_low), kComponent, "the ", tp.size(), " tensor-parallel ranks of one model copy "
             "chose different tokens at generation step ", step, " (this is rank ", tp.rank(),
             "); they must sample the same way from the same seed");
}

}  // namespace verl::model
