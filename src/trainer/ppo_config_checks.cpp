// verl's RayPPOTrainer._validate_config and the batch-size normalisation the workers assert
// (ActorConfig/CriticConfig.validate, fsdp_workers.__init__): checked on the controller before any weights
// load, each failure one line naming the keys.
#include <algorithm>
#include <utility>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {

namespace {

// ppo_mini_batch_size counts prompts; each device gets mini * n / n_gpus responses per optimizer step, which
// the micro-batch size must divide.
void check_mini_batch(const std::string& section, int64_t train_batch_size, int64_t mini_batch_size,
                      std::optional<int64_t> micro_per_gpu, bool use_dynamic_bsz, int64_t n, int64_t n_gpus,
                      const std::string& devices) {
  VERL_CHECK(mini_batch_size > 0, "config", section, ".ppo_mini_batch_size must be > 0, got ", mini_batch_size);
  if (use_dynamic_bsz) return;
  VERL_CHECK(train_batch_size >= mini_batch_size, "config", "data.train_batch_size (", train_batch_size,
             ") must be >= ", section, ".ppo_mini_batch_size (", mini_batch_size, ")");
  const int64_t responses = mini_batch_size * n;
  VERL_CHECK(responses % n_gpus == 0, "config", section, ".ppo_mini_batch_size (", mini_batch_size,
             ") x actor_rollout_ref.rollout.n (", n, ") = ", responses, " responses per mini-batch does not divide over ",
             n_gpus, " devices (", devices, ")");
  if (micro_per_gpu) {
    VERL_CHECK(*micro_per_gpu > 0, "config", section, ".ppo_micro_batch_size_per_gpu must be > 0, got ",
               *micro_per_gpu);
    const int64_t per_gpu = responses / n_gpus;
    VERL_CHECK(per_gpu % *micro_per_gpu == 0, "config", "the per-device mini-batch of ", section, " (",
               mini_batch_size, " prompts x ", n, " / ", n_gpus, " devices = ", per_gpu,
               " responses) is not divisible by ", section, ".ppo_micro_batch_size_per_gpu (", *micro_per_gpu, ")");
  }
}

// "<p>tensor_model_parallel_size=T x <p>pipeline_model_parallel_size=P x <p>context_parallel_size=C", the sizes
// above 1 after the first.
std::string megatron_sizes(const std::string& p, const config::MegatronConfig& m) {
  std::string sizes = p + "tensor_model_parallel_size=" + std::to_string(m.tensor_model_parallel_size);
  if (m.pipeline_model_parallel_size > 1) {
    sizes += " x " + p + "pipeline_model_parallel_size=" + std::to_string(m.pipeline_model_parallel_size);
  }
  if (m.context_parallel_size > 1) {
    sizes += " x " + p + "context_parallel_size=" + std::to_string(m.context_parallel_size);
  }
  return sizes;
}

// strategy=megatron: the worker group's devices form DP x PP x CP x TP. What the implementation needs of the other
// keys: the ref and the rollout work on the actor's mesh, so their tensor-parallel sizes are the actor's (and the
// ref's pipeline and context-parallel sizes too; the rollout generates with all the stages' layers gathered, whole
// sequences on every rank).
void check_tensor_parallel(const config::PPOConfig& config, int64_t role_gpus, const std::string& devices) {
  const auto& arr = config.actor_rollout_ref;
  const int64_t actor_tp = arr.actor.tensor_parallel_size();
  const int64_t actor_pp = arr.actor.pipeline_parallel_size();
  const std::string m = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size";
  const std::string mp = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size";
  if (arr.actor.strategy == "megatron") {
    VERL_CHECK(role_gpus % arr.actor.model_parallel_size() == 0, "config",
               megatron_sizes("actor_rollout_ref.actor.megatron.", arr.actor.megatron), " must divide the actor's ",
               role_gpus, " devices (", devices, ")");
    VERL_CHECK(arr.ref.megatron.context_parallel_size == arr.actor.megatron.context_parallel_size, "config",
               "actor_rollout_ref.ref.megatron.context_parallel_size (", arr.ref.megatron.context_parallel_size,
               ") must equal actor_rollout_ref.actor.megatron.context_parallel_size (",
               arr.actor.megatron.context_parallel_size, "): the ref shares the actor's worker group");
    VERL_CHECK(arr.ref.megatron.pipeline_model_parallel_size == actor_pp, "config",
               "actor_rollout_ref.ref.megatron.pipeline_model_parallel_size (",
               arr.ref.megatron.pipeline_model_parallel_size, ") must equal ", mp, " (", actor_pp,
               "): the ref shares the actor's worker group");
    VERL_CHECK(arr.ref.megatron.tensor_model_parallel_size == actor_tp, "config",
               "actor_rollout_ref.ref.megatron.tensor_model_parallel_size (", arr.ref.megatron.tensor_model_parallel_size,
               ") must equal ", m, " (", actor_tp, "): the ref shares the actor's worker group");
    VERL_CHECK(arr.ref.megatron.virtual_pipeline_model_parallel_size ==
                   arr.actor.megatron.virtual_pipeline_model_parallel_size,
               "config", "actor_rollout_ref.ref.megatron.virtual_pipeline_model_parallel_size (",
               arr.ref.megatron.virtual_pipeline_model_parallel_size,
               ") must equal actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size (",
               arr.actor.megatron.virtual_pipeline_model_parallel_size, "): the ref shares the actor's worker group");
    // Unlike the actor's TP, the rollout gathers the whole model and slices it again for groups of its own size,
    // which must divide the devices and divide, or be a multiple of, the ranks of one model copy.
    const int64_t t = arr.rollout.tensor_model_parallel_size;
    const int64_t copy = arr.actor.model_parallel_size();
    VERL_CHECK(t >= 1 && role_gpus % t == 0 && (copy % t == 0 || t % copy == 0), "config",
               "actor_rollout_ref.rollout.tensor_model_parallel_size=", t, " must divide the rollout's ", role_gpus,
               " devices (", devices, ") and divide, or be a multiple of, the ", copy,
               " ranks of one actor model copy (megatron TP x PP x CP)");
    VERL_CHECK(arr.hybrid_engine, "config", "actor_rollout_ref.actor.strategy=megatron with "
               "actor_rollout_ref.hybrid_engine=false is not implemented: the weight broadcast to a separate rollout "
               "sends whole parameters (use the hybrid engine, or strategy=fsdp)");
  } else {
    // fsdp: each group of T consecutive ranks generates together on slices of the gathered weights (as verl's
    // vLLM TP replicas over the FSDP ranks).
    const int64_t t = arr.rollout.tensor_model_parallel_size;
    VERL_CHECK(t >= 1 && role_gpus % t == 0, "config", "actor_rollout_ref.rollout.tensor_model_parallel_size=", t,
               " must divide the rollout's ", role_gpus, " devices (", devices, ")");
  }
  if (need_critic(config) && config.critic.strategy == "megatron") {
    VERL_CHECK(role_gpus % config.critic.model_parallel_size() == 0, "config",
               megatron_sizes("critic.megatron.", config.critic.megatron), " must divide the critic's ", role_gpus,
               " devices (", devices, ")");
  }
  VERL_CHECK(!(config.reward_model.enable && config.reward_model.strategy == "megatron"), "config",
             "reward_model.strategy=megatron is not implemented (use fsdp: each reward-model rank holds the whole "
             "model)");
}

// Ulysses sequence parallelism (fsdp only, ppo_config.cpp checks): each size divides the role's devices. (The
// rollout, the multi-turn one too, is data-parallel over every rank: Ulysses splits only the training passes.)
void check_ulysses(const config::PPOConfig& config, int64_t role_gpus, const std::string& devices) {
  const auto& arr = config.actor_rollout_ref;
  std::vector<std::pair<std::string, int64_t>> sizes = {
      {"actor_rollout_ref.actor.ulysses_sequence_parallel_size", arr.actor.ulysses_sequence_parallel_size}};
  if (need_reference_policy(config)) {
    sizes.push_back({"actor_rollout_ref.ref.ulysses_sequence_parallel_size", arr.ref.ulysses_sequence_parallel_size});
  }
  if (need_critic(config)) sizes.push_back({"critic.ulysses_sequence_parallel_size", config.critic.ulysses_sequence_parallel_size});
  for (const auto& [key, sp] : sizes) {
    if (sp == 1) continue;
    VERL_CHECK(role_gpus % sp == 0, "config", key, "=", sp, " must divide the role's ", role_gpus, " devices (", devices,
               ")");
  }
}

}  // namespace

void check_split_placement(const config::PPOConfig& config) {
  const auto& trainer = config.trainer;
  if (!trainer.split_placement) return;
  VERL_CHECK(need_critic(config), "config", "trainer.split_placement=true puts the critic on a pool of its own, but "
             "this run has no critic (algorithm.adv_estimator=", config.algorithm.adv_estimator, ", critic.enable)");
  VERL_CHECK(trainer.n_gpus_per_node % 2 == 0 || trainer.nnodes % 2 == 0, "config",
             "trainer.split_placement=true halves the slots: trainer.n_gpus_per_node (", trainer.n_gpus_per_node,
             ") or trainer.nnodes (", trainer.nnodes, ") must be even");
}

void validate_ppo_config(const config::PPOConfig& config, int64_t n_gpus) {
  VERL_CHECK(n_gpus > 0, "config", "no devices: trainer.n_gpus_per_node x trainer.nnodes must be > 0");
  check_split_placement(config);
  const auto& data = config.data;
  const auto& actor = config.actor_rollout_ref.actor;
  const auto& rollout = config.actor_rollout_ref.rollout;
  const int64_t n = rollout.sampling.n;
  VERL_CHECK(n >= 1, "config", "actor_rollout_ref.rollout.n must be >= 1, got ", n);
  VERL_CHECK(data.train_batch_size > 0, "config", "data.train_batch_size must be > 0, got ", data.train_batch_size);
  const int64_t real_train_batch_size = data.train_batch_size * n;
  VERL_CHECK(real_train_batch_size % n_gpus == 0, "config", "data.train_batch_size (", data.train_batch_size,
             ") x actor_rollout_ref.rollout.n (", n, ") = ", real_train_batch_size,
             " responses per step must be divisible by the ", n_gpus,
             " devices (trainer.n_gpus_per_node x trainer.nnodes)");
  // Split placement gives the actor and the critic half of the devices each; their batches split over that half.
  const bool split = config.trainer.split_placement;
  const int64_t role_gpus = split ? std::max<int64_t>(1, n_gpus / 2) : n_gpus;
  const std::string devices = split ? "half of trainer.n_gpus_per_node x trainer.nnodes: trainer.split_placement=true"
                                    : "trainer.n_gpus_per_node x trainer.nnodes";
  check_tensor_parallel(config, role_gpus, devices);
  check_ulysses(config, role_gpus, devices);
  // Batches split over data-parallel ranks: the role's devices / its tensor- or sequence-parallel size.
  const int64_t actor_tp = actor.model_parallel_size();
  const int64_t actor_sp = actor.ulysses_sequence_parallel_size;
  const std::string tp_note =
      actor_tp > 1   ? " / actor megatron TP x PP x CP size " + std::to_string(actor_tp)
      : actor_sp > 1 ? " / actor ulysses_sequence_parallel_size " + std::to_string(actor_sp)
                     : std::string();
  check_mini_batch("actor_rollout_ref.actor", data.train_batch_size, actor.ppo_mini_batch_size,
                   actor.ppo_micro_batch_size_per_gpu, actor.use_dynamic_bsz, n, role_gpus / (actor_tp * actor_sp),
                   devices + tp_note);
  auto check_fsdp_size = [&](const std::string& key, int64_t fsdp_size) {
    VERL_CHECK(fsdp_size == -1 || (fsdp_size >= 1 && role_gpus % fsdp_size == 0), "config", key, "=", fsdp_size,
               " must divide the role's ", role_gpus, " devices (", devices, ")");
  };
  if (actor.strategy == "fsdp") check_fsdp_size("actor_rollout_ref.actor.fsdp_config.fsdp_size", actor.fsdp_config.fsdp_size);
  if (need_critic(config) && config.critic.strategy == "fsdp") {
    check_fsdp_size("critic.model.fsdp_config.fsdp_size", config.critic.model.fsdp_config.fsdp_size);
  }
  if (need_critic(config)) {
    const auto& critic = config.critic;
    const int64_t critic_tp = critic.model_parallel_size();
    const int64_t critic_sp = critic.ulysses_sequence_parallel_size;
    check_mini_batch("critic", data.train_batch_size, critic.ppo_mini_batch_size, critic.ppo_micro_batch_size_per_gpu,
                     critic.use_dynamic_bsz, n, role_gpus / (critic_tp * critic_sp),
                     critic_tp > 1   ? devices + " / critic megatron TP x PP x CP size " + std::to_string(critic_tp)
                     : critic_sp > 1 ? devices + " / critic.ulysses_sequence_parallel_size " + std::to_string(critic_sp)
                                     : devices);
  }
  // verl's check_mutually_exclusive: without dynamic batch sizes the log-prob passes need a micro-batch size.
  if (!actor.use_dynamic_bsz) {
    VERL_CHECK(actor.ppo_micro_batch_size_per_gpu.has_value(), "config",
               "set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu (or actor.use_dynamic_bsz=true)");
  }
  if (!rollout.log_prob_use_dynamic_bsz) {
    VERL_CHECK(rollout.log_prob_micro_batch_size_per_gpu.has_value(), "config",
               "set actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu (or "
               "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true)");
  }
  if (need_reference_policy(config) && !config.actor_rollout_ref.ref.log_prob_use_dynamic_bsz) {
    VERL_CHECK(config.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu.has_value(), "config",
               "set actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu (or "
               "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=true)");
  }
  if (need_critic(config) && !config.critic.use_dynamic_bsz) {
    VERL_CHECK(config.critic.ppo_micro_batch_size_per_gpu.has_value(), "config",
               "set critic.ppo_micro_batch_size_per_gpu (or critic.use_dynamic_bsz=true)");
  }
  VERL_CHECK(rollout.val_kwargs.n >= 1, "config", "actor_rollout_ref.rollout.val_kwargs.n must be >= 1");
  if (rollout.val_kwargs.do_sample) {
    VERL_CHECK(rollout.sampling.temperature > 0, "config",
               "validation sampling (actor_rollout_ref.rollout.val_kwargs.do_sample=true) needs "
               "actor_rollout_ref.rollout.temperature > 0");
  }
  VERL_CHECK(rollout.response_length > 0 && rollout.prompt_length > 0, "config",
             "data.max_prompt_length and data.max_response_length must be > 0");
  VERL_CHECK(config.trainer.total_epochs >= 1 || config.trainer.total_training_steps, "config",
             "trainer.total_epochs must be >= 1");
  if (config.trainer.total_training_steps) {
    VERL_CHECK(*config.trainer.total_training_steps >= 1, "config", "trainer.total_training_steps must be >= 1");
  }
  if (config.algorithm.use_kl_in_reward && actor.use_kl_loss) {
    VERL_LOG(Warn, "config") << "both algorithm.use_kl_in_reward and actor_rollout_ref.actor.use_kl_loss are on";
  }
  if (rollout.name != "hf") {
    VERL_LOG(Warn, "config") << "actor_rollout_ref.rollout.name=" << rollout.name << ": verl.cpp has no "
                             << rollout.name << " engine; its native engine generates (the sampling keys mean what "
                             << "they mean in verl's hf rollout)";
  }
  if (data.val_batch_size) {
    VERL_LOG(Warn, "config") << "data.val_batch_size is deprecated in verl (validation runs as one batch)";
  }
  // verl skips rollout correction silently without rollout_log_probs; here a requested correction needs them.
  const auto& correction = config.algorithm.rollout_correction;
  const bool wants_correction = correction.rollout_is || correction.rollout_rs || correction.bypass_mode;
  VERL_CHECK(!wants_correction || rollout.calculate_log_probs, "config", "algorithm.rollout_correction (",
             correction.bypass_mode ? "bypass_mode=true" : correction.rollout_is ? "rollout_is" : "rollout_rs",
             ") needs the rollout's log-probs: set actor_rollout_ref.rollout.calculate_log_probs=true");
  // verl applies PF-PPO inside its GAE branch only; another estimator would ignore the key.
  VERL_CHECK(!config.algorithm.use_pf_ppo || config.algorithm.adv_estimator == "gae", "config",
             "algorithm.use_pf_ppo=true resamples after GAE advantages only (as verl); algorithm.adv_estimator=",
             config.algorithm.adv_estimator);
}

}  // namespace verl::trainer
