// Typed sections of the PPO trainer config, one struct per verl section, built once at startup from
// the resolved tree (`parse_ppo_config`). Field names are verl's key names. Enumerated values and
// ranges are checked here; checks that need the world size (batch divisibility) belong to the trainer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/config/config_node.h"
#include "verl/model/hf_config.h"

namespace verl::config {

struct DataConfig {
  // As written in the config (a string or a list there), `~` not yet expanded: data::data_files_from_config.
  std::vector<std::string> train_files;
  std::vector<std::string> val_files;
  std::string prompt_key;
  std::string reward_fn_key;
  int64_t max_prompt_length = 0;
  int64_t max_response_length = 0;
  int64_t train_batch_size = 0;
  std::optional<int64_t> gen_batch_size;  // prompts per dataloader batch (null: train_batch_size), DAPO's knob
  std::optional<int64_t> val_batch_size;
  bool return_raw_input_ids = false;
  bool return_raw_chat = true;
  // The tools (by default the rollout's multi_turn.tool_config_path / function_tool_path) whose schemas the
  // overlong-prompt filter renders with each prompt, as verl's RLHFDataset does.
  std::optional<std::string> tool_config_path;
  std::optional<std::string> function_tool_path;
  bool return_full_prompt = false;
  bool shuffle = true;
  std::optional<int64_t> seed;
  bool validation_shuffle = false;
  bool filter_overlong_prompts = false;
  std::string truncation;
  int64_t train_max_samples = -1;
  int64_t val_max_samples = -1;
  Node apply_chat_template_kwargs;  // free-form map passed to the chat template
  double chat_template_timeout = 60;  // verl.cpp's own: seconds one chat-template rendering may take (0: none)
  // data.custom_cls: a Python dataset class (data/custom_dataset.h) instead of reading the files here.
  std::optional<std::string> custom_cls_path;
  std::optional<std::string> custom_cls_name;
  double custom_cls_timeout = 600;  // verl.cpp's own: seconds the class may take to load each dataset (0: none)
  bool trust_remote_code = false;   // for the tokenizer a custom class gets (transformers' AutoTokenizer)
};

// LoRA (model/lora.h), verl's model keys: lora_rank 0 = off; scale lora_alpha / lora_rank.
struct LoraConfig {
  int64_t lora_rank = 0;
  double lora_alpha = 16;
  // "all-linear" (every decoder-layer projection), or HF module names; a string other than all-linear is one
  // regular expression over the full module name (PEFT's meaning of a target_modules string): *_regex.
  std::vector<std::string> target_modules = {"all-linear"};
  bool target_modules_regex = false;
  std::vector<std::string> exclude_modules;
  bool exclude_modules_regex = false;
  std::optional<std::string> lora_adapter_path;  // a PEFT adapter folder to start from
  bool enabled() const { return lora_rank > 0; }
};

class ConfigReader;
// The LoRA keys under `model_path` (e.g. "actor_rollout_ref.model"); with_adapter_path: also lora_adapter_path.
LoraConfig read_lora_config(ConfigReader& in, const std::string& model_path, bool with_adapter_path);

struct ModelConfig {
  std::string path;
  // verl's HFModelConfig: the tokenizer and config.json from other folders than the weights' (empty: `path`).
  std::string tokenizer_path;
  std::string hf_config_path;
  std::optional<std::string> custom_chat_template;
  bool enable_gradient_checkpointing = true;
  bool use_remove_padding = true;  // the actor's and the reference's log-prob passes (model::CausalLMImpl)
  LoraConfig lora;
  // model.override_config: applied to config.json for the actor, the reference and the rollout (model/hf_config.h).
  model::HFConfigOverrides override_config;

  const std::string& tokenizer_dir() const { return tokenizer_path.empty() ? path : tokenizer_path; }
  const std::string& hf_config_dir() const { return hf_config_path.empty() ? path : hf_config_path; }
};

struct OptimConfig {
  double lr = 0;
  double weight_decay = 0;
  std::vector<double> betas;  // (beta1, beta2)
  int64_t lr_warmup_steps = -1;
  double lr_warmup_steps_ratio = 0;
  std::string lr_scheduler_type;
  double min_lr_ratio = 0;
  double num_cycles = 0.5;
  int64_t total_training_steps = -1;
  // false: the cosine schedule counts steps from 1 (verl's zero_indexed_step, torchtitan's convention): the LR at
  // update k is the zero-indexed schedule's at k + 1. The constant schedule ignores it, as verl's does.
  bool zero_indexed_step = true;
  // strategy=megatron: Megatron's OptimizerParamScheduler, as verl's get_megatron_optimizer_param_scheduler builds
  // it, replaces the schedule above (workers/optimizer.h's scheduled_lr).
  bool megatron_schedule = false;
  double lr_warmup_init = 0;                // the warmup's first LR
  std::optional<int64_t> lr_decay_steps;    // null: the training steps
  std::string lr_decay_style = "constant";  // constant | linear | cosine | inverse-square-root | WSD
  double min_lr = 0;
  std::string lr_wsd_decay_style = "exponential";  // WSD's annealing: exponential | linear | cosine | minus_sqrt
  std::optional<int64_t> lr_wsd_decay_steps;       // WSD: the annealing steps at the end of the decay
  // optim.optimizer: the torch.optim class verl builds (optimizer_impl torch.optim): AdamW, Adam, SGD, RMSprop or
  // Adagrad, with verl's arguments (lr, weight_decay; betas for the Adam family) and those of
  // override_optimizer_config; a field below counts only for the classes that take it (workers/optimizer.h).
  std::string optimizer = "AdamW";
  double eps = 1e-8;                     // AdamW, Adam, RMSprop; Adagrad (its default 1e-10)
  bool amsgrad = false;                  // AdamW, Adam
  double momentum = 0;                   // SGD, RMSprop
  double dampening = 0;                  // SGD
  bool nesterov = false;                 // SGD
  double alpha = 0.99;                   // RMSprop
  bool centered = false;                 // RMSprop
  double lr_decay = 0;                   // Adagrad
  double initial_accumulator_value = 0;  // Adagrad
};

struct CheckpointContentsConfig {
  std::vector<std::string> save_contents;
  std::vector<std::string> load_contents;
};

// verl's fsdp_config (actor_rollout_ref.actor / .ref, critic.model). verl.cpp keeps parameters and optimizer
// state in host memory, in fp32; the fsdp strategy shards optimizer state over groups of fsdp_size ranks and
// replicates across groups (verl's HSDP); over the whole group it shards the gradients too (ZeRO-2); with
// reshard_after_forward the parameters as well (ZeRO-3, model/fully_sharded_model.h).
struct FSDPConfig {
  bool param_offload = false;      // CPU: parameters already live in host memory
  bool optimizer_offload = false;  // CPU: so does the optimizer state
  bool reshard_after_forward = false;  // ZeRO-3: parameters sharded, gathered per layer
  int64_t fsdp_size = -1;          // ranks per sharding group; -1: the whole worker group
  std::string model_dtype = "fp32";
  // mixed_precision.param_dtype (verl: bf16 by default under FSDP): the dtype forwards compute in, by autocast
  // over fp32 master weights (model/mixed_precision.h). Unset: bf16 on a CUDA device, fp32 on the CPU.
  std::optional<std::string> param_dtype;
  // mixed_precision.reduce_dtype (verl: fp32): the dtype gradients are all-reduced / reduce-scattered in across the
  // data-parallel ranks (FSDP's MixedPrecision.reduce_dtype), cast back to fp32 after; "bf16", "fp16" or "fp32".
  // buffer_dtype accepts fp32 only (verl.cpp's models hold no buffers: the rotary tables are computed in fp32).
  std::string reduce_dtype = "fp32";
  // seed: LibTorch's global CPU generator in the actor's worker, seeded before the model loads (verl seeds torch
  // with it under full_determinism; verl.cpp's CPU runs are always reproducible, and the checkpoint's rng.cpu
  // must not depend on the process that started the run).
  int64_t seed = 42;
};

// verl's megatron config (actor_rollout_ref.actor / .ref, critic: ppo_megatron_trainer.yaml's `megatron`), for
// strategy=megatron: tensor, context and pipeline parallelism (and Megatron's virtual pipeline stages) inside a
// worker group of DP x PP x CP x TP ranks. Megatron's sequence parallelism is a config error: its key accepts only
// the "off" value.
struct MegatronConfig {
  int64_t tensor_model_parallel_size = 1;
  int64_t pipeline_model_parallel_size = 1;          // stages of the layers (model/pipeline_parallel_model.h)
  int64_t virtual_pipeline_model_parallel_size = 1;  // runs of layers per stage (null: 1)
  int64_t context_parallel_size = 1;                 // ranks splitting each sequence (parallel/context_parallel.h)
  // Megatron's sequence parallelism (model::set_megatron_sequence_parallel); false with tensor_model_parallel_size 1
  // whatever the key says, as verl's McoreEngineConfig corrects it.
  bool sequence_parallel = true;
  bool use_distributed_optimizer = true;  // ZeRO-2 over the data-parallel ranks (each TP slice sharded)
  bool param_offload = false;             // CPU: no-ops, as fsdp_config's
  bool grad_offload = false;
  bool optimizer_offload = false;
};

// algorithm.rollout_correction (verl's RolloutCorrectionConfig): IS weights / rejection from rollout_log_probs.
struct RolloutCorrectionConfig {
  std::optional<std::string> rollout_is;      // null | token | sequence
  std::string rollout_is_threshold = "2.0";   // "U" (TIS) or "L_U" (IcePop), a number or a string in YAML
  bool rollout_is_batch_normalize = false;
  std::optional<std::string> rollout_rs;      // null or comma-separated token_k1 ... seq_max_k3
  std::optional<std::string> rollout_rs_threshold;
  bool bypass_mode = false;                   // old_log_probs = rollout_log_probs, loss_mode = bypass_mode
  std::string loss_type = "ppo_clip";         // bypass mode's loss: ppo_clip | reinforce
};

// distillation.distillation_loss (verl 0.9.1's DistillationLossConfig): how the teacher's log-probs of the student's
// own tokens become a loss (trainer/distillation.h).
struct DistillationLossConfig {
  std::string loss_mode = "k3";  // a single-sample KL estimator: kl|k1, abs, mse|k2, low_var_kl|k3; forward_kl_topk
  int64_t topk = 32;             // forward_kl_topk: the teacher's k most likely tokens at each position
  std::optional<double> log_prob_min_clamp;  // forward_kl_topk: both sides' top-k log-probs clamped below
  bool use_task_rewards = true;  // keep the PPO / GRPO loss; add the distillation loss times its coefficient
  double distillation_loss_coef = 1.0;
  std::optional<double> loss_max_clamp;  // per-token loss clamped to [-c, c]
  bool use_policy_gradient = false;      // the negated loss is the advantage of a vanilla PPO loss (k1 recommended)
  std::string policy_loss_mode = "vanilla";
  double clip_ratio = 0.2;
  double clip_ratio_low = 0.2;
  double clip_ratio_high = 0.2;
};

// One of distillation.teacher_models (verl's DistillationTeacherModelConfig).
struct DistillationTeacherConfig {
  std::string entry;       // the YAML entry's name (teacher_model, ...)
  std::string key;         // the routing value (distillation.teacher_key's column); "default" for a single teacher
  std::string model_path;  // an HF model folder sharing the student's vocabulary
  int64_t max_num_batched_tokens = 8192;  // inference.max_num_batched_tokens: tokens per teacher forward
};

struct DistillationConfig {
  bool enabled = false;
  std::string teacher_key = "data_source";  // the non-tensor column that routes rows between several teachers
  DistillationLossConfig loss;
  std::vector<DistillationTeacherConfig> teachers;  // one routes every row; several route by teacher_key
};

struct ActorConfig {
  std::string strategy;
  int64_t ppo_mini_batch_size = 0;
  std::optional<int64_t> ppo_micro_batch_size_per_gpu;
  bool use_dynamic_bsz = false;
  int64_t ppo_max_token_len_per_gpu = 0;
  double clip_ratio = 0;
  double clip_ratio_low = 0;
  double clip_ratio_high = 0;
  double clip_ratio_c = 0;
  std::string policy_loss_mode;  // policy_loss.loss_mode
  double clip_cov_ratio = 0.0002;  // policy_loss.clip_cov_ratio / clip_cov_lb / clip_cov_ub (clip_cov)
  double clip_cov_lb = 1.0;
  double clip_cov_ub = 5.0;
  double kl_cov_ratio = 0.0002;    // policy_loss.kl_cov_ratio / ppo_kl_coef (kl_cov)
  double ppo_kl_coef = 0.1;
  std::optional<double> dro_beta;  // policy_loss.dro_beta (dro: required, > 0)
  double tau_pos = 1.0;            // tau_pos / tau_neg (sapo's gate temperatures)
  double tau_neg = 1.05;
  bool calculate_sum_pi_squared = false;  // compute_log_prob also returns sum_pi_squared (optimal token baselines)
  // verl's apply_bypass_mode: with algorithm.rollout_correction.bypass_mode=true the config layer sets
  // policy_loss_mode = bypass_mode and copies the rollout correction here (verl's policy_loss.rollout_correction).
  std::optional<RolloutCorrectionConfig> rollout_correction;
  // Set when distillation.enabled: update_policy adds the distillation loss (needs teacher_logprobs).
  std::optional<DistillationLossConfig> distillation;
  std::string loss_agg_mode;
  std::optional<double> loss_scale_factor;
  double entropy_coeff = 0;
  bool calculate_entropy = false;
  bool use_kl_loss = false;
  double kl_loss_coef = 0;
  std::string kl_loss_type;
  int64_t ppo_epochs = 1;
  bool shuffle = false;
  int64_t data_loader_seed = 42;
  double grad_clip = 1.0;
  OptimConfig optim;
  FSDPConfig fsdp_config;
  MegatronConfig megatron;
  CheckpointContentsConfig checkpoint;
  // Ulysses sequence-parallel ranks per data-parallel rank (verl's fsdp_config.ulysses_sequence_parallel_size,
  // or the deprecated actor-level key when > 1): the sequence is split across them (parallel/ulysses.h).
  int64_t ulysses_sequence_parallel_size = 1;
  // Tensor-parallel ranks per pipeline stage: megatron's tensor_model_parallel_size, 1 under fsdp.
  int64_t tensor_parallel_size() const { return strategy == "megatron" ? megatron.tensor_model_parallel_size : 1; }
  // Pipeline stages per model copy: megatron's pipeline_model_parallel_size, 1 under fsdp.
  int64_t pipeline_parallel_size() const { return strategy == "megatron" ? megatron.pipeline_model_parallel_size : 1; }
  // Ranks splitting each sequence: megatron's context_parallel_size, 1 under fsdp (Ulysses has its own key).
  int64_t context_parallel_size() const { return strategy == "megatron" ? megatron.context_parallel_size : 1; }
  // The ranks holding one model copy (TP x PP x CP), which get the same rows.
  int64_t model_parallel_size() const {
    return tensor_parallel_size() * pipeline_parallel_size() * context_parallel_size();
  }
};

struct RefConfig {
  int64_t ulysses_sequence_parallel_size = 1;  // as the actor's, for the reference's log-prob pass
  FSDPConfig fsdp_config;
  MegatronConfig megatron;
  std::optional<int64_t> log_prob_micro_batch_size_per_gpu;
  bool log_prob_use_dynamic_bsz = false;
  int64_t log_prob_max_token_len_per_gpu = 0;
};

struct SamplingConfig {
  double temperature = 1.0;
  int64_t top_k = -1;  // -1: off
  double top_p = 1.0;
  int64_t n = 1;
  bool do_sample = true;
};

// actor_rollout_ref.rollout.multi_turn (verl's MultiTurnConfig) and the agent-loop keys that apply to it
// (agent/tool_agent_loop.h).
struct MultiTurnConfig {
  bool enable = false;
  std::optional<int64_t> max_assistant_turns;  // null: no limit but the response length
  std::optional<int64_t> max_user_turns;
  int64_t max_parallel_calls = 1;
  int64_t max_tool_response_length = 256;        // characters of the tool's text
  std::string tool_response_truncate_side = "middle";  // left | middle | right
  std::optional<std::string> tool_config_path;
  std::optional<std::string> function_tool_path;       // a Python file of verl's @function_tool functions
  std::optional<std::string> interaction_config_path;  // verl <= 0.6's key (interactions), kept here
  bool use_inference_chat_template = false;
  std::string tokenization_sanity_check_mode = "strict";  // strict | ignore_strippable | disable
  std::string format = "hermes";
  double tool_timeout = 60;  // verl.cpp's own: seconds one tool call may take (<= 0: no limit)
};

// actor_rollout_ref.rollout.trace (verl's TraceConfig and RolloutTraceConfig; agent/rollout_trace.h).
struct RolloutTraceConfig {
  std::optional<std::string> backend;  // null (off) or "mlflow"
  std::string project_name;            // the mlflow experiment (default: trainer.project_name)
  std::string experiment_name;         // the experiment_name trace tag (default: trainer.experiment_name)
  bool token2text = false;             // ToolAgentLoop.run's outputs also as text (prompt_text, response_text)
  std::optional<int64_t> max_samples_per_step_per_worker;  // null: every sample; else that many distinct ones
};

struct RolloutConfig {
  std::string name;
  // The share of a CUDA device's memory the rollout may fill (weights, activations and KV cache, as vLLM's);
  // a batch whose KV cache does not fit is generated in passes of as many prompts as fit. No effect on the CPU.
  double gpu_memory_utilization = 0.5;
  int64_t tensor_model_parallel_size = 1;  // the actor's under megatron (it generates on the actor's slices)
  SamplingConfig sampling;     // temperature, top_k, top_p, n, do_sample
  int64_t prompt_length = 0;
  int64_t response_length = 0;
  bool ignore_eos = false;
  bool calculate_log_probs = false;
  int64_t seed = 0;  // sampling seed (+ rank per worker)
  // rollout.dtype (verl: bfloat16): the weights and KV cache generation runs in. Unset: bf16 on a CUDA device,
  // fp32 on the CPU. Different from the actor's fp32: the actor's parameters hold copies in this dtype for the
  // generation only (model::ScopedParameterCast).
  std::optional<std::string> dtype;
  std::optional<int64_t> log_prob_micro_batch_size_per_gpu;
  bool log_prob_use_dynamic_bsz = false;
  int64_t log_prob_max_token_len_per_gpu = 0;
  SamplingConfig val_kwargs;
  // vLLM's engine arguments where the native engine has the same concept:
  int64_t max_num_seqs = 256;              // rows (prompts x n) decoded at once; more prompts generate in passes
  std::optional<int64_t> max_model_len;    // prompt_length + response_length must fit (and the model's positions)
  bool enforce_eager = false;              // true: no CUDA graphs for the decode step
  bool free_cache_engine = true;           // the KV cache lives only inside a generate call (false: no effect)
  MultiTurnConfig multi_turn;
  RolloutTraceConfig trace;
};

struct ActorRolloutRefConfig {
  bool hybrid_engine = true;
  ModelConfig model;
  ActorConfig actor;
  RefConfig ref;
  RolloutConfig rollout;
};

struct CriticModelConfig {
  std::string path;
  std::string tokenizer_path;  // the tokenizer files its HF export copies (default: the actor's model path)
  std::string hf_config_path;  // config.json from this folder (empty: `path`)
  bool enable_gradient_checkpointing = true;
  bool use_remove_padding = true;            // the value passes (model::CausalLMImpl)
  model::HFConfigOverrides override_config;  // critic.model.override_config
  LoraConfig lora;
  FSDPConfig fsdp_config;

  const std::string& hf_config_dir() const { return hf_config_path.empty() ? path : hf_config_path; }
};

struct CriticConfig {
  std::optional<bool> enable;
  std::string strategy;
  OptimConfig optim;
  CriticModelConfig model;
  MegatronConfig megatron;
  int64_t ppo_mini_batch_size = 0;
  std::optional<int64_t> ppo_micro_batch_size_per_gpu;
  std::optional<int64_t> forward_micro_batch_size_per_gpu;
  bool use_dynamic_bsz = false;
  int64_t ppo_max_token_len_per_gpu = 0;
  int64_t forward_max_token_len_per_gpu = 0;
  int64_t ppo_epochs = 1;
  bool shuffle = false;
  int64_t data_loader_seed = 42;
  double grad_clip = 1.0;
  double cliprange_value = 0.5;
  std::string loss_agg_mode;
  std::optional<double> loss_scale_factor;  // seq-mean-token-sum-norm's divisor (null: the response length)
  CheckpointContentsConfig checkpoint;
  int64_t ulysses_sequence_parallel_size = 1;  // as the actor's (critic.fsdp.* or the deprecated critic-level key)
  int64_t tensor_parallel_size() const { return strategy == "megatron" ? megatron.tensor_model_parallel_size : 1; }
  int64_t pipeline_parallel_size() const { return strategy == "megatron" ? megatron.pipeline_model_parallel_size : 1; }
  int64_t context_parallel_size() const { return strategy == "megatron" ? megatron.context_parallel_size : 1; }
  int64_t model_parallel_size() const {
    return tensor_parallel_size() * pipeline_parallel_size() * context_parallel_size();
  }
};

// verl 0.9.1's RateLimitedRewardManager (reward_manager=rate_limited) for reward functions that call an API: at most
// max_concurrent calls at once, max_rpm requests and max_tpm tokens (estimated_tokens_per_request each) a minute,
// timeout seconds per call (a call past it, or one that raises, scores 0).
struct RewardRateLimits {
  int64_t max_concurrent = 1;
  std::optional<double> max_rpm;
  std::optional<double> max_tpm;
  int64_t estimated_tokens_per_request = 2000;
  double timeout = 300;
};

// reward.sandbox_fusion (or verl's legacy top-level sandbox_fusion section): the SandboxFusion code-execution service
// that scores the code data sources when url is set (reward/scorers/sandbox_fusion.h).
struct SandboxFusionConfig {
  std::optional<std::string> url;  // the service's run_code endpoint, e.g. http://localhost:8080/run_code
  int64_t max_concurrent = 64;     // requests in flight at once, over all rows
  int64_t memory_limit_mb = 1024;  // each test's memory limit, sent with the request
};

struct RewardModelConfig {
  bool enable = false;
  std::string strategy;
  std::optional<std::string> input_tokenizer;  // model.input_tokenizer
  std::string path;                            // model.path
  std::optional<int64_t> micro_batch_size_per_gpu;
  std::optional<int64_t> max_length;
  bool use_dynamic_bsz = false;
  int64_t forward_max_token_len_per_gpu = 0;
  std::string reward_manager;
  Node reward_kwargs;  // free-form map passed to the reward manager (dapo: max_resp_len, overlong_buffer_cfg)
  RewardRateLimits rate_limits;  // the rate_limited manager's budget (verl 0.9.1: reward.max_concurrent, ...)
  int64_t num_workers = 8;       // reward.num_workers: the remote manager's worker processes
  SandboxFusionConfig sandbox_fusion;
};

struct CustomRewardFunctionConfig {
  std::optional<std::string> path;
  std::string name;
  Node reward_kwargs;                // free-form map: extra keyword arguments of the function
  std::string on_error = "raise";    // verl.cpp extension: raise | zero
  double timeout = 300;              // verl.cpp extension: seconds per call of the function; 0: no limit
};

struct KLControlConfig {
  std::string type;
  double kl_coef = 0.001;
  int64_t horizon = 10000;
  double target_kl = 0.1;
};

// algorithm.filter_groups (DAPO dynamic sampling).
struct FilterGroupsConfig {
  bool enable = false;
  std::string metric = "reward";       // reward | seq_reward | seq_final_reward | a reward extra-info key (acc, score)
  int64_t max_num_gen_batches = 0;     // <= 0: no limit
  int64_t max_inflight_gen_batches = 1;
};

// algorithm.pf_ppo
struct PFPPOConfig {
  std::string reweight_method = "pow";  // pow | max_min | max_random
  double weight_pow = 2.0;
};

struct AlgorithmConfig {
  double gamma = 1.0;
  double lam = 1.0;
  std::string adv_estimator;
  bool norm_adv_by_std_in_grpo = true;
  std::vector<std::string> gdpo_reward_keys;  // gdpo: the reward's extra-info keys of its components (null: none)
  std::vector<double> gdpo_reward_weights;    // gdpo: one weight per key (null: 1 each)
  bool use_kl_in_reward = false;
  std::string kl_penalty;
  KLControlConfig kl_ctrl;
  RolloutCorrectionConfig rollout_correction;
  FilterGroupsConfig filter_groups;
  bool use_pf_ppo = false;
  PFPPOConfig pf_ppo;
};

struct TrainerConfig {
  bool balance_batch = true;
  int64_t total_epochs = 1;
  std::optional<int64_t> total_training_steps;
  std::string project_name;
  std::string experiment_name;
  std::vector<std::string> logger;
  int64_t log_val_generations = 0;
  std::optional<std::string> rollout_data_dir;
  std::optional<std::string> validation_data_dir;
  int64_t nnodes = 1;
  int64_t n_gpus_per_node = 1;
  // verl.cpp: verl's examples/split_placement as a key: the actor (+ ref) and the critic (+ reward model)
  // each get half of the slots, and update_critic runs at the same time as update_actor.
  bool split_placement = false;
  int64_t save_freq = -1;
  std::string resume_mode;
  std::optional<std::string> resume_from_path;
  bool val_before_train = true;
  bool val_only = false;
  int64_t test_freq = -1;
  int64_t critic_warmup = 0;
  std::string default_local_dir;
  bool del_local_ckpt_after_load = false;
  std::optional<int64_t> max_actor_ckpt_to_keep;
  std::optional<int64_t> max_critic_ckpt_to_keep;
  std::string device;
  std::optional<int64_t> num_cpu_threads;
  double worker_call_timeout = 1800;  // verl.cpp extension: seconds a worker rank may take per call; 0: none
  // verl's Python class called after each checkpoint (trainer/checkpoint_callback.h); empty: none.
  std::string checkpoint_callback_class;
  double checkpoint_callback_timeout = 3600;  // verl.cpp extension: seconds its on_save may take; 0: none
};

// verl's one_step_off_policy recipe keys (top-level `rollout:`): the devices of a separate Rollout role, used
// when actor_rollout_ref.hybrid_engine=false.
struct RolloutPoolConfig {
  int64_t nnodes = 1;
  int64_t n_gpus_per_node = 1;
};

// verl's skip.rollout (verl/utils/skip): the training rollout of the listed global steps is dumped under dump_dir
// and read back on a later run instead of generated (trainer/rollout_skip.h).
struct RolloutSkipConfig {
  bool enable = false;
  std::string dump_dir;          // `~` not yet expanded
  std::vector<int64_t> steps;    // global steps (the first training step is 1)
  std::string action = "cache";  // cache: that step's dump; repeat: the nearest dump (latest before, else after)
};

struct PPOConfig {
  DataConfig data;
  ActorRolloutRefConfig actor_rollout_ref;
  CriticConfig critic;
  RewardModelConfig reward_model;
  CustomRewardFunctionConfig custom_reward_function;
  AlgorithmConfig algorithm;
  TrainerConfig trainer;
  RolloutPoolConfig rollout;
  RolloutSkipConfig skip_rollout;  // skip.rollout
  DistillationConfig distillation;
};

// Names accepted for the enumerated keys; the algorithm ones are the registries' (verl/algo/algo_names.h).
const std::vector<std::string>& supported_adv_estimators();
const std::vector<std::string>& supported_loss_agg_modes();
// The torch.optim classes verl.cpp builds (optim.optimizer).
const std::vector<std::string>& supported_optimizers();
const std::vector<std::string>& supported_kl_penalties();
const std::vector<std::string>& supported_policy_loss_modes();
const std::vector<std::string>& supported_logger_backends();

// Builds and validates every section from a resolved tree; throws naming the first bad key.
PPOConfig parse_ppo_config(const Node& resolved);

}  // namespace verl::config
