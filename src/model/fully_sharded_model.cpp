#include "verl/model/fully_sharded_model.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "verl/common/error.h"
#include "verl/io/safetensors.h"
#include "verl/model/lora.h"
#include "verl/parallel/comm.h"

namespace verl::model {
namespace {

constexpr const char* kFullyShardedModelComponent = "zero3";
constexpr const char* kFormat = "verl.cpp zero3 shard";
const std::string kLayerPrefix = "model.layers.";

// 0 for the root, i + 1 for model.layers.i.*
size_t unit_of(const std::string& name) {
  if (name.compare(0, kLayerPrefix.size(), kLayerPrefix) != 0) return 0;
  const size_t end = name.find('.', kLayerPrefix.size());
  return static_cast<size_t>(std::stoll(name.substr(kLayerPrefix.size(), end - kLayerPrefix.size()))) + 1;
}

// The part of parameter `param` (elements [offset, offset + numel) of its unit's flat vector) inside a rank's range
// [begin, end): `length` elements, starting `at` elements into the rank's shard.
struct Run {
  size_t param;
  int64_t at, length;
};
std::vector<Run> runs_in_range(const std::vector<int64_t>& offsets, const std::vector<int64_t>& numels, int64_t begin,
                               int64_t end) {
  std::vector<Run> runs;
  for (size_t k = 0; k < offsets.size(); ++k) {
    const int64_t lo = std::max(begin, offsets[k]), hi = std::min(end, offsets[k] + numels[k]);
    if (hi > lo) runs.push_back({k, lo - begin, hi - lo});
  }
  return runs;
}

// The tensors of `params` that take gradients.
std::vector<torch::Tensor> trained(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) {
    if (p.requires_grad()) out.push_back(p);
  }
  return out;
}

}  // namespace

// A decoder layer whose parameters are gathered only while it runs: forward keeps just the layer's input; backward
// gathers again, recomputes the layer, reduce-scatters its parameter gradients into the unit's shard (the gradient
// returned for the `shard` input, which autograd accumulates into shard.grad) and releases it. LoRA factors (whole,
// outside the shard) get their gradients accumulated into their .grad, as autograd would.
struct FullyShardedModel::LayerFunction : public torch::autograd::Function<LayerFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& cos,
                               const torch::Tensor& sin, const torch::Tensor& mask_bias, const torch::Tensor* packed,
                               const torch::Tensor& shard, FullyShardedModel* self, int64_t layer) {
    (void)shard;  // an input only so that autograd routes the layer's gradient to it
    // By pointer, not a tensor input: autograd cannot take an undefined tensor (a padded forward's) as one.
    if (packed->defined()) ctx->saved_data["packed"] = *packed;
    ctx->saved_data["self"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(self));
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["h_requires_grad"] = h.requires_grad();
    ctx->save_for_backward({h, cos, sin, mask_bias});
    const size_t unit = static_cast<size_t>(layer) + 1;
    self->gather(unit);
    torch::Tensor out = self->module_->model->layer_list[static_cast<size_t>(layer)]->forward(h, cos, sin, mask_bias,
                                                                                              nullptr, layer, *packed);
    self->release(unit);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto* self = reinterpret_cast<FullyShardedModel*>(static_cast<intptr_t>(ctx->saved_data["self"].toInt()));
    const int64_t layer = ctx->saved_data["layer"].toInt();
    const bool h_requires_grad = ctx->saved_data["h_requires_grad"].toBool();
    const size_t unit = static_cast<size_t>(layer) + 1;
    auto saved = ctx->get_saved_variables();
    self->gather(unit);
    auto h = saved[0].detach().requires_grad_(h_requires_grad);
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      const auto packed = ctx->saved_data.find("packed");
      out = self->module_->model->layer_list[static_cast<size_t>(layer)]->forward(
          h, saved[1], saved[2], saved[3], nullptr, layer,
          packed == ctx->saved_data.end() ? torch::Tensor() : packed->second.toTensor());
    }
    const Unit& u = self->units_[unit];
    const bool shard_trains = self->shards_[unit].requires_grad();
    std::vector<torch::Tensor> inputs;
    if (shard_trains) inputs = u.params;
    const std::vector<torch::Tensor> adapters = trained(u.adapters);
    inputs.insert(inputs.end(), adapters.begin(), adapters.end());
    if (h_requires_grad) inputs.push_back(h);
    auto grads = torch::autograd::grad({out}, inputs, {grad_outputs[0]}, /*retain_graph=*/false,
                                       /*create_graph=*/false, /*allow_unused=*/true);
    torch::Tensor h_grad = h_requires_grad ? grads.back() : torch::Tensor();
    const size_t first_adapter = shard_trains ? u.params.size() : 0;
    {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < adapters.size(); ++k) {
        const torch::Tensor& g = grads[first_adapter + k];
        if (!g.defined()) continue;
        torch::Tensor a = adapters[k];
        if (a.grad().defined()) {
          a.mutable_grad().add_(g);
        } else {
          a.mutable_grad() = g.detach().clone();
        }
      }
    }
    torch::Tensor shard_grad;
    if (shard_trains) {
      grads.resize(u.params.size());
      shard_grad = self->reduce_gradients(unit, grads);
    }
    self->release(unit);
    // One gradient per forward argument: h, cos, sin, mask_bias, packed, shard, self, layer.
    return {h_grad,          torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), shard_grad,      torch::Tensor(), torch::Tensor()};
  }
};

FullyShardedModel::FullyShardedModel(CausalLM module, std::shared_ptr<parallel::Comm> shard_group,
                                     std::shared_ptr<parallel::Comm> replicas, torch::ScalarType reduce_dtype)
    : module_(std::move(module)), group_(std::move(shard_group)), replicas_(std::move(replicas)),
      reduce_dtype_(reduce_dtype) {
  VERL_ASSERT(group_ != nullptr && group_->size() > 1, kFullyShardedModelComponent,
              "ZeRO-3 needs a shard group of two or more ranks");
  VERL_CHECK(!module_->tp.active(), kFullyShardedModelComponent,
             "parameter sharding (fsdp_config.reshard_after_forward) cannot be combined with tensor parallelism");
  torch::NoGradGuard no_grad;
  const bool lora = lora_state(module_) != nullptr;
  units_.resize(module_->model->layer_list.size() + 1);
  for (const auto& item : module_->named_parameters()) {
    const size_t u = unit_of(item.key());
    VERL_ASSERT(u < units_.size(), kFullyShardedModelComponent, "parameter '", item.key(),
                "' names a layer the model does not have");
    Unit& unit = units_[u];
    // Under LoRA, what trains (the adapters, and a value model's head: PEFT's modules_to_save) is small: whole and
    // replicated, its gradients averaged by the caller; the shards hold the frozen base.
    if (is_lora_parameter_name(item.key()) || (lora && item.value().requires_grad())) {
      unit.adapters.push_back(item.value());
      continue;
    }
    unit.params.push_back(item.value());
    unit.names.push_back(item.key());
    unit.shapes.push_back(item.value().sizes().vec());
    unit.offsets.push_back(unit.numel);
    unit.numels.push_back(item.value().numel());
    unit.numel += item.value().numel();
  }
  const int64_t n = group_->size(), r = group_->rank();
  for (auto& unit : units_) {
    VERL_ASSERT(!unit.params.empty(), kFullyShardedModelComponent, "a unit without parameters");
    unit.padded = (unit.numel + n - 1) / n * n;
    model_numel_ += unit.numel;
    const auto dtype = unit.params[0].scalar_type();
    const bool trains = unit.params[0].requires_grad();
    std::vector<torch::Tensor> flat;
    for (const auto& p : unit.params) {
      VERL_CHECK(p.scalar_type() == dtype && p.requires_grad() == trains, kFullyShardedModelComponent, "parameter '",
                 unit.names[flat.size()], "' differs in dtype or trainability from the rest of its unit");
      flat.push_back(p.detach().reshape({-1}));
    }
    flat.push_back(torch::zeros({unit.padded - unit.numel}, unit.params[0].options()));
    const int64_t s = unit.padded / n;
    shards_.push_back(torch::cat(flat).narrow(0, r * s, s).clone().set_requires_grad(trains));
    for (auto& p : unit.params) p.set_data(torch::empty({0}, p.options()));
  }
  module_->model->layer_runner = [this](size_t layer, const torch::Tensor& h, const torch::Tensor& cos,
                                        const torch::Tensor& sin, const torch::Tensor& mask_bias,
                                        const torch::Tensor& packed) {
    return run_layer(layer, h, cos, sin, mask_bias, packed);
  };
}

FullyShardedModel::~FullyShardedModel() { module_->model->layer_runner = nullptr; }

int64_t FullyShardedModel::shard_size(const Unit& unit) const { return unit.padded / group_->size(); }

int64_t FullyShardedModel::shard_numel() const {
  int64_t total = 0;
  for (const auto& s : shards_) total += s.numel();
  return total;
}

void FullyShardedModel::gather(size_t u) {
  Unit& unit = units_[u];
  if (unit.gathered++ > 0) return;
  torch::NoGradGuard no_grad;
  torch::Tensor full = group_->all_gather(shards_[u].detach());
  for (size_t k = 0; k < unit.params.size(); ++k) {
    unit.params[k].set_data(full.narrow(0, unit.offsets[k], unit.numels[k]).view(unit.shapes[k]));
  }
}

void FullyShardedModel::release(size_t u) {
  Unit& unit = units_[u];
  VERL_ASSERT(unit.gathered > 0, kFullyShardedModelComponent, "release of a unit that is not gathered");
  if (--unit.gathered > 0) return;
  torch::NoGradGuard no_grad;
  for (auto& p : unit.params) {
    p.set_data(torch::empty({0}, p.options()));
    if (p.grad().defined()) p.mutable_grad().reset();
  }
}

torch::Tensor FullyShardedModel::reduce_gradients(size_t u, const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  const Unit& unit = units_[u];
  torch::Tensor flat = torch::zeros({unit.padded}, shards_[u].options());
  for (size_t k = 0; k < unit.params.size(); ++k) {
    if (!grads[k].defined()) continue;  // a parameter no loss reached: zeros
    flat.narrow(0, unit.offsets[k], grads[k].numel()).copy_(grads[k].reshape({-1}));
  }
  // In reduce_dtype on the wire and in the sums (FSDP's MixedPrecision.reduce_dtype), then back in the shard's dtype.
  // A tensor of its own: the gradient must not be a view (optimizer.zero_grad() detaches it in place).
  // fp32 (the default) leaves the gradients in their own dtype.
  const auto dtype = flat.scalar_type();
  const auto wire = reduce_dtype_ == torch::kFloat32 ? dtype : reduce_dtype_;
  torch::Tensor mine = group_->reduce_scatter(flat.to(wire), parallel::ReduceOp::Average).clone();
  if (replicas_ && replicas_->size() > 1) replicas_->all_reduce(mine, parallel::ReduceOp::Average);
  return mine.to(dtype);
}

torch::Tensor FullyShardedModel::run_layer(size_t layer, const torch::Tensor& h, const torch::Tensor& cos,
                                           const torch::Tensor& sin, const torch::Tensor& mask_bias,
                                           const torch::Tensor& packed) {
  const size_t u = layer + 1;
  if (torch::GradMode::is_enabled() && (shards_[u].requires_grad() || !trained(units_[u].adapters).empty())) {
    // A frozen base under LoRA: the shard takes no gradient and the embeddings' output none either, so autograd
    // would not record the layer at all; a leaf that asks for a gradient (it receives none) makes it record the
    // layer, whose backward gives the adapters theirs.
    const torch::Tensor anchor = shards_[u].requires_grad() ? shards_[u] : torch::zeros({}).set_requires_grad(true);
    return LayerFunction::apply(h, cos, sin, mask_bias, &packed, anchor, this, static_cast<int64_t>(layer));
  }
  gather(u);
  torch::Tensor out =
      module_->model->layer_list[layer]->forward(h, cos, sin, mask_bias, nullptr, static_cast<int64_t>(layer), packed);
  release(u);
  return out;
}

void FullyShardedModel::begin_micro_batch() { gather(0); }

void FullyShardedModel::end_micro_batch(bool reduce) {
  if (reduce && shards_[0].requires_grad()) {
    std::vector<torch::Tensor> grads;
    for (const auto& p : units_[0].params) grads.push_back(p.grad());
    torch::Tensor mine = reduce_gradients(0, grads);
    torch::NoGradGuard no_grad;
    if (shards_[0].grad().defined()) {
      shards_[0].mutable_grad().add_(mine);
    } else {
      shards_[0].mutable_grad() = mine;
    }
  }
  release(0);
}

FullyShardedModel::Gathered::Gathered(FullyShardedModel* model) : model_(model) {
  for (size_t u = 0; u < model_->units_.size(); ++u) model_->gather(u);
}

FullyShardedModel::Gathered::~Gathered() {
  if (model_ == nullptr) return;
  for (size_t u = 0; u < model_->units_.size(); ++u) model_->release(u);
}

int64_t FullyShardedModel::max_over_group(int64_t value) const {
  torch::Tensor t = torch::tensor({static_cast<double>(value)}, torch::kFloat64);
  group_->all_reduce(t, parallel::ReduceOp::Max);
  // The replicas' gradient averaging runs per micro-batch as well.
  if (replicas_ && replicas_->size() > 1) replicas_->all_reduce(t, parallel::ReduceOp::Max);
  return static_cast<int64_t>(t.item<double>());
}

void FullyShardedModel::save_shard_state(const std::string& path) const {
  const int64_t r = group_->rank();
  NamedTensors tensors;
  for (size_t u = 0; u < units_.size(); ++u) {
    const Unit& unit = units_[u];
    const int64_t s = shard_size(unit);
    for (const Run& run : runs_in_range(unit.offsets, unit.numels, r * s, (r + 1) * s)) {
      tensors.emplace_back(unit.names[run.param], shards_[u].detach().narrow(0, run.at, run.length).clone());
    }
  }
  save_tensors(path, tensors,
               {{"format", kFormat}, {"shard_rank", std::to_string(r)},
                {"shard_group_size", std::to_string(group_->size())}});
}

void FullyShardedModel::load_shard_state(const std::string& path) {
  io::SafetensorsFile file(path);
  const auto& meta = file.metadata();
  auto field = [&](const char* key) { return meta.count(key) ? meta.at(key) : std::string(); };
  VERL_CHECK(field("format") == kFormat, kFullyShardedModelComponent, "model state file '", path,
             "' holds whole parameters, not ZeRO-3 shards (it was saved with fsdp_config.reshard_after_forward=false)");
  VERL_CHECK(field("shard_group_size") == std::to_string(group_->size()), kFullyShardedModelComponent,
             "model state file '", path, "' holds shards over ", field("shard_group_size"),
             " ranks; this run shards over ", group_->size());
  const int64_t r = group_->rank();
  std::set<std::string> expected;
  torch::NoGradGuard no_grad;
  for (size_t u = 0; u < units_.size(); ++u) {
    const Unit& unit = units_[u];
    const int64_t s = shard_size(unit);
    for (const Run& run : runs_in_range(unit.offsets, unit.numels, r * s, (r + 1) * s)) {
      const std::string& name = unit.names[run.param];
      expected.insert(name);
      VERL_CHECK(file.contains(name), kFullyShardedModelComponent, "model state file '", path, "' lacks tensor '", name,
                 "'");
      torch::Tensor saved = tensor_from_view(file.get(name));
      VERL_CHECK(saved.dim() == 1 && saved.numel() == run.length, kFullyShardedModelComponent, "tensor '", name,
                 "' in '", path, "' has shape ", saved.sizes(), ", this rank's shard expects [", run.length, "]");
      shards_[u].detach().narrow(0, run.at, run.length).copy_(saved.to(shards_[u].scalar_type()));
    }
  }
  for (const auto& name : file.names()) {
    VERL_CHECK(expected.count(name) > 0, kFullyShardedModelComponent, "model state file '", path, "' has tensor '",
               name, "' that this rank's shard does not hold");
  }
}

bool is_shard_state_file(const std::string& path) {
  io::SafetensorsFile file(path);
  auto it = file.metadata().find("format");
  return it != file.metadata().end() && it->second == kFormat;
}

void load_merged_shard_files(CausalLM& module, const std::vector<std::string>& rank_files) {
  std::vector<std::unique_ptr<io::SafetensorsFile>> files;
  for (const auto& f : rank_files) files.push_back(std::make_unique<io::SafetensorsFile>(f));
  torch::NoGradGuard no_grad;
  for (auto& item : module->named_parameters()) {
    const std::string& name = item.key();
    const int64_t numel = item.value().numel();
    std::vector<torch::Tensor> runs;
    int64_t have = 0;
    for (size_t r = 0; r < files.size() && have < numel; ++r) {
      if (!files[r]->contains(name)) continue;
      torch::Tensor run = tensor_from_view(files[r]->get(name));
      VERL_CHECK(run.dim() == 1 && have + run.numel() <= numel, kFullyShardedModelComponent, "tensor '", name, "' in '",
                 rank_files[r], "' has shape ", run.sizes(), ", which does not continue a ZeRO-3 shard of ", numel,
                 " elements");
      have += run.numel();
      runs.push_back(run);
    }
    VERL_CHECK(have == numel, kFullyShardedModelComponent, "tensor '", name, "': the ", files.size(),
               " rank files hold ", have, " of its ", numel, " elements");
    item.value().copy_(torch::cat(runs).view(item.value().sizes()).to(item.value().scalar_type()));
  }
}

}  // namespace verl::model
