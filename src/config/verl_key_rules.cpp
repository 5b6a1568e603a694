// verl 0.9.1's keys without an implementation here: the table (one place), matched by the most specific entry.
#include "verl/config/verl_key_rules.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/interpolation.h"

namespace verl::config {

namespace {

struct Entry {
  std::string pattern;  // dotted path; `*` is one segment, `moe_*` / `*_fusion` one segment by prefix / suffix; an
                        // entry covers the subtree under it
  KeyRuleKind kind;
  std::string what;
};

constexpr KeyRuleKind H = KeyRuleKind::Honoured;
constexpr KeyRuleKind N = KeyRuleKind::NoEffect;
constexpr KeyRuleKind F = KeyRuleKind::Feature;

// Feature names, shared by several keys.
constexpr const char* kVLM = "multimodal (VLM) inputs";
constexpr const char* kQAT = "quantization-aware training";
constexpr const char* kMTP = "multi-token prediction";
constexpr const char* kAgentLoop = "custom agent loops (verl.cpp runs single_turn_agent and tool_agent)";
constexpr const char* kRewardLoop = "custom reward-loop manager classes and served reward models";

// verl 0.9.1's McoreEngineConfig (actor / ref / critic `megatron` sections) and McoreOptimizerConfig keys beyond
// what ppo_config.cpp reads (tensor parallelism, the distributed optimizer, offload, Megatron's schedule).
std::vector<Entry> megatron_entries() {
  constexpr const char* kExperts =
      "expert placement (verl.cpp keeps every expert on every rank, split over the tensor-parallel ranks as a dense "
      "MLP: the same numbers)";
  constexpr const char* kDistCkpt = "Megatron's distributed-checkpoint format (verl.cpp loads model.path's HF folder)";
  constexpr const char* kRecompute =
      "Megatron's activation recompute (verl.cpp recomputes each layer when model.enable_gradient_checkpointing is "
      "true: the same numbers)";
  constexpr const char* kKernels = "Megatron's kernel choices (the same numbers)";
  constexpr const char* kPipelineLayout =
      "Megatron's uneven pipeline layouts (verl.cpp splits the layers evenly over pipeline_model_parallel_size "
      "stages: the same numbers)";
  const std::vector<Entry> engine = {
      {"expert_model_parallel_size", N, kExperts},
      {"expert_tensor_parallel_size", N, kExperts},
      {"use_dist_checkpointing", F, "loading Megatron distributed checkpoints (verl.cpp loads model.path's HF folder)"},
      {"dist_checkpointing_path", N, kDistCkpt},
      {"dist_checkpointing_prefix", N, kDistCkpt},
      {"dist_ckpt_optim_fully_reshardable", N, kDistCkpt},
      {"distrib_optim_fully_reshardable_mem_efficient", N, kDistCkpt},
      {"dynamic_context_parallel", F, "context parallelism"},
      {"max_seqlen_per_dp_cp_rank", N, "dynamic context parallelism"},
      {"entropy_from_logits_with_chunking", N, "verl's chunked entropy (verl.cpp always chunks)"},
      {"entropy_from_logits_chunk_size", N, "verl's chunked entropy (verl.cpp always chunks)"},
      {"seed", N, "Megatron's model-parallel RNG (dropout and weight init: verl.cpp loads the weights, no dropout)"},
      {"override_ddp_config", N, "Megatron's DDP buckets and overlap (the same gradients)"},
      {"override_transformer_config", F,
       "Megatron TransformerConfig fields other than kernel fusions, activation recompute, pipeline layout and MoE "
       "settings (verl.cpp builds its model from the HF config.json)"},
      {"override_transformer_config.recompute_granularity", N, kRecompute},
      {"override_transformer_config.recompute_modules", N, kRecompute},
      {"override_transformer_config.recompute_method", N, kRecompute},
      {"override_transformer_config.recompute_num_layers", N, kRecompute},
      {"override_transformer_config.distribute_saved_activations", N, kRecompute},
      {"override_transformer_config.attention_backend", N, kKernels},
      {"override_transformer_config.*_fusion", N, kKernels},
      {"override_transformer_config.cross_entropy_fusion_impl", N, kKernels},
      {"override_transformer_config.persist_layer_norm", N, kKernels},
      {"override_transformer_config.deallocate_pipeline_outputs", N, kKernels},
      {"override_transformer_config.num_layers_in_first_pipeline_stage", N, kPipelineLayout},
      {"override_transformer_config.num_layers_in_last_pipeline_stage", N, kPipelineLayout},
      {"override_transformer_config.account_for_embedding_in_pipeline_split", N, kPipelineLayout},
      {"override_transformer_config.account_for_loss_in_pipeline_split", N, kPipelineLayout},
      {"override_transformer_config.pipeline_model_parallel_layout", N, kPipelineLayout},
      {"override_transformer_config.moe_*", N,
       "Megatron's MoE kernels, token dispatch and router knobs (verl.cpp routes as transformers' Qwen2-MoE / "
       "Qwen3-MoE: softmax top-k, no load-balancing loss, as verl's config converter sets them)"},
      {"override_mcore_model_config", F, "Megatron model-spec overrides (verl.cpp builds its model from config.json)"},
      {"use_mbridge", N, "the HF <-> Megatron weight bridge (verl.cpp reads and writes HF safetensors itself)"},
      {"vanilla_mbridge", N, "the HF <-> Megatron weight bridge (verl.cpp reads and writes HF safetensors itself)"},
      {"use_remove_padding", N, "Megatron's packed batches (verl.cpp packs as model.use_remove_padding says)"},
      {"pad_bshd_to_minibatch_max", N, "verl's padding buckets"},
      {"pad_to_length", N, "verl's padding buckets"},
      {"pad_to_length_bucket", N, "verl's padding buckets"},
      {"use_megatron_fsdp", F,
       "Megatron FSDP (the megatron strategy shards optimizer state: use_distributed_optimizer)"},
      {"forward_only", N, "set by verl per role (verl.cpp's reference never trains, its actor and critic always do)"},
      {"dtype", N, "Megatron's compute dtype (verl.cpp computes in fsdp_config.mixed_precision's param_dtype)"},
      {"router_replay", F, "MoE router replay"},
      {"qat", F, kQAT},
  };
  const std::vector<Entry> optim = {
      {"weight_decay_incr_style", N,
       "verl gives Megatron's scheduler the same start and end weight decay: no style changes it"},
      {"use_checkpoint_opt_param_scheduler", F,
       "taking Megatron's schedule from the checkpoint (verl.cpp resumes the step count under the config's schedule)"},
      {"use_precision_aware_optimizer", N, "Megatron's precision-aware optimizer (with fp32 state: the same update)"},
      {"main_grads_dtype", F, "reduced-precision gradients and optimizer state (verl.cpp keeps them fp32)"},
      {"exp_avg_dtype", F, "reduced-precision gradients and optimizer state (verl.cpp keeps them fp32)"},
      {"exp_avg_sq_dtype", F, "reduced-precision gradients and optimizer state (verl.cpp keeps them fp32)"},
      {"use_layer_wise_distributed_optimizer", F, "Megatron's layer-wise distributed optimizer"},
      {"muon_*", N, "the Muon optimizer (optim.optimizer=muon is not one of verl.cpp's optimizers)"},
  };
  std::vector<Entry> out;
  for (const char* section : {"*.*.megatron.", "critic.megatron."}) {
    for (const Entry& e : engine) out.push_back({section + e.pattern, e.kind, e.what});
  }
  for (const char* section : {"*.*.optim.", "critic.optim."}) {
    for (const Entry& e : optim) out.push_back({section + e.pattern, e.kind, e.what});
  }
  out.push_back({"actor_rollout_ref.ref.megatron.use_distributed_optimizer", N, "the reference has no optimizer"});
  out.push_back({"actor_rollout_ref.ref.megatron.optimizer_offload", N, "the reference has no optimizer"});
  out.push_back({"*.*.checkpoint.mbridge_config", N, "the HF <-> Megatron weight bridge"});
  out.push_back({"critic.checkpoint.mbridge_config", N, "the HF <-> Megatron weight bridge"});
  out.push_back({"critic.nccl_timeout", N, "Ray worker NCCL timeout"});
  return out;
}

const std::vector<Entry>& ppo_entries() {
  static const std::vector<Entry> entries = {
      // data
      {"data.use_shm", N, "verl's shared-memory model copy"},
      {"data.tokenizer", N, "verl reads it nowhere either: the tokenizer is actor_rollout_ref.model.path's"},
      {"data.dataloader_num_workers", N, "PyTorch DataLoader workers"},
      {"data.filter_overlong_prompts_workers", N, "datasets.map workers"},
      {"data.image_key", F, kVLM},
      {"data.video_key", F, kVLM},
      {"data.audio_key", F, kVLM},
      {"data.image_patch_size", F, kVLM},
      {"data.return_multi_modal_inputs", N, "VLM processor (no multimodal inputs here)"},
      {"data.mm_processor_kwargs", F, kVLM},

      // models (actor / ref / critic)
      {"*.model.use_shm", N, "verl's shared-memory model copy"},
      {"*.model.trust_remote_code", N, "transformers remote code (native model classes)"},
      {"*.model.external_lib", F, "external model libraries"},
      {"*.model.enable_activation_offload", N, "FSDP activation offload"},
      {"*.model.use_liger", N, "Liger kernels"},
      {"*.model.use_fused_kernels", N, "verl's fused kernels (verl.cpp always fuses log-probs and entropy)"},
      {"*.model.fused_kernel_options", N, "verl's fused kernels"},
      {"*.model.tiled_mlp", N, "tiled MLP memory saving"},
      {"*.model.mtp", F, kMTP},
      {"*.model.lora", N, "the Megatron engine's LoRA settings (read with model.lora.rank > 0)"},
      {"*.model.lora.rank", F,
       "the Megatron engine's LoRA section (verl.cpp's LoRA takes model.lora_rank, lora_alpha and target_modules, "
       "PEFT's module names, under both strategies)"},
      {"critic.model.custom_chat_template", N, "the critic's chat template (the actor's renders the prompts)"},

      // actor / ref / critic: optimizer
      {"*.*.optim.clip_grad", H, "grad_clip"},
      {"*.optim.clip_grad", H, "grad_clip"},

      // FSDP engine settings (actor, ref, critic.fsdp)
      {"*.*.fsdp_config", N, "PyTorch FSDP"},
      {"critic.fsdp", N, "PyTorch FSDP"},
      {"critic.fsdp.param_offload", H, "critic.model.fsdp_config.param_offload"},
      {"critic.fsdp.optimizer_offload", H, "critic.model.fsdp_config.optimizer_offload"},
      {"critic.fsdp.reshard_after_forward", H, "critic.model.fsdp_config.reshard_after_forward"},
      {"critic.fsdp.fsdp_size", H, "critic.model.fsdp_config.fsdp_size"},
      {"critic.fsdp.model_dtype", H, "critic.model.fsdp_config.model_dtype"},
      {"*.*.fsdp_config.qat", F, kQAT},
      {"critic.fsdp.qat", F, kQAT},
      {"*.*.fsdp_config.turbo_config", N, "fsdp_turbo"},
      {"critic.fsdp.turbo_config", N, "fsdp_turbo"},

      // actor / ref / critic
      {"*.*.use_torch_compile", N, "torch.compile"},
      {"*.*.entropy_from_logits_with_chunking", N, "verl's chunked entropy (verl.cpp always chunks)"},
      {"*.*.entropy_from_logits_chunk_size", N, "verl's chunked entropy (verl.cpp always chunks)"},
      {"*.*.entropy_checkpointing", N, "verl's entropy recomputation"},
      {"*.*.pad_to_length", N, "verl's padding buckets"},
      {"*.*.rollout_n", H, "actor_rollout_ref.rollout.n"},
      {"critic.rollout_n", H, "actor_rollout_ref.rollout.n"},
      {"actor_rollout_ref.ref.strategy", H, "actor_rollout_ref.actor.strategy"},
      {"actor_rollout_ref.actor.use_remove_padding", H, "actor_rollout_ref.model.use_remove_padding"},
      {"actor_rollout_ref.actor.freeze_vision_tower", F, kVLM},
      {"actor_rollout_ref.actor.use_prefix_grouper", N, "verl's shared-prefix attention"},
      {"actor_rollout_ref.actor.use_fused_kernels", N, "verl's fused kernels"},
      {"actor_rollout_ref.actor.qat", F, kQAT},
      {"*.*.checkpoint.async_save", N, "asynchronous checkpoint writes"},
      {"*.checkpoint.async_save", N, "asynchronous checkpoint writes"},
      {"actor_rollout_ref.actor.checkpoint.strict", N, "strict loading (verl.cpp always loads strictly)"},
      {"*.*.profiler", N, "profilers"},
      {"critic.profiler", N, "profilers"},
      {"global_profiler", N, "profilers"},
      {"actor_rollout_ref.nccl_timeout", N, "Ray worker NCCL timeout"},

      // rollout engine (vLLM / SGLang arguments and verl's server plumbing)
      {"actor_rollout_ref.rollout", N, "vLLM / SGLang"},
      {"actor_rollout_ref.rollout.data_parallel_size", F, "rollout data parallelism inside one engine"},
      {"actor_rollout_ref.rollout.expert_parallel_size", F, "expert parallelism"},
      {"actor_rollout_ref.rollout.pipeline_model_parallel_size", F, "pipeline-parallel rollout"},
      // verl reads it nowhere: only its SGLang SPMD rollout did (cancel the requests left once (1 - rate) of them had
      // finished, pad them as empty responses), and that rollout was retired (verl #4422); the agent loop, which
      // verl.cpp's rollout follows, never aborts a request.
      {"actor_rollout_ref.rollout.over_sample_rate", N, "over-sampling (verl's retired SGLang SPMD rollout)"},
      {"actor_rollout_ref.rollout.enable_rollout_routing_replay", F, "MoE router replay"},
      {"actor_rollout_ref.rollout.quantization", F, "quantized (FP8) rollout"},
      {"actor_rollout_ref.rollout.quantization_config_file", F, "quantized (FP8) rollout"},
      {"actor_rollout_ref.rollout.mtp", F, kMTP},
      {"actor_rollout_ref.rollout.qat", F, kQAT},
      {"actor_rollout_ref.rollout.disaggregation.enabled", F, "prefill / decode disaggregation"},
      {"actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts", N,
       "verl 0.9.1 declares it and reads it nowhere (the agent loop repeats a prompt by rollout.n)"},
      {"actor_rollout_ref.rollout.agent.agent_loop_config_path", F, kAgentLoop},
      {"actor_rollout_ref.rollout.agent.custom_async_server", F, kAgentLoop},
      {"actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module", F, "custom weight-sync backends"},

      // reward: the legacy section's engine keys, verl 0.9.1's reward section
      {"reward_model.enable_resource_pool", N, "Ray resource pools"},
      {"reward_model.n_gpus_per_node", N, "Ray resource pools"},
      {"reward_model.nnodes", N, "Ray resource pools"},
      {"reward_model.reward_loop_source", F, kRewardLoop},
      {"reward_model.reward_loop_module_path", F, kRewardLoop},
      {"reward_model.reward_loop_class_name", F, kRewardLoop},
      {"reward_model.model.external_lib", F, "external model libraries"},
      {"reward_model.model.trust_remote_code", N, "transformers remote code (native model classes)"},
      {"reward_model.rollout", N, "the reward model's vLLM / SGLang server (verl.cpp runs it natively)"},
      {"reward.custom_reward_function.path", H, "custom_reward_function.path"},
      {"reward.custom_reward_function.name", H, "custom_reward_function.name"},
      {"reward.reward_manager.name", H, "reward_model.reward_manager"},
      {"reward.reward_manager.source", F, kRewardLoop},
      {"reward.reward_manager.module", F, kRewardLoop},
      {"reward.reward_model.rollout", N, "the reward model's vLLM / SGLang server"},
      {"reward.reward_model.enable_resource_pool", N, "Ray resource pools"},
      {"reward.reward_model.n_gpus_per_node", N, "Ray resource pools"},
      {"reward.reward_model.nnodes", N, "Ray resource pools"},

      // trainer and verl's other services
      {"trainer.esi_redundant_time", N, "elastic server instance checkpointing"},
      {"trainer.ray_wait_register_center_timeout", N, "Ray"},
      {"trainer.default_hdfs_dir", F, "HDFS checkpoint copies"},
      {"trainer.use_v1", N, "verl's trainer generations (verl.cpp has one)"},
      {"trainer.v1", F, "verl's asynchronous v1 trainer modes"},
      {"distillation.n_gpus_per_node", N,
       "the teachers' resource pool (verl.cpp runs each teacher on the actor's ranks)"},
      {"distillation.nnodes", N, "the teachers' resource pool (verl.cpp runs each teacher on the actor's ranks)"},
      {"distillation.teacher_models.*.num_replicas", N, "the teachers' server replicas"},
      // verl's dataclass fields outside its yaml (given with '+'): memory against time, the same numbers.
      {"distillation.distillation_loss.use_chunked_topk", N,
       "verl's chunked top-k log-probs (memory only: verl.cpp gathers the top-k from the whole logits)"},
      {"distillation.distillation_loss.chunked_topk_chunk_size", N, "verl's chunked top-k log-probs (memory only)"},
      {"distillation.teacher_models.*.inference", N, "the teacher's vLLM / SGLang server (verl.cpp runs it natively)"},
      {"transfer_queue", F, "TransferQueue"},
      {"skip.rollout_tq", F, "rollout dumps of verl's TransferQueue trainer (skip.rollout is implemented)"},
      {"skip.async_rollout", F, "rollout dumps of verl's fully async trainer (skip.rollout is implemented)"},
      {"ray_kwargs", N, "Ray"},
  };
  return entries;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> all = ppo_entries();
    for (Entry& e : megatron_entries()) all.push_back(std::move(e));
    return all;
  }();
  return entries;
}

// verl 0.9.1's sft_trainer (configs/sft_trainer_engine.yaml). The data order, batching and loss keys are read by
// src/config/sft_engine_config.cpp; these are the rest.
const std::vector<Entry>& sft_trainer_table() {
  static const std::vector<Entry> entries = {
      {"data.balance_dp_token", N,
       "verl 0.9.1's sft_trainer reads it nowhere (its loss is over the whole batch's tokens)"},
      {"data.custom_cls", F, "custom dataset classes (verl.cpp reads parquet / jsonl / json)"},
      {"data.use_shm", N, "verl's shared-memory model copy"},
      {"data.num_workers", N, "PyTorch DataLoader workers"},
      {"model.use_shm", N, "verl's shared-memory model copy"},
      {"model.trust_remote_code", N, "transformers remote code (native model classes)"},
      {"model.external_lib", F, "external model libraries"},
      {"model.enable_activation_offload", N, "FSDP activation offload"},
      {"model.use_liger", N, "Liger kernels"},
      {"model.use_fused_kernels", N, "verl's fused kernels (verl.cpp fuses the packed loss's log-probs)"},
      {"model.fused_kernel_options", N, "verl's fused kernels"},
      {"model.tiled_mlp", N, "tiled MLP memory saving"},
      {"model.mtp", F, kMTP},
      {"model.lora", N, "the megatron engine's LoRA section (the fsdp engine reads model.lora_rank, lora_alpha, ...)"},
      {"engine", N, "PyTorch FSDP (verl.cpp's data-parallel ranks each hold the whole model)"},
      {"engine.qat", F, kQAT},
      {"engine.turbo_config", N, "fsdp_turbo"},
      {"profiler", N, "profilers"},
      {"checkpoint", N, "verl's checkpoint contents (verl.cpp's SFT checkpoints always hold model, optimizer, extra)"},
      {"trainer.default_hdfs_dir", F, "HDFS checkpoint copies"},
      {"trainer.balance_batch", N, "verl's sft_trainer reads it nowhere"},
      {"trainer.nnodes", N, "torchrun's placement (under mpirun, -np sets the ranks)"},
      {"trainer.n_gpus_per_node", N, "torchrun's placement (under mpirun, -np sets the ranks)"},
      {"trainer.profile_interval", N, "profilers"},
  };
  return entries;
}

// One segment: `*` any, `moe_*` by prefix, `*_fusion` by suffix, else equal.
bool segment_matches(const std::string& pattern, const std::string& segment) {
  if (pattern == "*") return true;
  if (pattern.size() > 1 && pattern.back() == '*') return starts_with(segment, pattern.substr(0, pattern.size() - 1));
  if (pattern.size() > 1 && pattern.front() == '*') return ends_with(segment, pattern.substr(1));
  return pattern == segment;
}

// Segments of `pattern` matched against the start of `path`; -1 when it does not match, else its length.
int match_length(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  if (pattern.size() > path.size()) return -1;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (!segment_matches(pattern[i], path[i])) return -1;
  }
  return static_cast<int>(pattern.size());
}

}  // namespace

std::optional<KeyRule> verl_key_rule(const std::string& path, KeyRuleTable which) {
  const std::vector<std::string> parts = split(path, '.');
  const Entry* best = nullptr;
  int best_length = -1;
  int best_wildcards = 0;
  for (const Entry& entry : which == KeyRuleTable::SFTTrainer ? sft_trainer_table() : table()) {
    const std::vector<std::string> pattern = split(entry.pattern, '.');
    const int length = match_length(pattern, parts);
    int wildcards = 0;
    for (const auto& part : pattern) wildcards += part.find('*') != std::string::npos;
    // The longest pattern wins; between equal lengths, the one with fewer wildcards.
    if (length > best_length || (length == best_length && length >= 0 && wildcards < best_wildcards)) {
      best = &entry;
      best_length = length;
      best_wildcards = wildcards;
    }
  }
  if (best == nullptr || best_length < 0) return std::nullopt;
  return KeyRule{best->kind, best->what};
}

namespace {

// What the default gives `path` in this run: the default value, or, when the default refers to other keys
// (${oc.select:trainer.n_gpus_per_node,8}), that reference resolved against the run's own values.
// A key under an interpolated map (rollout.mtp: ${oc.select:actor_rollout_ref.model.mtp, null}) takes the reference
// of its closest ancestor that the defaults hold.
std::optional<Node> default_value(const Node& resolved, const Node& defaults, const std::string& path) {
  std::string holder = path;
  const Node* fallback = find_path(defaults, holder);
  while (fallback == nullptr) {
    const size_t dot = holder.rfind('.');
    if (dot == std::string::npos) return std::nullopt;
    holder = holder.substr(0, dot);
    fallback = find_path(defaults, holder);
    if (fallback != nullptr && !fallback->has_interpolation()) return std::nullopt;  // a key the run added
  }
  if (!fallback->has_interpolation()) return *fallback;
  Node tree = resolved;
  set_existing_path(tree, holder, *fallback, "the resolved config");
  const Node resolved_tree = resolve_interpolations(tree);
  const Node* value = find_path(resolved_tree, path);
  return value ? std::optional<Node>(*value) : std::nullopt;
}

}  // namespace

std::vector<std::string> accept_verl_keys(ConfigReader& in, const Node& resolved, const Node& defaults,
                                          KeyRuleTable which) {
  std::vector<std::string> no_effect;
  for (const std::string& path : in.unread_leaves()) {
    const std::optional<KeyRule> rule = verl_key_rule(path, which);
    if (!rule) continue;  // check_all_read names it
    in.mark_read(path);
    if (rule->kind == KeyRuleKind::Honoured) continue;
    const Node* value = find_path(resolved, path);
    const std::optional<Node> expected = default_value(resolved, defaults, path);
    const Node* fallback = expected ? &*expected : nullptr;
    if (value == nullptr || (fallback != nullptr && *value == *fallback)) continue;
    if (rule->kind == KeyRuleKind::Feature) {
      VERL_FAIL("config", "config key '", path, "' is '", value->to_text(), "': ", rule->what,
                " is not implemented in verl.cpp (only the default",
                fallback ? str_cat(" '", fallback->to_text(), "'") : std::string(), " is accepted)");
    }
    no_effect.push_back(str_cat(path, "=", value->to_text()));
  }
  return no_effect;
}

}  // namespace verl::config
