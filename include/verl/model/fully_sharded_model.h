// ZeRO-3: parameters sharded across the data-parallel ranks (verl's fsdp_config.reshard_after_forward=true, FSDP's
// FULL_SHARD). The units are FSDP's wrap policy for decoders: one per decoder layer, and the root (embedding, final
// norm, LM or value head). A unit's parameters, flattened in module order and zero-padded to a multiple of the
// group size N, form one flat vector; rank r keeps elements [r*s, (r+1)*s), s = padded / N, as a leaf tensor. Those
// shards are what the optimizer steps, so AdamW state is 1/N per rank as well. At rest the module's own parameters
// are empty tensors.
//
//   forward     the root is gathered for a micro-batch (begin_micro_batch / end_micro_batch); each layer is gathered
//               just before it runs and released right after (Decoder::layer_runner)
//   backward    each layer is gathered again and recomputed from its saved input (its activations are not kept,
//               so gradient checkpointing comes with ZeRO-3 here, where FSDP keeps them), its parameter gradients
//               are reduce-scattered into the shards' .grad (mean over the group) and the layer is released; the
//               root's gradients are reduce-scattered by end_micro_batch(true), after the micro-batch's backward
//   everything  gather_all() for generation, weight broadcast and HF saves (FSDP's summon_full_params)
//
// LoRA: the adapters (model/lora.h) stay out of the units, whole on every rank; the frozen base is sharded. Their
// gradients reach their .grad through the recomputing backward above, and the caller averages them over the group
// and steps them like any replicated parameter (trains_shards() is then false).
//
// With a `replicas` communicator (fsdp_config.fsdp_size smaller than the group: HSDP) each shard's gradient is then
// averaged over the groups that hold the same shard. Every call is collective over the shard group: all its ranks
// make the same calls in the same order (micro-batch counts included).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "verl/model/transformer.h"
#include "verl/model/weights.h"

namespace verl::parallel {
class Comm;
}

namespace verl::model {

class FullyShardedModel {
 public:
  // Takes `module`'s parameters as they are (the same on every rank), keeps this rank's shards and empties the
  // module's parameters; installs the module's layer_runner. The shard group must have at least two ranks.
  // `reduce_dtype` (fsdp_config.mixed_precision.reduce_dtype, FSDP's MixedPrecision): the dtype gradients are
  // reduce-scattered (and averaged over the replicas) in; the shards' gradients are then fp32 again.
  FullyShardedModel(CausalLM module, std::shared_ptr<parallel::Comm> shard_group,
                    std::shared_ptr<parallel::Comm> replicas = nullptr,
                    torch::ScalarType reduce_dtype = torch::kFloat32);
  ~FullyShardedModel();  // removes the layer_runner; the module's parameters stay empty
  FullyShardedModel(const FullyShardedModel&) = delete;
  FullyShardedModel& operator=(const FullyShardedModel&) = delete;

  // One flat shard per unit (root first, then the layers), requires_grad as the module's parameters.
  const std::vector<torch::Tensor>& shards() const { return shards_; }
  int64_t shard_numel() const;                 // elements this rank holds (padding included)
  int64_t model_numel() const { return model_numel_; }
  bool trains_shards() const { return shards_.front().requires_grad(); }
  parallel::Comm& shard_group() const { return *group_; }

  // The root unit gathered for one micro-batch's forward and backward. end_micro_batch(true), after backward,
  // adds the mean over the group of the root's gradients to its shard's .grad; then the root is released.
  void begin_micro_batch();
  void end_micro_batch(bool reduce_gradients);

  // Every unit gathered while the guard lives (collective at both ends; nests with the calls above).
  class Gathered {
   public:
    explicit Gathered(FullyShardedModel* model);
    ~Gathered();
    Gathered(Gathered&& other) noexcept : model_(other.model_) { other.model_ = nullptr; }
    Gathered(const Gathered&) = delete;
    Gathered& operator=(const Gathered&) = delete;

   private:
    FullyShardedModel* model_;
  };
  Gathered gather_all() { return Gathered(this); }

  // The largest of `value` over the shard group and its replicas (e.g. micro-batch counts, which must agree).
  int64_t max_over_group(int64_t value) const;

  // Checkpoints: a safetensors file of this rank's part of each parameter by HF name, as the 1-D run of the
  // flattened parameter that falls in this rank's range (parameters with no element here are left out), written
  // atomically; and such a file read back into the shards (another group size, a missing, extra or wrongly sized
  // tensor is an error naming it and the file).
  void save_shard_state(const std::string& path) const;
  void load_shard_state(const std::string& path);

 private:
  struct Unit {
    std::vector<torch::Tensor> params;  // the module's parameters (empty at rest)
    std::vector<torch::Tensor> adapters;  // LoRA factors of the unit's layer: whole, not sharded
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<int64_t> offsets, numels;  // of each parameter in the flat vector
    int64_t numel = 0, padded = 0;
    int gathered = 0;  // nesting depth
  };
  struct LayerFunction;

  void gather(size_t unit);
  void release(size_t unit);
  // Mean over the group (then over the replicas) of this rank's part of the unit's gradients (undefined: zeros).
  torch::Tensor reduce_gradients(size_t unit, const std::vector<torch::Tensor>& grads);
  torch::Tensor run_layer(size_t layer, const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                          const torch::Tensor& mask_bias, const torch::Tensor& packed);
  int64_t shard_size(const Unit& unit) const;

  CausalLM module_;
  std::shared_ptr<parallel::Comm> group_, replicas_;
  torch::ScalarType reduce_dtype_ = torch::kFloat32;
  std::vector<Unit> units_;
  std::vector<torch::Tensor> shards_;
  int64_t model_numel_ = 0;
};

// The root unit gathered for a scope (nothing without a sharded model): one micro-batch, or a pass of forwards.
// reduce_gradients() after the micro-batch's backward hands the root's gradients to the shards; without it the
// root is released with its gradients dropped.
class RootGathered {
 public:
  explicit RootGathered(FullyShardedModel* model) : model_(model) {
    if (model_) model_->begin_micro_batch();
  }
  ~RootGathered() {
    if (model_) model_->end_micro_batch(false);
  }
  void reduce_gradients() {
    if (model_) model_->end_micro_batch(true);
    model_ = nullptr;
  }
  RootGathered(const RootGathered&) = delete;
  RootGathered& operator=(const RootGathered&) = delete;

 private:
  FullyShardedModel* model_;
};

// The whole parameters from the files save_shard_state wrote on ranks 0, 1, ... (in rank order, as many as it takes
// for every parameter to be complete: one shard group), copied into `module`. Errors name the file and tensor.
void load_merged_shard_files(CausalLM& module, const std::vector<std::string>& rank_files);

// Whether a checkpoint model file holds ZeRO-3 shards (1-D runs) rather than whole parameters.
bool is_shard_state_file(const std::string& path);

}  // namespace verl::model
