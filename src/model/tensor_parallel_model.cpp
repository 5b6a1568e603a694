#include "verl/model/tensor_parallel_model.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/model/lora.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/parallel/tensor_parallel.h"

namespace verl::model {
namespace {

constexpr const char* kTensorParallelModelComponent = "model";

}  // namespace

int tensor_parallel_dim(const std::string& name) {
  bool column = false;
  for (const char* rows : {".q_proj.", ".k_proj.", ".v_proj.", ".gate_proj.", ".up_proj."}) {
    column = column || name.find(rows) != std::string::npos;
  }
  const bool row = name.find(".o_proj.") != std::string::npos || name.find(".down_proj.") != std::string::npos;
  // LoRA: x A^T B^T splits like x W^T when B takes W's rows (column base) or A takes W's columns (row base).
  if (name.find(".lora_A.") != std::string::npos) return row ? 1 : -1;
  if (name.find(".lora_B.") != std::string::npos) return column ? 0 : -1;
  if (column) return 0;
  if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return 0;
  for (const char* columns : {".o_proj.weight", ".down_proj.weight"}) {
    if (ends_with(name, columns)) return 1;
  }
  return -1;
}

torch::Tensor gather_parameter(const std::string& name, const torch::Tensor& slice, const TensorParallelGroup& tp) {
  const int dim = tensor_parallel_dim(name);
  if (!tp.active() || dim < 0) return slice;
  // all_gather concatenates along dim 0: bring the split dimension first and back.
  return tp.comm->all_gather(slice.movedim(dim, 0).contiguous()).movedim(0, dim).contiguous();
}

torch::Tensor shard_parameter(const std::string& name, const torch::Tensor& whole, const TensorParallelGroup& tp) {
  const int dim = tensor_parallel_dim(name);
  return dim < 0 || !tp.active() ? whole : parallel::tp_shard(whole, dim, *tp.comm);
}

CausalLM shard_model(CausalLM& whole, const TensorParallelGroup& tp) {
  VERL_CHECK(!whole->tp.active(), kTensorParallelModelComponent, "shard_model needs a whole model");
  auto whole_params = whole->named_parameters();
  return rebuild_model(whole, tp, whole->pp,
                       [&](const std::string& name) { return shard_parameter(name, whole_params[name], tp); });
}

NamedTensors gather_full_state(CausalLM& model) {
  NamedTensors out;
  torch::NoGradGuard no_grad;
  for (const auto& item : model->named_parameters()) {
    out.emplace_back(item.key(), gather_parameter(item.key(), item.value().detach(), model->tp));
  }
  return out;
}

CausalLM gather_full_model(CausalLM& model) {
  if (model->pp.active()) {
    CausalLM all_layers = gather_pipeline_stages(model);
    return gather_full_model(all_layers);
  }
  if (!model->tp.active()) return model;
  NamedTensors state = gather_full_state(model);
  const auto first = model->parameters().front();
  CausalLM whole(model->config, model->head);
  whole->to(first.device(), first.scalar_type());
  // The adapters' values come from `state` below; the spec and the on / merged flags from the model's.
  if (const auto lora = lora_state(model)) *add_lora(whole, lora->spec, /*seed=*/0) = *lora;
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
  VERL_CHECK(torch::equal(high, -negated_low), kTensorParallelModelComponent, "the ", tp.size(),
             " tensor-parallel ranks of one model copy "
             "chose different tokens at generation step ",
             step, " (this is rank ", tp.rank(), "); they must sample the same way from the same seed");
}

}  // namespace verl::model
