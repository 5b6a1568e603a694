#include "verl/workers/critic_worker.h"

#include <chrono>
#include <filesystem>
#include <optional>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/common/strings.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/value_lora.h"
#include "verl/model/weights.h"
#include "verl/parallel/ulysses.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/parallel_layout.h"
#include "verl/workers/worker_device.h"

namespace verl::workers {

namespace fs = std::filesystem;
using protocol::DataProto;
using single_controller::Dispatch;
using single_controller::Execute;

namespace {

constexpr const char* kCriticWorkerComponent = "critic";
// The adapters' initial A come from this seed on every rank, so data-parallel ranks start alike (as the actor's).
constexpr uint64_t kValueLoraInitSeed = 0;

std::string meta_string(const DataProto& input, const char* key, const char* method) {
  auto it = input.meta_info.find(key);
  VERL_CHECK(it != input.meta_info.end() && it->is_string(), kCriticWorkerComponent, method, " needs meta_info[\"", key,
             "\"] (a folder path string)");
  return expand_user(it->get<std::string>());
}

}  // namespace

DPCriticConfig normalize_critic_config(const config::PPOConfig& config, int world_size) {
  const config::CriticConfig& c = config.critic;
  VERL_CHECK(world_size > 0, kCriticWorkerComponent, "world size must be > 0, got ", world_size);
  DPCriticConfig out;
  const int64_t n = config.actor_rollout_ref.rollout.sampling.n;
  // verl: ppo_mini_batch_size (prompts, global) * rollout.n // dp = responses per rank per optimizer step.
  const int64_t responses = c.ppo_mini_batch_size * n;
  out.ppo_mini_batch_size = responses / world_size;
  VERL_CHECK(out.ppo_mini_batch_size > 0, kCriticWorkerComponent, "critic.ppo_mini_batch_size ", c.ppo_mini_batch_size,
             " x rollout.n ", n, " = ", responses, " responses is fewer than the ", world_size, " data-parallel ranks");
  out.ppo_micro_batch_size_per_gpu = c.ppo_micro_batch_size_per_gpu;
  out.forward_micro_batch_size_per_gpu = c.forward_micro_batch_size_per_gpu;
  out.use_dynamic_bsz = c.use_dynamic_bsz;
  out.ppo_max_token_len_per_gpu = c.ppo_max_token_len_per_gpu;
  out.forward_max_token_len_per_gpu = c.forward_max_token_len_per_gpu;
  out.ppo_epochs = c.ppo_epochs;
  out.shuffle = c.shuffle;
  out.data_loader_seed = c.data_loader_seed;
  out.grad_clip = c.grad_clip;
  out.cliprange_value = c.cliprange_value;
  out.loss_agg_mode = c.loss_agg_mode;
  out.loss_scale_factor = c.loss_scale_factor;
  if (!out.use_dynamic_bsz) {
    VERL_CHECK(out.ppo_micro_batch_size_per_gpu.has_value(), kCriticWorkerComponent,
               "critic.ppo_micro_batch_size_per_gpu must be set when critic.use_dynamic_bsz is false");
    VERL_CHECK(out.forward_micro_batch_size_per_gpu.has_value(), kCriticWorkerComponent,
               "critic.forward_micro_batch_size_per_gpu must be set when critic.use_dynamic_bsz is false");
    VERL_CHECK(out.ppo_mini_batch_size % *out.ppo_micro_batch_size_per_gpu == 0, kCriticWorkerComponent,
               "normalized critic ppo_mini_batch_size ", out.ppo_mini_batch_size, " (", c.ppo_mini_batch_size,
               " x rollout.n ", n, " / ", world_size,
               " ranks) should be divisible by critic.ppo_micro_batch_size_per_gpu ",
               *out.ppo_micro_batch_size_per_gpu);
  } else {
    VERL_CHECK(out.ppo_max_token_len_per_gpu > 0, kCriticWorkerComponent,
               "critic.ppo_max_token_len_per_gpu must be > 0, got ", out.ppo_max_token_len_per_gpu);
    VERL_CHECK(out.forward_max_token_len_per_gpu > 0, kCriticWorkerComponent,
               "critic.forward_max_token_len_per_gpu must be > 0, got ", out.forward_max_token_len_per_gpu);
  }
  return out;
}

CriticWorker::CriticWorker(const single_controller::WorkerContext& context,
                           std::shared_ptr<const config::PPOConfig> config)
    : Worker(context), config_(std::move(config)) {
  VERL_ASSERT(config_ != nullptr, kCriticWorkerComponent, "CriticWorker needs a config");
  // Under megatron the batch splits over the data-parallel ranks, and the T x P x C ranks of each compute together
  // (nd dispatch over mesh "critic", the copy's first rank answering).
  // Under Ulysses the S ranks of a DP rank likewise get the same rows and split each sequence (SP rank 0 answering).
  tp_size_ = config_->critic.tensor_parallel_size();
  pp_size_ = config_->critic.pipeline_parallel_size();
  cp_size_ = config_->critic.context_parallel_size();
  sp_size_ = config_->critic.ulysses_sequence_parallel_size;
  critic_config_ = normalize_critic_config(
      *config_, static_cast<int>(data_parallel_size(world_size(), copy_size() * sp_size_, model_parallel_key())));
  const single_controller::MeshRankInfo place = tensor_parallel_mesh_info(rank(), copy_size() * sp_size_);
  critic_config_.data_parallel_rank = place.dp_rank;  // the T x P x C (or S) ranks of a DP rank share it
  const bool nd = copy_size() > 1 || sp_size_ > 1;
  const Dispatch compute = nd ? Dispatch::NdComputeProto : Dispatch::DpComputeProto;
  const std::string mesh = nd ? "critic" : "";
  if (nd) set_mesh_info(mesh, place);
  model_path_ = expand_user(config_->critic.model.path);
  tokenizer_path_ = expand_user(config_->critic.model.tokenizer_path);
  register_method({"init_model", Dispatch::OneToAll, Execute::All, ""},
                  [this](const DataProto& in) { return init_model(in); });
  register_method({"compute_values", compute, Execute::All, mesh},
                  [this](const DataProto& in) { return compute_values(in); });
  register_method({"update_critic", compute, Execute::All, mesh},
                  [this](const DataProto& in) { return update_critic(in); });
  register_method({"save_checkpoint", Dispatch::OneToAll, Execute::All, ""},
                  [this](const DataProto& in) { return save_checkpoint(in); });
  register_method({"load_checkpoint", Dispatch::OneToAll, Execute::All, ""},
                  [this](const DataProto& in) { return load_checkpoint(in); });
}

std::string CriticWorker::model_parallel_key() const {
  if (sp_size_ > 1) return "critic.ulysses_sequence_parallel_size";
  if (pp_size_ > 1) return "critic.megatron.pipeline_model_parallel_size";
  return cp_size_ > 1 ? "critic.megatron.context_parallel_size" : "critic.megatron.tensor_model_parallel_size";
}

uint64_t CriticWorker::value_head_seed() const {
  return static_cast<uint64_t>(config_->data.seed.value_or(0));
}

void CriticWorker::require_initialized(const char* method) const {
  VERL_CHECK(critic_ != nullptr, kCriticWorkerComponent, method, " called before init_model");
}

void CriticWorker::require_gradient_sync(const char* what) const {
  VERL_CHECK(world_size() == tp_size_ * pp_size_ || context().comm != nullptr, kCriticWorkerComponent, what, " with ",
             world_size(),
             " critic ranks needs a gradient all-reduce between ranks, which the in-process transport does not "
             "provide; run the critic on 1 slot (trainer.n_gpus_per_node=1, trainer.nnodes=1) or launch with "
             "mpirun (docs/distributed.md)");
}

DataProto CriticWorker::init_model(const DataProto& in) {
  // The trainer's step budget for the LR schedule (this rank's own config may not have it: under mpirun).
  config::OptimConfig optim = config_->critic.optim;
  if (in.meta_info.contains("total_training_steps")) {
    optim.total_training_steps = in.meta_info["total_training_steps"].get<int64_t>();
  }
  VERL_CHECK(fs::is_directory(model_path_), kCriticWorkerComponent, "critic.model.path '", model_path_,
             "' is not a model folder (config.json + safetensors weights)");
  const torch::Device device = worker_device(config_->trainer, rank());
  const auto& mg = config_->critic.megatron;
  const auto& critic_fsdp = config_->critic.model.fsdp_config;
  offload_ = config_->critic.strategy == "megatron" ? OffloadPolicy{device, mg.param_offload, mg.grad_offload, mg.optimizer_offload}
                          : OffloadPolicy{device, critic_fsdp.param_offload, critic_fsdp.param_offload,
                                          critic_fsdp.optimizer_offload};
  model::LoadOptions options;
  options.head = model::HeadKind::Value;
  options.dtype = torch::kFloat32;
  options.value_head_seed = value_head_seed();
  options.config_overrides = config_->critic.model.override_config;
  if (!config_->critic.model.hf_config_path.empty())
    options.config_dir = expand_user(config_->critic.model.hf_config_path);
  const ParallelLayout layout =
      make_parallel_layout(context(), tp_size_, pp_size_, cp_size_, model_parallel_key(), device);
  options.tensor_parallel = layout.tp;
  options.pipeline_stages = layout.stages;
  options.pipeline_key = "critic.megatron.pipeline_model_parallel_size";
  options.pipeline_virtual_stages = config_->critic.megatron.virtual_pipeline_model_parallel_size;
  options.pipeline_virtual_key = "critic.megatron.virtual_pipeline_model_parallel_size";
  module_ = std::make_unique<model::CausalLM>(model::load_model(model_path_, options));
  (*module_)->to(device);  // before the optimizer: its state is made next to the parameters
  (*module_)->model->gradient_checkpointing = config_->critic.model.enable_gradient_checkpointing;
  (*module_)->remove_padding = config_->critic.model.use_remove_padding;
  const auto& lora = config_->critic.model.lora;
  lora_ = lora.enabled() || lora.lora_adapter_path.has_value();  // verl's _is_lora
  if (lora_) {
    // verl: get_peft_model(TOKEN_CLS): adapters on the decoder projections, the base frozen, the value head whole.
    const auto spec = model::lora_spec(lora);
    if (lora.lora_adapter_path) {
      model::load_peft_value_adapter(*module_, expand_user(*lora.lora_adapter_path), &spec);
    } else {
      model::add_value_lora(*module_, spec, kValueLoraInitSeed);
    }
  }
  if (sp_size_ > 1) {
    const std::string key = "critic.ulysses_sequence_parallel_size";
    VERL_CHECK(context().comm != nullptr, kCriticWorkerComponent, key, "=", sp_size_,
               " needs a communicator between the critic's ", world_size(),
               " ranks, which the in-process transport does not provide; launch with mpirun "
               "(docs/distributed.md)");
    model::set_sequence_parallel(*module_, parallel::ulysses_mesh(layout.dp, sp_size_, key).sp, key);
  }
  if (layout.cp) {
    model::set_sequence_parallel(*module_, layout.cp, "critic.megatron.context_parallel_size",
                                 model::SequenceSplit::ContextParallel);
  }
  model::set_megatron_sequence_parallel(*module_, config_->critic.megatron.sequence_parallel);
  (*module_)->train();
  const auto& fsdp = config_->critic.model.fsdp_config;
  // fsdp_config.mixed_precision.reduce_dtype: the dtype of the gradients' data-parallel reduction (fsdp only).
  const torch::ScalarType reduce_dtype =
      config_->critic.strategy == "megatron" ? torch::kFloat32
                                             : model::parse_precision(fsdp.reduce_dtype, "critic.model.fsdp_config");
  if (copy_size() == 1 && fsdp.reshard_after_forward) {
    fully_sharded_ = fully_shard(*module_, layout.dp, fsdp.fsdp_size, "critic.model.fsdp_config.fsdp_size",
                                 kCriticWorkerComponent, reduce_dtype);
  }
  // Optimizer state (and its ZeRO-1/2 sharding) only over what trains. LoRA over a ZeRO-3 base: the adapters and
  // the value head, whole beside the frozen shards, as without ZeRO-3.
  const std::vector<torch::Tensor> trainable = lora_ ? model::value_lora_parameters(*module_) : (*module_)->parameters();
  const bool shards_train = fully_sharded_ && !lora_;
  optimizer_ = build_optimizer(shards_train ? fully_sharded_->shards() : trainable, optim);
  lr_scheduler_ = std::make_unique<LRScheduler>(*optimizer_, optim, optim.total_training_steps);
  if (shards_train) {
    // ZeRO-3 averages the gradients into the shards itself and its optimizer holds only this rank's shards.
    critic_ = std::make_unique<DataParallelPPOCritic>(*module_, *optimizer_, critic_config_);
  } else {
    auto shard_group =
        optimizer_sharding_group(layout.dp, copy_size(), config_->critic.megatron.use_distributed_optimizer,
                                 fsdp.fsdp_size, "critic.model.fsdp_config.fsdp_size");
    critic_ = std::make_unique<DataParallelPPOCritic>(
        *module_, *optimizer_, critic_config_, gradient_averager(layout.dp, reduce_dtype),
        optimizer_shard(shard_group, trainable, kCriticWorkerComponent, layout.dp, reduce_dtype));
  }
  critic_->fully_sharded = fully_sharded_;  // null without ZeRO-3
  // The gradients' group holds each row once per Ulysses / context-parallel part of its sequence.
  critic_->data_parallel_group = DataParallelGroup(layout.dp, sp_size_ * cp_size_);
  critic_->world_size = world_size();
  critic_->param_dtype = resolved_precision(fsdp.param_dtype, device);
  offload_.rest(state(), optimizer_.get());
  return DataProto();
}

model::CausalLM& CriticWorker::module() {
  require_initialized("module()");
  return *module_;
}

LRScheduler& CriticWorker::lr_scheduler() {
  require_initialized("lr_scheduler()");
  return *lr_scheduler_;
}

torch::optim::Optimizer& CriticWorker::optimizer() {
  require_initialized("optimizer()");
  return *optimizer_;
}

std::vector<torch::Tensor> CriticWorker::state() const {
  return fully_sharded_ ? fully_sharded_->shards() : (*module_)->parameters();
}

DataProto CriticWorker::compute_values(const DataProto& data) {
  require_initialized("compute_values");
  OnDevice on_device(offload_, state(), nullptr);
  return DataProto::from_dict({{"values", critic_->compute_values(data)}});
}

DataProto CriticWorker::update_critic(const DataProto& data) {
  require_initialized("update_critic");
  require_gradient_sync("update_critic");
  const auto start = std::chrono::steady_clock::now();
  // The LR this update runs with (verl reads get_last_lr() before stepping the scheduler).
  const double lr = optimizer_->param_groups().at(0).options().get_lr();
  OnDevice on_device(offload_, state(), optimizer_.get());
  MetricLists metrics = critic_->update_critic(data);
  metrics["critic/lr"] = {lr};
  lr_scheduler_->step();
  DataProto out;
  out.meta_info["metrics"] = metrics_to_json(metrics);
  // The worker's own time, so a split placement can show the update overlapping the actor's (rank 0 only:
  // DataProto::concat needs equal meta values).
  if (rank() == 0) {
    out.meta_info["timing"] = {{"update_critic", seconds_since(start)}};
  }
  return out;
}

DataProto CriticWorker::save_checkpoint(const DataProto& input) {
  require_initialized("save_checkpoint");
  const std::string local_path = meta_string(input, "local_path", "save_checkpoint");
  const auto& contents = config_->critic.checkpoint.save_contents;
  const int W = world_size(), r = rank();
  // The HF folder holds the whole model: under megatron every TP rank joins the gather.
  // Under ZeRO-3 every rank joins the gather of the shards.
  std::optional<model::FullyShardedModel::Gathered> whole;
  if (fully_sharded_ && contains(contents, "hf_model")) whole.emplace(fully_sharded_.get());
  model::CausalLM hf_module = contains(contents, "hf_model") ? model::gather_full_model(*module_) : *module_;
  // LoRA: the trainable state whole in every file (the adapters gathered from the tensor-parallel slices: every
  // rank joins).
  const model::NamedTensors lora_state =
      lora_ && contains(contents, "model") ? model::value_lora_full_state(*module_) : model::NamedTensors{};
  save_rank_folder(local_path, r, context().comm.get(), [&](const fs::path& dir) {
    if (contains(contents, "model")) {
      // LoRA: the trainable state only, naming the base (critic.model.path) in the file's metadata.
      if (lora_) {
        model::save_value_lora_state(lora_state, (dir / model_file_name(W, r)).string(), fs::absolute(model_path_).string());
      } else {
        save_model_file(*module_, fully_sharded_.get(), (dir / model_file_name(W, r)).string());
      }
    }
    if (contains(contents, "optimizer")) save_optimizer_state(*optimizer_, (dir / optim_file_name(W, r)).string());
    if (contains(contents, "extra")) {
      nlohmann::json extra = {{"lr_scheduler", lr_scheduler_->state_dict()},
                              // The critic draws no random numbers (no dropout, deterministic init at load).
                              {"rng", nlohmann::json::object()}};
      write_file_atomic((dir / extra_state_file_name(W, r)).string(), extra.dump(2) + "\n");
    }
    if (r == 0) {
      std::optional<model::MergedAdapter> merged;  // LoRA: the HF value model is the merged one
      if (lora_ && contains(contents, "hf_model")) merged.emplace(hf_module);
      save_hf_folder(hf_module, dir.string(), tokenizer_path_, contains(contents, "hf_model"));
    }
  });
  VERL_LOG(Info, kCriticWorkerComponent) << "saved critic checkpoint to " << local_path;
  return DataProto();
}

DataProto CriticWorker::load_checkpoint(const DataProto& input) {
  require_initialized("load_checkpoint");
  const std::string local_path = meta_string(input, "local_path", "load_checkpoint");
  const auto& contents = config_->critic.checkpoint.load_contents;
  const int W = world_size(), r = rank();
  const fs::path dir(local_path);
  if (contains(contents, "model")) {
    check_checkpoint_rank_file(local_path, model_file_name(W, r), W);
    if (lora_) {
      model::load_value_lora_state(*module_, (dir / model_file_name(W, r)).string());
    } else {
      load_model_file(*module_, fully_sharded_.get(), (dir / model_file_name(W, r)).string());
    }
  }
  if (contains(contents, "optimizer")) {
    check_checkpoint_rank_file(local_path, optim_file_name(W, r), W);
    load_optimizer_state(*optimizer_, (dir / optim_file_name(W, r)).string());
  }
  if (contains(contents, "extra")) {
    const std::string path = (dir / extra_state_file_name(W, r)).string();
    nlohmann::json extra = load_extra_state(local_path, W, r, kCriticWorkerComponent);
    VERL_CHECK(extra.is_object() && extra.contains("lr_scheduler"), kCriticWorkerComponent, "'", path,
               "' has no \"lr_scheduler\" state");
    lr_scheduler_->load_state_dict(extra["lr_scheduler"]);
  }
  const bool del_local = input.meta_info.value("del_local_after_load", false);
  if (del_local && r == 0) {
    std::error_code ec;
    fs::remove_all(local_path, ec);
  }
  VERL_LOG(Info, kCriticWorkerComponent) << "loaded critic checkpoint from " << local_path;
  return DataProto();
}

single_controller::WorkerFactory critic_worker_factory(std::shared_ptr<const config::PPOConfig> config) {
  return [config](const single_controller::WorkerContext& context) -> std::unique_ptr<single_controller::Worker> {
    return std::make_unique<CriticWorker>(context, config);
  };
}

}  // namespace verl::workers
