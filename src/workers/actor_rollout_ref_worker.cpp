#include "verl/workers/actor_rollout_ref_worker.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/common/strings.h"
#include "verl/model/hf_config.h"
#include "verl/model/lora.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/weights.h"
#include "verl/parallel/nccl_comm.h"
#include "verl/parallel/ulysses.h"
#include "verl/rollout/generator.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/memory_metrics.h"
#include "verl/workers/parallel_layout.h"
#include "verl/workers/weight_sync.h"
#include "verl/workers/worker_device.h"

namespace verl::workers {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
using single_controller::Dispatch;
using Json = nlohmann::json;

constexpr const char* kActorRolloutRefWorkerComponent = "actor_rollout_ref";

std::string expand_home(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const char* home = std::getenv("HOME");
  VERL_CHECK(home != nullptr, kActorRolloutRefWorkerComponent, "cannot expand '", path, "': HOME is not set");
  return std::string(home) + path.substr(1);
}

std::string to_hex(const torch::Tensor& bytes_in) {
  auto bytes = bytes_in.to(torch::kCPU).contiguous();
  const auto* p = bytes.data_ptr<uint8_t>();
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(bytes.numel()) * 2);
  for (int64_t i = 0; i < bytes.numel(); ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

torch::Tensor from_hex(const std::string& hex, const std::string& what) {
  VERL_CHECK(hex.size() % 2 == 0, kActorRolloutRefWorkerComponent, what, ": malformed RNG state");
  auto t = torch::empty({static_cast<int64_t>(hex.size() / 2)}, torch::kUInt8);
  auto* p = t.data_ptr<uint8_t>();
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    VERL_FAIL(kActorRolloutRefWorkerComponent, what, ": malformed RNG state");
  };
  for (size_t i = 0; i < hex.size() / 2; ++i) p[i] = static_cast<uint8_t>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return t;
}

std::string generator_state(at::Generator gen) {  // a handle: copies share the state
  std::lock_guard<std::mutex> lock(gen.mutex());
  return to_hex(gen.get_state());
}

void set_generator_state(at::Generator gen, const std::string& hex, const std::string& what) {
  auto state = from_hex(hex, what);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

std::vector<int64_t> eos_ids_from_meta(const Json& meta) {
  VERL_CHECK(meta.contains("eos_token_id"), kActorRolloutRefWorkerComponent,
             "generate_sequences needs meta_info['eos_token_id']");
  const Json& e = meta["eos_token_id"];
  std::vector<int64_t> ids;
  if (e.is_array()) {
    for (const auto& v : e) {
      VERL_CHECK(v.is_number_integer(), kActorRolloutRefWorkerComponent,
                 "meta_info['eos_token_id'] must be an int or a list of ints");
      ids.push_back(v.get<int64_t>());
    }
  } else {
    VERL_CHECK(e.is_number_integer(), kActorRolloutRefWorkerComponent,
               "meta_info['eos_token_id'] must be an int or a list of ints");
    ids.push_back(e.get<int64_t>());
  }
  return ids;
}

// The model, tokenizer and generation files an HF folder needs besides weights.
// The files of an HF folder besides config.json and the weights: generation_config.json from `config_dir`, the
// tokenizer's from `tokenizer_dir` (verl's HFModelConfig may keep them in different folders).
void copy_side_files(const fs::path& config_dir, const fs::path& tokenizer_dir, const fs::path& dst) {
  const fs::path generation = config_dir / "generation_config.json";
  if (fs::exists(generation)) {
    fs::copy_file(generation, dst / "generation_config.json", fs::copy_options::overwrite_existing);
  }
  copy_tokenizer_files(tokenizer_dir.string(), dst.string());
}

// World sizes found in a checkpoint folder's model files (for the mismatch error).
std::vector<int64_t> saved_world_sizes(const fs::path& dir) {
  std::vector<int64_t> out;
  static const std::regex pattern(R"(model_world_size_(\d+)_rank_\d+\.safetensors)");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) {
      const int64_t w = std::stoll(m[1].str());
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
    }
  }
  return out;
}

void freeze(model::CausalLM& module) {
  for (auto& p : module->parameters()) p.set_requires_grad(false);
  module->eval();
}

// The adapters' initial A come from this seed on every rank, so data-parallel ranks start alike.
constexpr uint64_t kLoraInitSeed = 0;

// The checkpoint folder's PEFT copy of the adapter (verl's lora_adapter/), beside huggingface/.
constexpr const char* kLoraAdapterDir = "lora_adapter";

}  // namespace

ActorRolloutRefWorker::ActorRolloutRefWorker(const single_controller::WorkerContext& context,
                                             std::shared_ptr<const config::PPOConfig> config, std::string role)
    : Worker(context), config_(std::move(config)), role_(std::move(role)) {
  VERL_CHECK(config_ != nullptr, kActorRolloutRefWorkerComponent, "no config");
  static const std::vector<std::string> roles = {"actor", "rollout", "actor_rollout", "actor_rollout_ref", "ref"};
  VERL_CHECK(contains(roles, role_), kActorRolloutRefWorkerComponent, "unknown role '", role_,
             "'; expected actor, rollout, actor_rollout, actor_rollout_ref or ref");
  is_actor_ = role_ == "actor" || role_ == "actor_rollout" || role_ == "actor_rollout_ref";
  is_rollout_ = role_ == "rollout" || role_ == "actor_rollout" || role_ == "actor_rollout_ref";
  is_ref_ = role_ == "ref" || role_ == "actor_rollout_ref";

  // Batch-size normalisation and validation (spec §4.1): sizes become per rank.
  const auto& arr = config_->actor_rollout_ref;
  actor_cfg_ = arr.actor;
  tp_size_ = arr.actor.tensor_parallel_size();
  pp_size_ = arr.actor.pipeline_parallel_size();
  cp_size_ = arr.actor.context_parallel_size();
  sp_size_ = arr.actor.ulysses_sequence_parallel_size;
  ref_sp_size_ = arr.ref.ulysses_sequence_parallel_size;
  // Batches split over the data-parallel ranks (all ranks under fsdp, less the model- or sequence-parallel ones).
  const int64_t W = data_parallel_size(world_size(), copy_size() * sp_size_, model_parallel_key());
  const int64_t n = arr.rollout.sampling.n;
  const std::string a = "actor_rollout_ref.actor.";
  if (is_actor_) {
    const int64_t train_bs = config_->data.train_batch_size;
    VERL_CHECK(train_bs >= arr.actor.ppo_mini_batch_size, kActorRolloutRefWorkerComponent, "data.train_batch_size (",
               train_bs, ") must be >= ", a, "ppo_mini_batch_size (", arr.actor.ppo_mini_batch_size, ")");
    if (!arr.actor.use_dynamic_bsz) {
      VERL_CHECK((train_bs * n) % W == 0, kActorRolloutRefWorkerComponent, "data.train_batch_size * rollout.n (",
                 train_bs * n, ") must be divisible by the data-parallel size (", W, ")");
    }
    actor_cfg_.ppo_mini_batch_size = arr.actor.ppo_mini_batch_size * n / W;
    VERL_CHECK(actor_cfg_.ppo_mini_batch_size > 0, kActorRolloutRefWorkerComponent, a,
               "ppo_mini_batch_size * rollout.n (", arr.actor.ppo_mini_batch_size * n,
               ") must be at least the data-parallel size (", W, ")");
    if (arr.actor.use_dynamic_bsz) {
      VERL_CHECK(arr.actor.ppo_max_token_len_per_gpu >= arr.rollout.prompt_length + arr.rollout.response_length,
                 kActorRolloutRefWorkerComponent, a, "ppo_max_token_len_per_gpu (", arr.actor.ppo_max_token_len_per_gpu,
                 ") must be at least prompt_length + response_length (",
                 arr.rollout.prompt_length + arr.rollout.response_length, ")");
    } else {
      VERL_CHECK(arr.actor.ppo_micro_batch_size_per_gpu.has_value(), kActorRolloutRefWorkerComponent, a,
                 "ppo_micro_batch_size_per_gpu must be set when ", a, "use_dynamic_bsz is false");
      const int64_t micro = *arr.actor.ppo_micro_batch_size_per_gpu;
      VERL_CHECK(actor_cfg_.ppo_mini_batch_size % micro == 0, kActorRolloutRefWorkerComponent, a,
                 "ppo_mini_batch_size per rank (", arr.actor.ppo_mini_batch_size, " prompts * n ", n,
                 " / data-parallel size ", W, " = ", actor_cfg_.ppo_mini_batch_size,
                 " responses) must be divisible by ", a, "ppo_micro_batch_size_per_gpu (", micro, ")");
    }
    if (!arr.rollout.log_prob_use_dynamic_bsz) {
      VERL_CHECK(arr.rollout.log_prob_micro_batch_size_per_gpu.has_value(), kActorRolloutRefWorkerComponent,
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu must be set when "
                 "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz is false");
    }
  }
  if (is_ref_ && !arr.ref.log_prob_use_dynamic_bsz) {
    VERL_CHECK(arr.ref.log_prob_micro_batch_size_per_gpu.has_value(), kActorRolloutRefWorkerComponent,
               "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu must be set when "
               "actor_rollout_ref.ref.log_prob_use_dynamic_bsz is false");
  }

  // Under megatron the T x P x C ranks of a DP rank compute together: nd dispatch over mesh "actor". Under Ulysses
  // the S ranks of a DP rank do, for the log-prob and update passes only (mesh "actor", and "ref" for the ref's S);
  // the ranks are laid out the same way (consecutive), so the TP mesh's placement serves both.
  const int64_t copy_size = this->copy_size();
  const Dispatch compute = copy_size > 1 ? Dispatch::NdComputeProto : Dispatch::DpComputeProto;
  const std::string mesh = copy_size > 1 ? "actor" : "";
  const auto mesh_place = tensor_parallel_mesh_info(rank(), copy_size);
  if (copy_size > 1) set_mesh_info(mesh, mesh_place);
  if (sp_size_ > 1) set_mesh_info("actor", tensor_parallel_mesh_info(rank(), sp_size_));
  if (ref_sp_size_ > 1) set_mesh_info("ref", tensor_parallel_mesh_info(rank(), ref_sp_size_));
  const Dispatch actor_compute = sp_size_ > 1 ? Dispatch::NdComputeProto : compute;
  const std::string actor_mesh = sp_size_ > 1 ? "actor" : mesh;
  const Dispatch ref_compute = ref_sp_size_ > 1 ? Dispatch::NdComputeProto : compute;
  const std::string ref_mesh = ref_sp_size_ > 1 ? "ref" : mesh;
  dp_rank_ = mesh_place.dp_rank;
  register_method({"init_model", Dispatch::OneToAll, single_controller::Execute::All, ""}, [this](const DataProto& in) { return init_model(in); });
  register_method({"generate_sequences", compute, single_controller::Execute::All, mesh},
                  [this](const DataProto& in) { return generate_sequences(in); });
  register_method({"compute_log_prob", actor_compute, single_controller::Execute::All, actor_mesh},
                  [this](const DataProto& in) { return compute_log_prob(in); });
  register_method({"compute_ref_log_prob", ref_compute, single_controller::Execute::All, ref_mesh},
                  [this](const DataProto& in) { return compute_ref_log_prob(in); });
  register_method({"update_actor", actor_compute, single_controller::Execute::All, actor_mesh},
                  [this](const DataProto& in) { return update_actor(in); });
  register_method({"save_checkpoint", Dispatch::OneToAll, single_controller::Execute::All, ""}, [this](const DataProto& in) { return save_checkpoint(in); });
  register_method({"load_checkpoint", Dispatch::OneToAll, single_controller::Execute::All, ""}, [this](const DataProto& in) { return load_checkpoint(in); });
  register_method({"sync_rollout_weights", Dispatch::OneToAll, single_controller::Execute::All, ""},
                  [this](const DataProto& in) { return sync_rollout_weights(in); });
}

std::string ActorRolloutRefWorker::model_parallel_key() const {
  const std::string a = "actor_rollout_ref.actor.";
  if (sp_size_ > 1) return a + "ulysses_sequence_parallel_size";
  if (pp_size_ > 1) return a + "megatron.pipeline_model_parallel_size";
  return a + (cp_size_ > 1 ? "megatron.context_parallel_size" : "megatron.tensor_model_parallel_size");
}

void ActorRolloutRefWorker::require_initialised(const char* method) const {
  VERL_CHECK(initialised_, kActorRolloutRefWorkerComponent, method, " called before init_model");
}

model::CausalLM& ActorRolloutRefWorker::actor_module() {
  require_initialised("actor_module");
  VERL_CHECK(!actor_module_.is_empty(), kActorRolloutRefWorkerComponent, "role '", role_,
             "' has no actor/rollout model");
  return actor_module_;
}
model::CausalLM& ActorRolloutRefWorker::ref_module() {
  require_initialised("ref_module");
  VERL_CHECK(!ref_module_.is_empty(), kActorRolloutRefWorkerComponent, "role '", role_, "' has no reference model");
  return ref_module_;
}
DataParallelPPOActor& ActorRolloutRefWorker::actor() {
  require_initialised("actor");
  VERL_CHECK(actor_ != nullptr, kActorRolloutRefWorkerComponent, "role '", role_, "' has no actor");
  return *actor_;
}
LRScheduler& ActorRolloutRefWorker::lr_scheduler() {
  require_initialised("lr_scheduler");
  VERL_CHECK(lr_scheduler_ != nullptr, kActorRolloutRefWorkerComponent, "role '", role_, "' has no LR scheduler");
  return *lr_scheduler_;
}

std::vector<torch::Tensor> ActorRolloutRefWorker::actor_state() const {
  if (actor_module_.is_empty()) return {};
  return actor_sharded_ ? actor_sharded_->shards() : actor_module_->parameters();
}
std::vector<torch::Tensor> ActorRolloutRefWorker::ref_state() const {
  if (ref_module_.is_empty()) return {};
  return ref_sharded_ ? ref_sharded_->shards() : ref_module_->parameters();
}

DataProto ActorRolloutRefWorker::init_model(const DataProto& in) {
  const auto& arr = config_->actor_rollout_ref;
  // The trainer's step budget for the LR schedule (this rank's own config may not have it: under mpirun).
  if (in.meta_info.contains("total_training_steps")) {
    actor_cfg_.optim.total_training_steps = in.meta_info["total_training_steps"].get<int64_t>();
  }
  const std::string path = expand_home(arr.model.path);
  VERL_CHECK(fs::is_directory(path), kActorRolloutRefWorkerComponent, "actor_rollout_ref.model.path '", path,
             "' is not a folder (an HF model folder with config.json and safetensors weights)");
  device_ = worker_device(config_->trainer, rank());
  // The global CPU generator is checkpointed with the actor (rng.cpu): seeded here, a run started from scratch
  // and one resumed from its checkpoints hold the same state (unseeded, LibTorch draws the seed from the OS).
  if (is_actor_) torch::manual_seed(static_cast<uint64_t>(actor_cfg_.fsdp_config.seed));
  // The offload keys of the strategy in use (megatron's under tensor parallelism, fsdp_config's otherwise).
  const auto& mg = actor_cfg_.megatron;
  if (actor_cfg_.strategy == "megatron") {
    actor_offload_ = OffloadPolicy{device_, mg.param_offload, mg.grad_offload, mg.optimizer_offload};
    ref_offload_ = OffloadPolicy{device_, arr.ref.megatron.param_offload, false, false};
  } else {
    const auto& fsdp = actor_cfg_.fsdp_config;
    actor_offload_ = OffloadPolicy{device_, fsdp.param_offload, fsdp.param_offload, fsdp.optimizer_offload};
    ref_offload_ = OffloadPolicy{device_, arr.ref.fsdp_config.param_offload, false, false};
  }
  const ParallelLayout layout =
      make_parallel_layout(context(), tp_size_, pp_size_, cp_size_, model_parallel_key(), device_);
  // Ulysses groups (collective splits of the whole group; the same on every rank: one config).
  auto ulysses_group = [&](int64_t sp, const std::string& key) -> std::shared_ptr<parallel::Comm> {
    if (sp == 1) return nullptr;
    VERL_CHECK(context().comm != nullptr, kActorRolloutRefWorkerComponent, key, "=", sp,
               " needs a communicator between the worker group's ", world_size(),
               " ranks, which the in-process transport does not provide; launch with mpirun "
               "(docs/distributed.md)");
    return parallel::ulysses_mesh(layout.dp, sp, key).sp;
  };
  // The rollout's tensor-parallel size. Equal to the actor's megatron TP, the actor's slices generate. Otherwise the
  // generation weights are the whole model (under megatron gathered from the stages and slices), sliced again over
  // groups of rollout_tp consecutive ranks: verl's vLLM TP replicas over the FSDP ranks, or its resharding to a
  // rollout TP unlike the trainer's (a collective split; the same on every rank).
  const int64_t rollout_tp = arr.rollout.tensor_model_parallel_size;
  rollout_regathers_ = is_rollout_ && copy_size() > 1 && rollout_tp != tp_size_;
  if (is_rollout_ && rollout_tp > 1 && (copy_size() == 1 || rollout_tp != tp_size_)) {
    const std::string key = "actor_rollout_ref.rollout.tensor_model_parallel_size";
    VERL_CHECK(world_size() % rollout_tp == 0, kActorRolloutRefWorkerComponent, key, "=", rollout_tp,
               " must divide the rollout's ", world_size(), " ranks");
    VERL_CHECK(copy_size() % rollout_tp == 0 || rollout_tp % copy_size() == 0, kActorRolloutRefWorkerComponent, key,
               "=", rollout_tp, " must divide or be a multiple of the ", copy_size(),
               " ranks of one model copy (megatron TP x PP x CP)");
    VERL_CHECK(context().comm != nullptr, kActorRolloutRefWorkerComponent, key, "=", rollout_tp,
               " needs a communicator between the worker group's ", world_size(),
               " ranks, which the in-process transport does not provide; launch with mpirun (docs/distributed.md)");
    // Split from the worker group's communicator (not layout.dp: under megatron that holds one rank per copy); over
    // NCCL on CUDA devices, as the model's own groups.
    rollout_tp_group_ = parallel::device_comm(
        context().comm->split(static_cast<int>(rank() / rollout_tp), static_cast<int>(rank() % rollout_tp)), device_);
    VERL_ASSERT(rollout_tp_group_->size() == rollout_tp && rollout_tp_group_->rank() == rank() % rollout_tp,
                kActorRolloutRefWorkerComponent, "rollout group of ", rollout_tp_group_->size(), " ranks, expected ",
                rollout_tp);
  }
  const std::string actor_sp_key = "actor_rollout_ref.actor.ulysses_sequence_parallel_size";
  const std::string ref_sp_key = "actor_rollout_ref.ref.ulysses_sequence_parallel_size";
  const auto actor_sp_group = is_actor_ ? ulysses_group(sp_size_, actor_sp_key) : nullptr;
  const auto ref_sp_group = !is_ref_                     ? nullptr
                            : ref_sp_size_ == sp_size_ && is_actor_ ? actor_sp_group
                                                                    : ulysses_group(ref_sp_size_, ref_sp_key);
  // How the actor's and the ref's models split sequences: Ulysses under fsdp, the context-parallel ranks under
  // megatron (the ref's context_parallel_size is the actor's: trainer/ppo_config_checks.cpp).
  auto set_sequence_split = [&](model::CausalLM& module, const std::shared_ptr<parallel::Comm>& ulysses,
                                const std::string& ulysses_key) {
    if (layout.cp) {
      model::set_sequence_parallel(module, layout.cp, "actor_rollout_ref.actor.megatron.context_parallel_size",
                                   model::SequenceSplit::ContextParallel);
    } else {
      model::set_sequence_parallel(module, ulysses, ulysses_key);
    }
  };
  model::LoadOptions load_options;
  load_options.tensor_parallel = layout.tp;
  load_options.pipeline_stages = layout.stages;
  load_options.pipeline_key = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size";
  load_options.pipeline_virtual_stages = actor_cfg_.megatron.virtual_pipeline_model_parallel_size;
  load_options.pipeline_virtual_key = "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size";
  load_options.config_overrides = arr.model.override_config;  // verl: the same overridden config for all three
  if (!arr.model.hf_config_path.empty()) load_options.config_dir = expand_home(arr.model.hf_config_path);
  const auto& lora = arr.model.lora;
  if (is_actor_ || is_rollout_) {
    actor_module_ = model::load_model(path, load_options);
    actor_module_->to(device_);
    if (lora.enabled()) {
      // Only the adapters train; the frozen base is also the reference policy (compute_ref_log_prob).
      const auto spec = model::lora_spec(lora);
      if (lora.lora_adapter_path) {
        model::load_peft_adapter(actor_module_, expand_home(*lora.lora_adapter_path), &spec);
      } else {
        model::add_lora(actor_module_, spec, kLoraInitSeed);
      }
    }
    if (is_actor_) {
      set_sequence_split(actor_module_, actor_sp_group, actor_sp_key);
      model::set_megatron_sequence_parallel(actor_module_, actor_cfg_.megatron.sequence_parallel);
      actor_module_->model->gradient_checkpointing = arr.model.enable_gradient_checkpointing;
      actor_module_->remove_padding = arr.model.use_remove_padding;
      const auto& fsdp = actor_cfg_.fsdp_config;
      const std::string fsdp_size_key = "actor_rollout_ref.actor.fsdp_config.fsdp_size";
      // fsdp_config.mixed_precision.reduce_dtype: the dtype of the gradients' data-parallel reduction (fsdp only).
      const torch::ScalarType reduce_dtype = actor_cfg_.strategy == "megatron"
                                                 ? torch::kFloat32
                                                 : model::parse_precision(fsdp.reduce_dtype, fsdp_size_key);
      if (copy_size() == 1 && fsdp.reshard_after_forward) {
        actor_sharded_ = fully_shard(actor_module_, layout.dp, fsdp.fsdp_size, fsdp_size_key,
                                     kActorRolloutRefWorkerComponent, reduce_dtype);
      }
      // LoRA: the adapters only, whole on every rank even over a ZeRO-3 base (whose shards are then frozen).
      std::vector<torch::Tensor> params = lora.enabled()   ? model::lora_parameters(actor_module_)
                                         : actor_sharded_ ? actor_sharded_->shards()
                                                          : actor_module_->parameters();
      optimizer_ = build_optimizer(params, actor_cfg_.optim);
      lr_scheduler_ = std::make_unique<LRScheduler>(*optimizer_, actor_cfg_.optim, actor_cfg_.optim.total_training_steps);
      actor_ = std::make_unique<DataParallelPPOActor>(actor_cfg_, actor_module_, optimizer_.get());
      // ZeRO-3 gathers the base around each layer and averages full fine-tuning's gradients into the shards itself.
      if (actor_sharded_) actor_->fully_sharded = actor_sharded_;
      if (!actor_sharded_ || lora.enabled()) {
        actor_->gradient_all_reduce = gradient_averager(layout.dp, reduce_dtype);
        auto shard_group = optimizer_sharding_group(
            layout.dp, copy_size(), actor_cfg_.megatron.use_distributed_optimizer, fsdp.fsdp_size, fsdp_size_key);
        actor_->optimizer_shard =
            optimizer_shard(shard_group, params, kActorRolloutRefWorkerComponent, layout.dp, reduce_dtype);
      }
      actor_->param_dtype = resolved_precision(fsdp.param_dtype, device_);
      // The T x P x C (or S) ranks of a DP rank share its place, as nd dispatch gives them its rows.
      actor_->data_parallel_rank = tensor_parallel_mesh_info(rank(), copy_size() * sp_size_).dp_rank;
      // The gradients' group holds each row once per Ulysses / context-parallel part of its sequence.
      actor_->data_parallel_group = DataParallelGroup(layout.dp, sp_size_ * cp_size_);
      actor_->world_size = world_size();
    } else {
      freeze(actor_module_);
    }
  }
  if (is_ref_ && is_actor_ && lora.enabled()) {
    // verl's ref_in_actor: the reference is the actor's base with the adapters disabled, no second copy.
    ref_policy_ = std::make_unique<DataParallelPPOActor>(actor_cfg_, actor_module_, nullptr);
    ref_policy_->fully_sharded = actor_sharded_;  // a ZeRO-3 base: gathered layer by layer as for the actor
    ref_policy_->param_dtype = resolved_precision(arr.ref.fsdp_config.param_dtype, device_);
  } else if (is_ref_) {
    ref_module_ = model::load_model(path, load_options);
    ref_module_->to(device_);
    ref_module_->remove_padding = arr.model.use_remove_padding;
    freeze(ref_module_);
    set_sequence_split(ref_module_, ref_sp_group, ref_sp_key);
    model::set_megatron_sequence_parallel(ref_module_, arr.ref.megatron.sequence_parallel);
    if (copy_size() == 1 && arr.ref.fsdp_config.reshard_after_forward) {
      ref_sharded_ = fully_shard(ref_module_, layout.dp, -1, "actor_rollout_ref.ref.fsdp_config", "ref");
    }
    ref_policy_ = std::make_unique<DataParallelPPOActor>(actor_cfg_, ref_module_, nullptr);
    ref_policy_->fully_sharded = ref_sharded_;
    ref_policy_->param_dtype = resolved_precision(arr.ref.fsdp_config.param_dtype, device_);
  }
  // Offloaded state rests in host memory from now on (verl offloads right after building the model).
  if (is_actor_) actor_offload_.rest(actor_state(), optimizer_.get());
  if (is_ref_) ref_offload_.rest(ref_state(), nullptr);
  // Seeded per data-parallel rank: the TP ranks of one copy draw the same tokens.
  // (A tensor-parallel rollout group under fsdp shares one seed too: rollout seed + its replica's index.)
  const int64_t rollout_replica = rollout_tp_group_ ? rank() / rollout_tp : dp_rank_;
  rollout_generator_ =
      at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(arr.rollout.seed + rollout_replica));
  // Which ranks generate. Only a model copy's first rank's rows are collected, so only the ranks generating with
  // it do: its TP group (the copy's first T ranks: stage 0, context-parallel rank 0), or the rollout group holding
  // it, or it alone on the whole weights (rollout TP 1 under megatron TP). The copy's other ranks gather the
  // weights with them and then wait (on a shared CPU their cores go to the generating ranks). Under fsdp every
  // rank's rows are collected.
  const int64_t in_copy = rank() % copy_size();
  generates_ = rollout_tp_group_ ? (rank() - rank() % rollout_tp) % copy_size() == 0
                                 : in_copy < (rollout_regathers_ ? 1 : tp_size_);
  // The first rank of each generating group: it drives the multi-turn conversations and traces the group's rows.
  leads_generation_ = generates_ && (rollout_tp_group_ ? rollout_tp_group_->rank() : in_copy) == 0;
  // Tools and interactions load here, so that a bad tool config fails before training starts.
  if (is_rollout_ && arr.rollout.multi_turn.enable) {
    multi_turn_ = std::make_unique<MultiTurnRollout>(*config_);
    multi_turn_part_ = !generates_         ? MultiTurnPart::Idle
                       : leads_generation_ ? MultiTurnPart::Drive
                                           : MultiTurnPart::FollowTensorParallel;
  }
  if (is_rollout_ && arr.rollout.trace.backend) {
    trace_writer_ = agent::make_rollout_trace_writer(*arr.rollout.trace.backend, arr.rollout.trace.project_name);
  }
  initialised_ = true;
  return DataProto();
}

namespace {

// verl's agent-loop traces of one generate_sequences call (agent/rollout_trace.h): a trace per traced row, its
// root "agent_loop" holding the tool loop's ToolAgentLoop.run span, or for the single-turn rollout the row's
// AsyncLLMServerManager.generate span (the prompt without padding in, the response through its eos out).
void write_rollout_traces(agent::RolloutTraceWriter& writer, const config::RolloutTraceConfig& cfg,
                          const DataProto& prompts, const rollout::SamplingParams& params, uint64_t seed,
                          const rollout::GenerationOutput* single, std::vector<agent::TraceSpan> agent_runs,
                          int64_t start_ns, int64_t end_ns) {
  const Json& meta = prompts.meta_info;
  const int64_t rows = prompts.tensor("input_ids").size(0);
  std::vector<Json> index(static_cast<size_t>(rows));
  if (auto it = prompts.non_tensor_batch.find("index"); it != prompts.non_tensor_batch.end()) index = it->second;
  const auto tags = agent::trace_tags(index, meta.value("global_steps", int64_t{-1}), meta.value("validate", false),
                                      cfg.experiment_name);
  const std::vector<bool> traced = agent::traced_rows(index, cfg.max_samples_per_step_per_worker, seed);
  const nlohmann::ordered_json sampling = {{"temperature", params.temperature}, {"top_p", params.top_p},
                                           {"top_k", params.top_k}, {"repetition_penalty", 1.0},
                                           {"logprobs", params.calculate_log_probs}};
  std::vector<agent::SampleTrace> traces;
  for (int64_t i = 0; i < rows; ++i) {
    if (!traced[static_cast<size_t>(i)]) continue;
    agent::SampleTrace t;
    t.tags = tags[static_cast<size_t>(i)];
    t.root.name = "agent_loop";
    t.root.start_ns = start_ns;
    t.root.end_ns = end_ns;
    if (single == nullptr) {
      t.root.children.push_back(std::move(agent_runs.at(static_cast<size_t>(i))));
    } else {
      const int64_t P = single->prompts.size(1);
      const auto mask = single->attention_mask[i].to(torch::kCPU).to(torch::kBool);
      const auto prompt_ids = single->prompts[i].to(torch::kCPU).masked_select(mask.narrow(0, 0, P));
      const auto response_ids = single->responses[i].to(torch::kCPU).masked_select(mask.narrow(0, P, mask.size(0) - P));
      agent::TraceSpan span;
      span.name = "AsyncLLMServerManager.generate";
      span.inputs = {{"request_id", agent::trace_request_id()},
                     {"prompt_ids", std::vector<int64_t>(prompt_ids.data_ptr<int64_t>(),
                                                         prompt_ids.data_ptr<int64_t>() + prompt_ids.numel())},
                     {"sampling_params", sampling}, {"image_data", nullptr}, {"video_data", nullptr}};
      nlohmann::ordered_json log_probs;
      if (params.calculate_log_probs) {
        const auto lp = single->rollout_log_probs[i].to(torch::kCPU).to(torch::kFloat32).narrow(0, 0, response_ids.numel()).contiguous();
        log_probs = std::vector<float>(lp.data_ptr<float>(), lp.data_ptr<float>() + lp.numel());
      }
      span.outputs = {{"token_ids", std::vector<int64_t>(response_ids.data_ptr<int64_t>(),
                                                         response_ids.data_ptr<int64_t>() + response_ids.numel())},
                      {"log_probs", log_probs}, {"routed_experts", nullptr}, {"stop_reason", "completed"},
                      {"num_preempted", nullptr}};
      span.start_ns = start_ns;
      span.end_ns = end_ns;
      t.root.children.push_back(std::move(span));
    }
    traces.push_back(std::move(t));
  }
  writer.write(traces);
}

}  // namespace

namespace {

// A rollout group's rows (consecutive ranks; the ranks of one megatron model copy hold the same rows, so each copy's
// are sent once, by its first rank in the group), and where each rank's own rows lie in them.
struct GroupRows {
  DataProto rows;
  std::vector<int64_t> offset, count;  // per group rank: its rows' place in `rows`
};

GroupRows gather_group_rows(const DataProto& mine, parallel::Comm& group, int64_t group_start, int64_t copy_size) {
  const int n = group.size();
  std::vector<int> source(static_cast<size_t>(n));  // the group rank whose rows rank r holds
  for (int r = 0; r < n; ++r) {
    const int64_t g = group_start + r;
    source[static_cast<size_t>(r)] = static_cast<int>(std::max(g - g % copy_size, group_start) - group_start);
  }
  GroupRows out;
  std::vector<DataProto> parts;
  std::vector<int64_t> part_offset(static_cast<size_t>(n), 0), part_count(static_cast<size_t>(n), 0);
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (source[static_cast<size_t>(r)] != r) continue;
    std::string bytes = r == group.rank() ? mine.serialize() : std::string();
    group.broadcast_bytes(bytes, r);
    parts.push_back(r == group.rank() ? mine : DataProto::deserialize(bytes));
    part_offset[static_cast<size_t>(r)] = total;
    part_count[static_cast<size_t>(r)] = parts.back().size();
    total += parts.back().size();
  }
  out.rows = DataProto::concat(parts);
  for (int r = 0; r < n; ++r) {
    out.offset.push_back(part_offset[static_cast<size_t>(source[static_cast<size_t>(r)])]);
    out.count.push_back(part_count[static_cast<size_t>(source[static_cast<size_t>(r)])]);
  }
  return out;
}

// This rank's rows of a group's output (in the order of gather_group_rows' rows).
DataProto own_group_rows(const DataProto& all, const parallel::Comm& group, const GroupRows& rows) {
  const auto r = static_cast<size_t>(group.rank());
  return all.slice(rows.offset[r], rows.offset[r] + rows.count[r]);
}

}  // namespace

DataProto ActorRolloutRefWorker::generate_sequences(const DataProto& prompts) {
  require_initialised("generate_sequences");
  VERL_CHECK(is_rollout_, kActorRolloutRefWorkerComponent,
             "generate_sequences needs a rollout role; this worker's role is '", role_, "'");
  const auto start = std::chrono::steady_clock::now();
  const auto& rollout_cfg = config_->actor_rollout_ref.rollout;
  const Json& meta = prompts.meta_info;
  VERL_CHECK(meta.contains("pad_token_id") && meta["pad_token_id"].is_number_integer(), kActorRolloutRefWorkerComponent,
             "generate_sequences needs meta_info['pad_token_id'] (an int)");
  const bool validate = meta.value("validate", false);
  uint64_t seed = 0;
  {
    std::lock_guard<std::mutex> lock(rollout_generator_->mutex());
    seed = at::check_generator<at::CPUGeneratorImpl>(*rollout_generator_)->random64();
  }
  auto params = rollout::sampling_params_from_config(rollout_cfg, validate, eos_ids_from_meta(meta),
                                                     meta["pad_token_id"].get<int64_t>(), seed);
  params.n = 1;  // the trainer repeats prompts n times before generation
  if (meta.contains("do_sample") && !meta["do_sample"].is_null()) params.do_sample = meta["do_sample"].get<bool>();
  if (!validate && meta.contains("temperature") && meta["temperature"].is_number()) {
    params.temperature = meta["temperature"].get<double>();
  }
  VERL_CHECK(prompts.has_tensor("input_ids") && prompts.has_tensor("attention_mask"), kActorRolloutRefWorkerComponent,
             "generate_sequences needs batch keys 'input_ids' and 'attention_mask'");
  actor_module_->eval();
  // The hybrid engine's rollout uses the actor's weights: brought in when they rest offloaded.
  std::optional<OnDevice> on_device;
  if (is_actor_) on_device.emplace(actor_offload_, actor_state(), nullptr);
  // Generation runs on the whole model (FSDP's summon_full_params before vLLM's weight sync).
  std::optional<model::FullyShardedModel::Gathered> whole;
  if (actor_sharded_) whole.emplace(actor_sharded_.get());
  // rollout.dtype (bf16 on CUDA by default): the actor's weights cast for this generation only.
  const torch::ScalarType rollout_dtype = resolved_precision(rollout_cfg.dtype, device_);
  VERL_CHECK(rollout_dtype == actor_module_->model->weight_options().dtype().toScalarType() ||
                 !actor_module_->tp.active() || rollout_regathers_,
             kActorRolloutRefWorkerComponent, "actor_rollout_ref.rollout.dtype=", c10::toString(rollout_dtype),
             " under tensor parallelism is not supported (the slices generate in the actor's dtype); set "
             "actor_rollout_ref.rollout.dtype=float32");
  // A rollout group of its own (fsdp, or megatron with a rollout TP unlike the actor's): the group generates all its
  // ranks' rows together, on slices of the whole weights, and each rank keeps its own rows of the output (verl's
  // vLLM TP replica over its trainer ranks).
  const GroupRows group_rows =
      rollout_tp_group_ && generates_
          ? gather_group_rows(prompts, *rollout_tp_group_, rank() - rank() % rollout_tp_group_->size(), copy_size())
          : GroupRows{};
  const DataProto& rollout_prompts = rollout_tp_group_ ? group_rows.rows : prompts;
  rollout::GenerationOutput out;
  DataProto multi_turn_out;
  std::vector<agent::TraceSpan> agent_runs;  // rollout.trace with the tool agent loop: ToolAgentLoop.run per row
  const int64_t trace_start = trace_writer_ ? agent::trace_clock_ns() : 0;
  {
    torch::NoGradGuard no_grad;
    // LoRA: W + s B A in the weights for this generation (the decode kernels keep their speed), put back after.
    // Merged at every batch size, not the side path x W^T + s (x A^T) B^T: measured in bench/RESULTS.md
    // (2026-11-26, issue 26; `verl bench generate --lora-rank 32`, fp32, 2-core Xeon) the side path decodes
    // 0.73x (batch 1), 0.58x (8) and 0.49x (64) as fast as merged weights on qwen2-25m and 0.51x at batch 8 on
    // qwen2.5-0.5b (the fused decode step needs plain weights). The merge + unmerge (0.03 s for 25M, 0.5 s for
    // 0.5B at r=32) is repaid within a few dozen decode steps even at batch 1, sooner at larger batches.
    model::MergedAdapter merged(actor_module_);
    // Pipeline stages: every rank generates with all the layers (gathered from the stages for this generation, as
    // verl syncs the stages' weights into its rollout engine), its TP slices still slices; or, for a rollout TP
    // unlike the actor's, the whole model (every stage and slice gathered), cast, then sliced for the rollout group.
    model::CausalLM generator =
        rollout_regathers_ ? model::gather_full_model(actor_module_) : model::gather_pipeline_stages(actor_module_);
    // A rank whose rows are not collected stops here, having gathered the weights with the others.
    if (!generates_) return DataProto();
    model::ScopedParameterCast cast(*generator, rollout_dtype);
    model::CausalLM sliced{nullptr};
    if (rollout_tp_group_) sliced = model::shard_model(generator, model::TensorParallelGroup{rollout_tp_group_});
    model::CausalLM& engine_model = rollout_tp_group_ ? sliced : generator;
    if (multi_turn_) {
      multi_turn_out = multi_turn_->generate(engine_model, rollout_prompts, params,
                                             trace_writer_ ? &agent_runs : nullptr, multi_turn_part_);
    } else {
      out = rollout::generate(engine_model, rollout_prompts.tensor("input_ids"),
                              rollout_prompts.tensor("attention_mask"), params);
    }
  }
  // A generating group's rows are traced once, by its first rank (the multi-turn driver, which holds the runs).
  if (trace_writer_ && leads_generation_) {
    write_rollout_traces(*trace_writer_, rollout_cfg.trace, rollout_prompts, params, seed, multi_turn_ ? nullptr : &out,
                         std::move(agent_runs), trace_start, agent::trace_clock_ns());
  }
  Json out_meta = Json::object();
  // Timing from rank 0 only: per-rank values differ and DataProto::concat requires equal meta values.
  if (rank() == 0) {
    const double secs = seconds_since(start);
    out_meta["timing"] = {{"generate_sequences", secs}};
  }
  if (multi_turn_) {
    if (rollout_tp_group_) {
      // The driver's conversations cover the group's rows: sent to the others, each keeps its own.
      std::string bytes = rollout_tp_group_->rank() == 0 ? multi_turn_out.serialize() : std::string();
      rollout_tp_group_->broadcast_bytes(bytes, 0);
      multi_turn_out = own_group_rows(DataProto::deserialize(bytes), *rollout_tp_group_, group_rows);
    }
    multi_turn_out.meta_info = out_meta;
    return multi_turn_out;
  }
  protocol::TensorMap batch = {{"prompts", out.prompts.to(torch::kCPU)},
                               {"responses", out.responses.to(torch::kCPU)},
                               {"input_ids", out.input_ids.to(torch::kCPU)},
                               {"attention_mask", out.attention_mask.to(torch::kCPU)},
                               {"position_ids", out.position_ids.to(torch::kCPU)},
                               {"response_mask", out.response_mask.to(torch::kCPU)}};
  if (params.calculate_log_probs) batch["rollout_log_probs"] = out.rollout_log_probs.to(torch::kCPU);
  // verl 0.9.1 runs every rollout through its agent loop, and its single-turn loop reports two turns and no turn
  // scores or tool rewards: the num_turns/* metrics and the reward function's extra_info see them.
  const auto rows = static_cast<size_t>(out.responses.size(0));
  protocol::NonTensorMap columns = {{"__num_turns__", std::vector<Json>(rows, Json(2))},
                                    {"turn_scores", std::vector<Json>(rows, Json::array())},
                                    {"tool_rewards", std::vector<Json>(rows, Json::array())}};
  DataProto result = DataProto::from_dict(std::move(batch), std::move(columns), out_meta);
  return rollout_tp_group_ ? own_group_rows(result, *rollout_tp_group_, group_rows) : result;
}

DataProto ActorRolloutRefWorker::compute_log_prob(const DataProto& data) {
  require_initialised("compute_log_prob");
  VERL_CHECK(is_actor_, kActorRolloutRefWorkerComponent,
             "compute_log_prob needs an actor role; this worker's role is '", role_, "'");
  const auto& r = config_->actor_rollout_ref.rollout;
  DataProto in = data.select({"responses", "input_ids", "attention_mask", "position_ids"});
  in.meta_info = Json::object();
  in.meta_info["temperature"] = r.sampling.temperature;
  in.meta_info["use_dynamic_bsz"] = r.log_prob_use_dynamic_bsz;
  in.meta_info["max_token_len"] = r.log_prob_max_token_len_per_gpu;
  if (r.log_prob_micro_batch_size_per_gpu) in.meta_info["micro_batch_size"] = *r.log_prob_micro_batch_size_per_gpu;
  // actor.calculate_sum_pi_squared: also sum_v pi_v^2 per token (verl's, for the optimal token baselines).
  torch::Tensor sum_pi_squared;
  const bool with_sum_pi_squared = config_->actor_rollout_ref.actor.calculate_sum_pi_squared;
  OnDevice on_device(actor_offload_, actor_state(), nullptr);
  const model::SequenceLengthSums lengths =
      global_sequence_lengths(actor_->data_parallel_group, in.tensor("attention_mask"));
  const auto start = std::chrono::steady_clock::now();
  auto [log_probs, entropys] = actor_->compute_log_prob(in, /*calculate_entropy=*/true,
                                                        with_sum_pi_squared ? &sum_pi_squared : nullptr);
  // verl's perf/mfu/actor_infer: the batch's forward FLOPs on every rank over this rank's time (a third of a step's).
  const double mfu = model::model_flops_utilization(actor_module_->config, lengths, seconds_since(start), device_,
                                                    world_size(), /*forward_only=*/true);
  protocol::TensorMap out = {{"old_log_probs", log_probs}, {"entropys", entropys}};
  if (with_sum_pi_squared) out["sum_pi_squared"] = sum_pi_squared;
  return DataProto::from_dict(
      std::move(out), {},
      Json{{"temperature", r.sampling.temperature}, {"metrics", {{"perf/mfu/actor_infer", Json::array({mfu})}}}});
}

DataProto ActorRolloutRefWorker::compute_ref_log_prob(const DataProto& data) {
  require_initialised("compute_ref_log_prob");
  VERL_CHECK(is_ref_, kActorRolloutRefWorkerComponent,
             "compute_ref_log_prob needs a ref role (ref or actor_rollout_ref); this worker's role is '", role_, "'");
  const auto& arr = config_->actor_rollout_ref;
  DataProto in = data.select({"responses", "input_ids", "attention_mask", "position_ids"});
  in.meta_info = Json::object();
  in.meta_info["temperature"] = arr.rollout.sampling.temperature;
  in.meta_info["use_dynamic_bsz"] = arr.ref.log_prob_use_dynamic_bsz;
  in.meta_info["max_token_len"] = arr.ref.log_prob_max_token_len_per_gpu;
  if (arr.ref.log_prob_micro_batch_size_per_gpu) in.meta_info["micro_batch_size"] = *arr.ref.log_prob_micro_batch_size_per_gpu;
  torch::Tensor lp;
  if (ref_module_.is_empty()) {  // LoRA: the actor's base, adapters off
    OnDevice on_device(actor_offload_, actor_state(), nullptr);
    model::AdapterDisabled base(actor_module_);
    lp = ref_policy_->compute_log_prob(in, /*calculate_entropy=*/false).first;
  } else {
    OnDevice on_device(ref_offload_, ref_state(), nullptr);
    lp = ref_policy_->compute_log_prob(in, /*calculate_entropy=*/false).first;
  }
  return DataProto::from_dict({{"ref_log_prob", lp}});
}

DataProto ActorRolloutRefWorker::update_actor(const DataProto& data) {
  require_initialised("update_actor");
  VERL_CHECK(is_actor_, kActorRolloutRefWorkerComponent, "update_actor needs an actor role; this worker's role is '",
             role_, "'");
  VERL_CHECK(world_size() == tp_size_ * pp_size_ || actor_->gradient_all_reduce || actor_->fully_sharded,
             kActorRolloutRefWorkerComponent, "update_actor with world size ", world_size(),
             " needs gradients averaged across ranks; the in-process transport keeps one model per rank with no "
             "all-reduce, so use one rank (trainer.n_gpus_per_node=1, trainer.nnodes=1) or launch with mpirun "
             "(docs/distributed.md)");
  const auto start = std::chrono::steady_clock::now();
  OnDevice on_device(actor_offload_, actor_state(), optimizer_.get());
  Json metrics = actor_->update_policy(data);
  // verl's legacy workers log the device's peaks and the machine's used memory after each update.
  metrics.update(memory_metrics(device_));
  // verl logs the LR this update used, then steps the schedule once per training step.
  metrics["actor/lr"] = Json::array({lr_scheduler_->last_lr()});
  lr_scheduler_->step();
  DataProto out;
  out.meta_info["metrics"] = metrics;
  if (rank() == 0) {  // the worker's own time (see generate_sequences)
    out.meta_info["timing"] = {{"update_actor", seconds_since(start)}};
  }
  return out;
}

DataProto ActorRolloutRefWorker::sync_rollout_weights(const DataProto&) {
  require_initialised("sync_rollout_weights");
  VERL_CHECK(is_actor_ != is_rollout_, kActorRolloutRefWorkerComponent,
             "sync_rollout_weights is for a separate actor and rollout "
             "(actor_rollout_ref.hybrid_engine=false); this worker's role is '",
             role_, "'");
  const auto& sync = context().weight_sync;
  // LoRA: the base is frozen, so after the first sync only the adapters move (as verl, which loads the base into
  // its rollout engine once and then syncs the adapters); actor and rollout ranks count their syncs alike.
  const WeightSyncScope scope = model::lora_state(actor_module_) && rollout_base_synced_
                                    ? WeightSyncScope::AdaptersOnly
                                    : WeightSyncScope::Everything;
  rollout_base_synced_ = true;
  // Offloaded weights come in where they are read: actor rank 0 (it broadcasts), every actor rank under ZeRO-3.
  std::optional<OnDevice> on_device;
  if (is_actor_ && (rank() == 0 || actor_sharded_)) on_device.emplace(actor_offload_, actor_state(), nullptr);
  // Under ZeRO-3 every actor rank joins the gather; rank 0 then holds the whole model. The adapters are whole.
  std::optional<model::FullyShardedModel::Gathered> whole;
  if (actor_sharded_ && scope == WeightSyncScope::Everything) whole.emplace(actor_sharded_.get());
  if (is_actor_ && rank() != 0) return DataProto();  // actor rank 0 speaks for the group
  VERL_CHECK(sync != nullptr, kActorRolloutRefWorkerComponent, "sync_rollout_weights on ", role_, " rank ", rank(),
             ": this worker has no weight-sync communicator (the transport made none)");
  VERL_CHECK((sync->rank() == 0) == is_actor_, kActorRolloutRefWorkerComponent,
             "the weight-sync communicator's rank 0 must be actor rank 0");
  // On GPUs the weights go device to device over NCCL, made at the first sync (every member syncs together).
  if (!weight_sync_on_device_) weight_sync_on_device_ = parallel::device_comm(sync, device_);
  broadcast_weights(*weight_sync_on_device_, actor_module_, scope);
  return DataProto();
}

// The rollout role's checkpoint is its sampling state only (its weights are the actor's):
//   extra_state_world_size_{W}_rank_{r}.json  {"rng": {"rollout": hex}, "global_step": N}
DataProto ActorRolloutRefWorker::save_rollout_state(const DataProto& input) {
  const Json& meta = input.meta_info;
  VERL_CHECK(meta.contains("local_path") && meta["local_path"].is_string(), kActorRolloutRefWorkerComponent,
             "save_checkpoint needs meta_info['local_path'] (the .../global_step_N/rollout folder)");
  const int W = world_size(), r = rank();
  save_rank_folder(expand_home(meta["local_path"].get<std::string>()), r, context().comm.get(),
                   [&](const fs::path& dir) {
                     Json extra;
                     extra["rng"] = {{"rollout", generator_state(*rollout_generator_)}};
                     if (meta.contains("global_step")) extra["global_step"] = meta["global_step"];
                     write_file_atomic((dir / extra_state_file_name(W, r)).string(), extra.dump(2));
                   });
  return DataProto();
}

DataProto ActorRolloutRefWorker::load_rollout_state(const DataProto& input) {
  const Json& meta = input.meta_info;
  VERL_CHECK(meta.contains("local_path") && meta["local_path"].is_string(), kActorRolloutRefWorkerComponent,
             "load_checkpoint needs meta_info['local_path'] (the .../global_step_N/rollout folder)");
  const fs::path dir = expand_home(meta["local_path"].get<std::string>());
  const int W = world_size(), r = rank();
  const fs::path f = dir / extra_state_file_name(W, r);
  const Json extra = load_extra_state(dir.string(), W, r, kActorRolloutRefWorkerComponent);
  set_generator_state(*rollout_generator_,
                      extra_state_rng(extra, "rollout", f.string(), kActorRolloutRefWorkerComponent), f.string());
  return DataProto();
}

DataProto ActorRolloutRefWorker::save_checkpoint(const DataProto& input) {
  require_initialised("save_checkpoint");
  if (is_rollout_ && !is_actor_) return save_rollout_state(input);
  VERL_CHECK(is_actor_, kActorRolloutRefWorkerComponent, "save_checkpoint needs an actor role; this worker's role is '",
             role_, "'");
  const Json& meta = input.meta_info;
  VERL_CHECK(meta.contains("local_path") && meta["local_path"].is_string(), kActorRolloutRefWorkerComponent,
             "save_checkpoint needs meta_info['local_path'] (the .../global_step_N/actor folder)");
  const std::string local_path = expand_home(meta["local_path"].get<std::string>());
  const int W = world_size(), r = rank();
  const auto& contents = actor_cfg_.checkpoint.save_contents;
  // The HF weights are the whole model: under megatron or ZeRO-3 every rank joins the gather.
  std::optional<model::FullyShardedModel::Gathered> whole;
  if (actor_sharded_ && contains(contents, "hf_model")) whole.emplace(actor_sharded_.get());
  model::CausalLM hf_module = contains(contents, "hf_model") ? model::gather_full_model(actor_module_) : actor_module_;
  const auto adapter_state = model::lora_state(actor_module_);
  const bool lora = adapter_state != nullptr;
  // LoRA: the adapters whole in every file (gathered from the tensor-parallel slices: every rank joins).
  const model::NamedTensors adapters = lora ? model::lora_full_state(actor_module_) : model::NamedTensors{};
  save_rank_folder(local_path, r, context().comm.get(), [&](const fs::path& dir) {
    if (contains(contents, "model")) {
      // LoRA: the adapters only (the base is actor_rollout_ref.model.path, named in lora_adapter/).
      if (lora) {
        model::save_lora_state(adapters, (dir / model_file_name(W, r)).string());
      } else {
        save_model_file(actor_module_, actor_sharded_.get(), (dir / model_file_name(W, r)).string());
      }
    }
    if (contains(contents, "optimizer")) save_optimizer_state(*optimizer_, (dir / optim_file_name(W, r)).string());
    if (contains(contents, "extra")) {
      Json extra;
      extra["lr_scheduler"] = lr_scheduler_->state_dict();
      extra["rng"] = {{"cpu", generator_state(at::detail::getDefaultCPUGenerator())},
                      {"rollout", generator_state(*rollout_generator_)}};
      if (meta.contains("global_step")) extra["global_step"] = meta["global_step"];
      write_file_atomic((dir / extra_state_file_name(W, r)).string(), extra.dump(2));
    }
    if (r == 0) {
      const fs::path hf = dir / "huggingface";
      fs::create_directories(hf);
      const fs::path src = expand_home(config_->actor_rollout_ref.model.path);
      if (lora) {
        model::save_peft_adapter(adapters, adapter_state->spec, (dir / kLoraAdapterDir).string(),
                                 fs::absolute(src).string());
      }
      if (contains(contents, "hf_model")) {
        std::optional<model::MergedAdapter> merged;  // LoRA: the HF model is the merged one
        if (lora) merged.emplace(hf_module);
        model::save_model(hf_module, hf.string());
      } else {
        model::save_hf_config(actor_module_->config, hf.string());
        model::save_generation_config(actor_module_->config, hf.string());
      }
      const auto& model = config_->actor_rollout_ref.model;
      copy_side_files(expand_home(model.hf_config_dir()), expand_home(model.tokenizer_dir()), hf);
    }
  });
  return DataProto();
}

DataProto ActorRolloutRefWorker::load_checkpoint(const DataProto& input) {
  require_initialised("load_checkpoint");
  if (is_rollout_ && !is_actor_) return load_rollout_state(input);
  VERL_CHECK(is_actor_, kActorRolloutRefWorkerComponent, "load_checkpoint needs an actor role; this worker's role is '",
             role_, "'");
  const Json& meta = input.meta_info;
  VERL_CHECK(meta.contains("local_path") && meta["local_path"].is_string(), kActorRolloutRefWorkerComponent,
             "load_checkpoint needs meta_info['local_path'] (the .../global_step_N/actor folder)");
  const fs::path dir = expand_home(meta["local_path"].get<std::string>());
  VERL_CHECK(fs::is_directory(dir), kActorRolloutRefWorkerComponent, "checkpoint folder '", dir.string(),
             "' does not exist");
  const int W = world_size(), r = rank();
  const auto& contents = actor_cfg_.checkpoint.load_contents;
  if (contains(contents, "model")) {
    check_checkpoint_rank_file(dir.string(), model_file_name(W, r), W);
    if (model::lora_state(actor_module_)) {
      model::load_lora_state(actor_module_, (dir / model_file_name(W, r)).string());
    } else {
      load_model_file(actor_module_, actor_sharded_.get(), (dir / model_file_name(W, r)).string());
    }
  }
  if (contains(contents, "optimizer")) {
    check_checkpoint_rank_file(dir.string(), optim_file_name(W, r), W);
    load_optimizer_state(*optimizer_, (dir / optim_file_name(W, r)).string());
  }
  if (contains(contents, "extra")) {
    const fs::path f = dir / extra_state_file_name(W, r);
    Json extra = load_extra_state(dir.string(), W, r, kActorRolloutRefWorkerComponent);
    VERL_CHECK(extra.is_object() && extra.contains("lr_scheduler"), kActorRolloutRefWorkerComponent, "'", f.string(),
               "' lacks lr_scheduler");
    const std::string cpu_rng = extra_state_rng(extra, "cpu", f.string(), kActorRolloutRefWorkerComponent);
    const std::string rollout_rng = extra_state_rng(extra, "rollout", f.string(), kActorRolloutRefWorkerComponent);
    lr_scheduler_->load_state_dict(extra["lr_scheduler"]);
    set_generator_state(at::detail::getDefaultCPUGenerator(), cpu_rng, f.string());
    set_generator_state(*rollout_generator_, rollout_rng, f.string());
  }
  if (meta.value("del_local_after_load", false) && r == W - 1) fs::remove_all(dir);
  return DataProto();
}

single_controller::WorkerFactory actor_rollout_ref_worker_factory(std::shared_ptr<const config::PPOConfig> config,
                                                                  std::string role) {
  return [config, role](const single_controller::WorkerContext& context) -> std::unique_ptr<single_controller::Worker> {
    return std::make_unique<ActorRolloutRefWorker>(context, config, role);
  };
}

namespace {

// A LoRA checkpoint: the adapters of rank 0's model file on the base its lora_adapter/ names; PEFT's folder, or
// (merge) the base with the adapters merged as an HF model folder.
void export_lora_checkpoint(const fs::path& dir, const fs::path& weights, const std::string& out_dir, bool merge) {
  const fs::path adapter = dir / kLoraAdapterDir;
  const std::string base = model::peft_base_model(adapter.string());
  VERL_CHECK(!base.empty() && fs::is_directory(base), kActorRolloutRefWorkerComponent, "'",
             (adapter / "adapter_config.json").string(), "' names base_model_name_or_path '", base,
             "', which is not a folder: the export needs the base model");
  model::LoadOptions options;
  // A base trained with model.hf_config_path has no config.json of its own: the checkpoint's copy stands in.
  if (!fs::exists(fs::path(base) / "config.json")) options.config_dir = (dir / "huggingface").string();
  model::CausalLM module = model::load_model(base, options);
  model::load_peft_adapter(module, adapter.string());
  model::load_lora_state(module, weights.string());  // the training state (lora_adapter/ holds the same values)
  if (!merge) {
    model::save_peft_adapter(module, out_dir, base);
    return;
  }
  model::merge_and_unload(module);
  model::save_model(module, out_dir);
  copy_side_files(dir / "huggingface", dir / "huggingface", out_dir);
}

}  // namespace

void export_hf_model(const std::string& checkpoint_actor_dir, const std::string& out_dir, bool merge_lora) {
  const fs::path dir = expand_home(checkpoint_actor_dir);
  VERL_CHECK(fs::is_directory(dir), kActorRolloutRefWorkerComponent, "checkpoint folder '", dir.string(),
             "' does not exist");
  const fs::path hf = dir / "huggingface";
  VERL_CHECK(fs::exists(hf / "config.json"), kActorRolloutRefWorkerComponent, "checkpoint folder '", dir.string(),
             "' has no huggingface/config.json");
  auto sizes = saved_world_sizes(dir);
  VERL_CHECK(!sizes.empty(), kActorRolloutRefWorkerComponent, "checkpoint folder '", dir.string(),
             "' has no model_world_size_{W}_rank_0.safetensors");
  const fs::path weights = dir / model_file_name(static_cast<int>(sizes.front()), 0);
  VERL_CHECK(fs::exists(weights), kActorRolloutRefWorkerComponent, "checkpoint folder '", dir.string(), "' has no ",
             weights.filename().string());
  if (fs::exists(dir / kLoraAdapterDir / "adapter_config.json")) {
    export_lora_checkpoint(dir, weights, out_dir, merge_lora);
    return;
  }
  VERL_CHECK(!merge_lora, kActorRolloutRefWorkerComponent, "--merge: checkpoint folder '", dir.string(),
             "' holds no LoRA adapter (no ", kLoraAdapterDir,
             "/adapter_config.json); its export is the full model already, drop --merge");
  const int W = static_cast<int>(sizes.front());
  const model::HFConfig config = model::load_hf_config(hf.string());
  // A critic's checkpoint (config.json: <Family>ForTokenClassification) holds the value head `score`.
  model::CausalLM module(config, config.token_classification ? model::HeadKind::Value : model::HeadKind::LM);
  if (model::is_shard_state_file(weights.string())) {
    // ZeRO-3: ranks 0..N-1 (the first shard group) hold every parameter's runs.
    std::vector<std::string> files;
    for (int r = 0; r < W; ++r) {
      check_checkpoint_rank_file(dir.string(), model_file_name(W, r), W);
      files.push_back((dir / model_file_name(W, r)).string());
    }
    model::load_merged_shard_files(module, files);
    model::save_model(module, out_dir);
    copy_side_files(hf, hf, out_dir);
    return;
  }
  // Under megatron each rank's file holds its slices of its pipeline stage: ranks 0..T*P-1 (data-parallel rank 0's
  // copy) together hold the model, stage s's TP group the ranks [s T, (s+1) T), T read off the embedding's rows (the
  // first stage holds the embedding). A parameter's slices sit in the T ranks from the first file holding it.
  const int64_t embed_rows = io::SafetensorsCheckpoint(weights.string()).get("model.embed_tokens.weight").shape.at(0);
  const int64_t vocab = module->config.vocab_size;
  VERL_CHECK(embed_rows > 0 && vocab % embed_rows == 0 && (vocab / embed_rows) <= W, kActorRolloutRefWorkerComponent,
             "'", weights.string(), "' holds ", embed_rows,
             " embedding rows, which is no tensor-parallel slice of the vocabulary (", vocab, ") over ", W, " ranks");
  const int tp = static_cast<int>(vocab / embed_rows);
  std::vector<std::unique_ptr<io::SafetensorsCheckpoint>> files;
  const auto file = [&](int r) -> io::SafetensorsCheckpoint& {
    while (static_cast<int>(files.size()) <= r) {
      const int next = static_cast<int>(files.size());
      check_checkpoint_rank_file(dir.string(), model_file_name(W, next), W);
      files.push_back(std::make_unique<io::SafetensorsCheckpoint>((dir / model_file_name(W, next)).string()));
    }
    return *files[static_cast<size_t>(r)];
  };
  torch::NoGradGuard no_grad;
  for (auto& item : module->named_parameters()) {
    int stage_start = 0;  // the first stage holding it (with virtual stages a stage's layers are not contiguous)
    while (stage_start < W && !file(stage_start).contains(item.key())) stage_start += tp;
    VERL_CHECK(stage_start + tp <= W, kActorRolloutRefWorkerComponent, "no model_world_size_", W,
               "_rank_*.safetensors in '", dir.string(), "' holds tensor '", item.key(), "'");
    const int split = model::tensor_parallel_dim(item.key());
    std::vector<torch::Tensor> parts;
    for (int r = stage_start; r < stage_start + (split < 0 || tp == 1 ? 1 : tp); ++r) {
      VERL_CHECK(file(r).contains(item.key()), kActorRolloutRefWorkerComponent, "'",
                 (dir / model_file_name(W, r)).string(), "' lacks tensor '", item.key(), "'");
      parts.push_back(model::tensor_from_view(file(r).get(item.key())));
    }
    torch::Tensor whole = parts.size() == 1 ? parts[0] : torch::cat(parts, split);
    VERL_CHECK(whole.sizes() == item.value().sizes(), kActorRolloutRefWorkerComponent, "tensor '", item.key(),
               "' of the ", tp, " tensor-parallel slices in '", dir.string(), "' has shape ", whole.sizes(),
               ", config.json implies ", item.value().sizes());
    item.value().copy_(whole.to(item.value().scalar_type()));
  }
  model::save_model(module, out_dir);
  copy_side_files(hf, hf, out_dir);
}

}  // namespace verl::workers
