// PPOTrainer set-up and the step loop (verl's RayPPOTrainer.__init__, init_workers, fit). Validation lives in
// ppo_trainer_validate.cpp, checkpoints in ppo_trainer_checkpoint.cpp, config checks in ppo_config_checks.cpp.
#include "verl/trainer/ppo_trainer.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <future>
#include <iostream>

#include <ATen/CPUGeneratorImpl.h>

#include "verl/algo/core_algos.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/rollout_corr.h"
#include "verl/algo/rollout_debug_metrics.h"
#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/parallel/comm.h"
#include "verl/single_controller/transport.h"
#include "verl/trainer/dynamic_sampling.h"

namespace verl::trainer {

namespace {

using algo::MetricMap;
using single_controller::WorkerFactory;
using single_controller::WorkerGroup;

// verl's marked_timer: adds the seconds spent in a scope to timing_raw[name].
class PhaseTimer {
 public:
  PhaseTimer(const std::string& name, MetricMap& timing_raw)
      : name_(name), timing_raw_(timing_raw), start_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { timing_raw_[name_] += seconds_since(start_); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  std::string name_;
  MetricMap& timing_raw_;
  std::chrono::steady_clock::time_point start_;
};

// meta_info["metrics"] of a worker output (key -> list of numbers, possibly nested by dp concat) reduced with
// verl's reduce_metrics.
MetricMap reduce_worker_metrics(const DataProto& output) {
  std::map<std::string, std::vector<double>> lists;
  if (!output.meta_info.contains("metrics")) return {};
  std::function<void(const nlohmann::json&, std::vector<double>&)> flatten = [&](const nlohmann::json& value,
                                                                                std::vector<double>& out) {
    if (value.is_array()) {
      for (const auto& item : value) flatten(item, out);
    } else if (value.is_number() || value.is_boolean()) {
      out.push_back(value.get<double>());
    }
  };
  for (auto it = output.meta_info["metrics"].begin(); it != output.meta_info["metrics"].end(); ++it) {
    std::vector<double> values;
    flatten(it.value(), values);
    if (!values.empty()) lists[it.key()] = std::move(values);
  }
  return algo::reduce_metrics(lists);
}

// meta_info["timing"] of a worker output (seconds the worker itself spent, per name) into timing_raw.
void read_worker_timing(const DataProto& output, MetricMap& timing_raw) {
  if (!output.meta_info.contains("timing")) return;
  for (auto it = output.meta_info["timing"].begin(); it != output.meta_info["timing"].end(); ++it) {
    double seconds = 0;
    if (it.value().is_number()) seconds = it.value().get<double>();
    if (it.value().is_array()) {
      for (const auto& v : it.value()) seconds = std::max(seconds, v.get<double>());  // slowest rank
    }
    timing_raw[it.key()] = seconds;
  }
}

std::shared_ptr<single_controller::Transport> in_process_transport(const std::string& name, int world_size,
                                                                   const WorkerFactory& factory) {
  return std::make_shared<single_controller::InProcessTransport>(name, world_size, factory);
}

uint64_t controller_seed(const config::PPOConfig& config) {
  // verl's classic default for an unset data.seed is 1; the uid stream is offset so it is not the sampler's.
  return static_cast<uint64_t>(config.data.seed.value_or(1)) ^ 0x7569645f73656564ull;  // "uid_seed"
}

}  // namespace

bool need_critic(const config::PPOConfig& config) {
  if (config.critic.enable.has_value()) return *config.critic.enable;
  return config.algorithm.adv_estimator == "gae";
}

bool need_reference_policy(const config::PPOConfig& config) {
  return config.algorithm.use_kl_in_reward || config.actor_rollout_ref.actor.use_kl_loss;
}

PPOTrainer::PPOTrainer(std::shared_ptr<config::PPOConfig> config, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                       RoleWorkerMapping role_worker_mapping,
                       single_controller::ResourcePoolManager resource_pool_manager, RewardFn reward_fn,
                       RewardFn val_reward_fn, std::shared_ptr<PromptDataLoader> train_dataloader,
                       std::shared_ptr<PromptDataLoader> val_dataloader, PPOTrainerOptions options)
    : config_(std::move(config)),
      tokenizer_(std::move(tokenizer)),
      role_worker_mapping_(std::move(role_worker_mapping)),
      resource_pool_manager_(std::move(resource_pool_manager)),
      reward_fn_(std::move(reward_fn)),
      val_reward_fn_(std::move(val_reward_fn)),
      train_dataloader_(std::move(train_dataloader)),
      val_dataloader_(std::move(val_dataloader)),
      options_(std::move(options)),
      uid_generator_(0) {
  VERL_ASSERT(config_ && tokenizer_ && train_dataloader_, "trainer", "config, tokenizer and train dataloader needed");
  const config::PPOConfig& cfg = *config_;
  if (cfg.actor_rollout_ref.hybrid_engine) {
    VERL_CHECK(role_worker_mapping_.count(Role::ActorRollout), "trainer",
               "role_worker_mapping needs Role::ActorRollout (actor_rollout_ref.hybrid_engine=true)");
  } else {
    VERL_CHECK(role_worker_mapping_.count(Role::Actor) && role_worker_mapping_.count(Role::Rollout), "trainer",
               "actor_rollout_ref.hybrid_engine=false needs Role::Actor and Role::Rollout in role_worker_mapping");
  }
  use_reference_policy_ = role_worker_mapping_.count(Role::RefPolicy) > 0;
  use_rm_ = role_worker_mapping_.count(Role::RewardModel) > 0;
  use_teacher_ = role_worker_mapping_.count(Role::TeacherModel) > 0;
  VERL_CHECK(use_teacher_ == cfg.distillation.enabled, "trainer",
             "distillation.enabled=", cfg.distillation.enabled ? "true" : "false",
             " needs the teacher role (Role::TeacherModel) in role_worker_mapping exactly when it is true");
  use_critic_ = need_critic(cfg);
  VERL_CHECK(!use_critic_ || role_worker_mapping_.count(Role::Critic), "trainer",
             "the critic is needed (algorithm.adv_estimator=", cfg.algorithm.adv_estimator,
             ", critic.enable) but role_worker_mapping has no Role::Critic");
  if (cfg.algorithm.use_kl_in_reward) {
    VERL_CHECK(use_reference_policy_, "trainer", "algorithm.use_kl_in_reward=true needs the reference policy role");
    kl_ctrl_in_reward_ = algo::get_kl_controller(cfg.algorithm.kl_ctrl);
  }
  VERL_CHECK(!cfg.actor_rollout_ref.actor.use_kl_loss || use_reference_policy_, "trainer",
             "actor_rollout_ref.actor.use_kl_loss=true needs the reference policy role");
  // The batch checks are about the trainer's devices: a separate rollout's slots take no training batch.
  int64_t trainer_slots = resource_pool_manager_.total_slots();
  if (resource_pool_manager_.has_role(Role::Rollout)) {
    trainer_slots -= resource_pool_manager_.pool_for(Role::Rollout).world_size();
  }
  validate_ppo_config(cfg, trainer_slots);
  VERL_CHECK(!cfg.trainer.balance_batch || options_.seqlen_partitioner, "trainer",
             "trainer.balance_batch=true needs a sequence-length partitioner");
  if (!options_.sequence_workload) options_.sequence_workload = [](int64_t l) { return 24576 * l + l * l; };
  in_process_ = !options_.transport_factory;
  if (!options_.transport_factory) options_.transport_factory = in_process_transport;

  // verl's _create_dataloader: the step budget, which init_workers hands to the optimizers' schedules.
  VERL_CHECK(train_dataloader_->batches_per_epoch() >= 1, "trainer", "the train dataloader is empty: ",
             "data.train_files has fewer prompts than data.train_batch_size=", cfg.data.train_batch_size);
  VERL_CHECK(!val_reward_fn_ || !val_dataloader_ || val_dataloader_->batches_per_epoch() >= 1, "trainer",
             "the validation dataloader is empty (data.val_files)");
  total_training_steps_ = train_dataloader_->batches_per_epoch() * cfg.trainer.total_epochs;
  if (cfg.trainer.total_training_steps) total_training_steps_ = *cfg.trainer.total_training_steps;
  VERL_LOG(Info, "trainer") << "train dataloader: " << train_dataloader_->batches_per_epoch()
                            << " batches per epoch; total training steps: " << total_training_steps_;

  run_dir_ = options_.run_dir.empty() ? cfg.trainer.default_local_dir : options_.run_dir;
  uid_generator_ = UidGenerator(controller_seed(cfg));
}

PPOTrainer::~PPOTrainer() = default;

PoolRoles colocated_roles(const RoleWorkerMapping& mapping, const single_controller::ResourcePoolManager& pools) {
  PoolRoles roles;
  for (const auto& [role, prefix] : {std::pair<Role, const char*>{Role::ActorRollout, "actor_rollout"},
                                     {Role::Actor, "actor"},
                                     {Role::Rollout, "rollout"},
                                     {Role::Critic, "critic"},
                                     {Role::RefPolicy, "ref"},
                                     {Role::RewardModel, "rm"},
                                     {Role::TeacherModel, "teacher"}}) {
    auto it = mapping.find(role);
    if (it != mapping.end()) roles[pools.pool_for(role).name].emplace_back(prefix, it->second);
  }
  return roles;
}

// In one process a separate rollout meets the actor over thread communicators: the actor pool's rank 0 is
// rank 0 of the weight-sync group, the rollout rank its rank 1. (Under mpirun the worker ranks make theirs.)
std::map<std::string, WorkerFactory> PPOTrainer::with_in_process_weight_sync(std::map<std::string, WorkerFactory> pools) {
  if (!in_process_ || !role_worker_mapping_.count(Role::Rollout)) return pools;
  const auto& rollout_pool = resource_pool_manager_.pool_for(Role::Rollout);
  const auto& actor_pool = resource_pool_manager_.pool_for(Role::Actor);
  VERL_CHECK(rollout_pool.world_size() == 1, "trainer", "in one process the separate rollout runs on one slot "
             "(rollout.n_gpus_per_node=1, rollout.nnodes=1); more rollout ranks need mpirun (docs/distributed.md)");
  auto comms = parallel::thread_comms(2);
  auto attach = [](WorkerFactory factory, std::shared_ptr<parallel::Comm> comm) -> WorkerFactory {
    return [factory, comm](const single_controller::WorkerContext& context) {
      single_controller::WorkerContext with_sync = context;
      if (context.rank == 0) with_sync.weight_sync = comm;
      return factory(with_sync);
    };
  };
  pools[actor_pool.name] = attach(pools.at(actor_pool.name), comms[0]);
  pools[rollout_pool.name] = attach(pools.at(rollout_pool.name), comms[1]);
  return pools;
}

void PPOTrainer::init_workers() {
  // resource pool -> {role prefix -> worker factory}: every role on a pool lives in one co-located worker.
  const PoolRoles resource_pool_to_cls = colocated_roles(role_worker_mapping_, resource_pool_manager_);
  std::map<std::string, WorkerFactory> pool_factories;
  for (const auto& [pool, roles] : resource_pool_to_cls) pool_factories[pool] = single_controller::colocated_factory(roles);
  pool_factories = with_in_process_weight_sync(std::move(pool_factories));
  for (const auto& pool : resource_pool_manager_.pools()) {
    auto it = resource_pool_to_cls.find(pool.name);
    if (it == resource_pool_to_cls.end()) continue;
    std::vector<std::string> prefixes;
    for (const auto& entry : it->second) prefixes.push_back(entry.first);
    auto transport = options_.transport_factory(pool.name, pool.world_size(), pool_factories.at(pool.name));
    WorkerGroup wg_dict(pool.name, transport);
    for (auto& [prefix, view] : wg_dict.spawn(prefixes)) all_wg_.emplace(prefix, view);
  }

  // The step budget the optimizers' schedules run over (verl writes it into the optim configs it ships to its
  // workers; each worker here holds its own config, under mpirun even its own copy, where it is still -1).
  DataProto step_budget;
  step_budget.meta_info["total_training_steps"] = total_training_steps_;
  if (use_critic_) {
    critic_wg_.emplace(all_wg_.at("critic"));
    critic_wg_->call("init_model", step_budget);
  }
  if (use_reference_policy_) {
    ref_policy_wg_.emplace(all_wg_.at("ref"));
    ref_policy_wg_->call("init_model");
  }
  if (use_rm_) {
    rm_wg_.emplace(all_wg_.at("rm"));
    rm_wg_->call("init_model");
  }
  if (use_teacher_) {
    teacher_wg_.emplace(all_wg_.at("teacher"));
    teacher_wg_->call("init_model");
  }
  // Split placement: the critic's pool is not the actor's, so their updates can run at the same time.
  const Role actor_role = resource_pool_manager_.has_role(Role::ActorRollout) ? Role::ActorRollout : Role::Actor;
  split_updates_ = use_critic_ && resource_pool_manager_.pool_for(Role::Critic).name !=
                                      resource_pool_manager_.pool_for(actor_role).name;
  if (all_wg_.count("rollout")) {
    rollout_wg_.emplace(all_wg_.at("rollout"));
    rollout_wg_->call("init_model");
  }
  // The actor last (verl: the rollout engine then sees the memory left).
  actor_rollout_wg_.emplace(all_wg_.at(all_wg_.count("actor_rollout") ? "actor_rollout" : "actor"));
  actor_rollout_wg_->call("init_model", step_budget);
}

DataProto PPOTrainer::get_gen_batch(DataProto& batch) const {
  static const std::vector<std::string> reward_model_keys = {"data_source", "reward_model", "extra_info", "uid"};
  std::vector<std::string> batch_keys, non_tensor_keys;
  for (const char* key : {"input_ids", "attention_mask", "position_ids"}) {
    if (batch.has_tensor(key)) batch_keys.push_back(key);
  }
  for (const auto& [key, column] : batch.non_tensor_batch) {
    if (std::find(reward_model_keys.begin(), reward_model_keys.end(), key) == reward_model_keys.end()) {
      non_tensor_keys.push_back(key);
    }
  }
  DataProto gen_batch = batch.pop(batch_keys, non_tensor_keys);
  // verl 0.9.1 scores inside its agent loop, where the prompt's messages are at hand (the reward function's
  // extra_info["raw_prompt"], a reward model's chat template): the batch keeps them for the reward step.
  if (gen_batch.non_tensor_batch.count("raw_prompt"))
    batch.non_tensor_batch["raw_prompt"] = gen_batch.column("raw_prompt");
  return gen_batch;
}

nlohmann::json PPOTrainer::generation_meta(bool validate, bool do_sample) const {
  const auto& rollout = config_->actor_rollout_ref.rollout;
  std::vector<int32_t> eos = tokenizer_->eos_token_ids();
  nlohmann::json meta = nlohmann::json::object();
  meta["eos_token_id"] = eos.size() == 1 ? nlohmann::json(eos[0]) : nlohmann::json(eos);
  std::optional<int32_t> pad = tokenizer_->pad_token_id();
  if (!pad && !eos.empty()) pad = eos[0];  // verl's hf_tokenizer sets pad = eos when the tokenizer has none
  meta["pad_token_id"] = pad ? nlohmann::json(*pad) : nlohmann::json();
  meta["do_sample"] = do_sample;
  meta["validate"] = validate;
  meta["temperature"] = validate ? rollout.val_kwargs.temperature : rollout.sampling.temperature;
  meta["global_steps"] = global_steps_;
  if (validate) meta["recompute_log_prob"] = false;
  return meta;
}

DataProto PPOTrainer::generate(const DataProto& gen_batch, MetricMap& timing_raw) {
  DataProto output = (rollout_wg_ ? *rollout_wg_ : *actor_rollout_wg_).call("generate_sequences", gen_batch);
  read_worker_timing(output, timing_raw);
  output.meta_info = nlohmann::json::object();
  return output;
}

DataProto PPOTrainer::generate_training_rollout(const DataProto& gen_batch, MetricMap& timing_raw) {
  if (!rollout_skip_ || !rollout_skip_->applies(global_steps_) || rollout_skip_step_ == global_steps_) {
    return generate(gen_batch, timing_raw);
  }
  rollout_skip_step_ = global_steps_;
  if (auto dumped = rollout_skip_->load(global_steps_, gen_batch.size())) return std::move(*dumped);
  DataProto output = generate(gen_batch, timing_raw);
  rollout_skip_->dump(global_steps_, output);
  return output;
}

RewardOutput PPOTrainer::compute_reward(DataProto& batch, const RewardFn& reward_fn) {
  if (reward_fn) return reward_fn(batch);
  VERL_CHECK(batch.has_tensor("rm_scores"), "trainer", "no reward function and no rm_scores from a reward model");
  return RewardOutput{batch.tensor("rm_scores"), {}};
}

void PPOTrainer::balance_batch(DataProto& batch, MetricMap& metrics) {
  const torch::Tensor& attention_mask = batch.tensor("attention_mask");
  torch::Tensor lengths = attention_mask.view({attention_mask.size(0), -1}).sum(-1).to(torch::kInt64).contiguous();
  std::vector<int64_t> seqlens(lengths.data_ptr<int64_t>(), lengths.data_ptr<int64_t>() + lengths.numel());
  BalancePlan plan = plan_balanced_order(seqlens, actor_rollout_wg_->world_size(), options_.seqlen_partitioner,
                                         options_.sequence_workload);
  batch.reorder(plan.order);
  metrics.insert(plan.metrics.begin(), plan.metrics.end());
}

void PPOTrainer::compute_advantage(DataProto& batch) const {
  const auto& algorithm = config_->algorithm;
  algo::AdvantageInputs inputs;
  inputs.token_level_rewards = batch.tensor("token_level_rewards");
  inputs.response_mask = batch.tensor("response_mask");
  if (batch.has_tensor("values")) inputs.values = batch.tensor("values");
  if (batch.has_tensor("reward_baselines")) inputs.reward_baselines = batch.tensor("reward_baselines");
  if (batch.non_tensor_batch.count("uid")) {
    for (const auto& uid : batch.column("uid")) inputs.index.push_back(uid.get<std::string>());
  }
  // The optimal token baselines' inputs (sum_pi_squared: actor.calculate_sum_pi_squared) and GDPO's reward
  // components (the reward's extra info under algorithm.gdpo_reward_keys).
  if (batch.has_tensor("old_log_probs")) inputs.old_log_probs = batch.tensor("old_log_probs");
  if (batch.has_tensor("sum_pi_squared")) inputs.sum_pi_squared = batch.tensor("sum_pi_squared");
  if (batch.has_tensor("rollout_is_weights")) inputs.rollout_is_weights = batch.tensor("rollout_is_weights");
  if (algorithm.adv_estimator == "gdpo") {
    for (const auto& key : algorithm.gdpo_reward_keys) {
      VERL_CHECK(batch.non_tensor_batch.count(key), "trainer", "algorithm.gdpo_reward_keys names '", key,
                 "' but the reward function's extra info has no such key");
      std::vector<double> values;
      for (const auto& v : batch.column(key)) {  // numbers or bools (acc), as numpy's float32 conversion takes them
        VERL_CHECK(v.is_number() || v.is_boolean(), "trainer", "gdpo reward component '", key,
                   "' holds a non-number: ", v.dump());
        values.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
      }
      inputs.reward_components.push_back(torch::tensor(values, torch::kDouble).to(torch::kFloat32));
    }
  }
  algo::AdvantageOptions options;
  options.gamma = algorithm.gamma;
  options.lam = algorithm.lam;
  options.norm_adv_by_std_in_grpo = algorithm.norm_adv_by_std_in_grpo;
  options.gdpo_reward_weights = algorithm.gdpo_reward_weights;
  auto [advantages, returns] = algo::compute_advantage(algorithm.adv_estimator, inputs, options);
  batch.batch["advantages"] = advantages;
  batch.batch["returns"] = returns;
  if (algorithm.use_pf_ppo && algorithm.adv_estimator == "gae") {
    // verl's compute_pf_ppo_reweight_data: every row and every per-row meta list resampled with replacement.
    torch::Generator generator =
        at::detail::createCPUGenerator(controller_seed(*config_) + 0x70665f70706full * static_cast<uint64_t>(global_steps_));
    const std::vector<int64_t> rows = algo::pf_ppo_resample_rows(
        batch.tensor("token_level_scores"), algorithm.pf_ppo.reweight_method, algorithm.pf_ppo.weight_pow, generator);
    const int64_t batch_size = batch.size();
    DataProto resampled = batch.index(rows);
    for (auto it = batch.meta_info.begin(); it != batch.meta_info.end(); ++it) {
      if (!it.value().is_array() || static_cast<int64_t>(it.value().size()) != batch_size) continue;
      nlohmann::json picked = nlohmann::json::array();
      for (int64_t row : rows) picked.push_back(it.value()[static_cast<size_t>(row)]);
      resampled.meta_info[it.key()] = picked;
    }
    batch = std::move(resampled);
  }
}

// verl's compute_rollout_correction_and_add_to_batch (decoupled mode): IS weights and rejection between
// rollout_log_probs and old_log_probs; response_mask always replaced, rollout_is_weights added when enabled.
void PPOTrainer::apply_rollout_correction(DataProto& batch, MetricMap& metrics) const {
  const auto& rc = config_->algorithm.rollout_correction;
  if (rc.bypass_mode || !batch.has_tensor("rollout_log_probs")) return;
  algo::RolloutCorrectionOptions options{rc.rollout_is, rc.rollout_is_threshold, rc.rollout_is_batch_normalize,
                                         rc.rollout_rs, rc.rollout_rs_threshold};
  algo::RolloutCorrectionOutput out = algo::compute_rollout_correction_and_rejection_mask(
      batch.tensor("old_log_probs"), batch.tensor("rollout_log_probs"), batch.tensor("response_mask"), options);
  batch.batch["response_mask"] = out.response_mask;
  if (out.rollout_is_weights.defined()) batch.batch["rollout_is_weights"] = out.rollout_is_weights;
  metrics.insert(out.metrics.begin(), out.metrics.end());
}

// old_log_probs: recomputed by the actor (with verl's actor/entropy), or in bypass mode the rollout's own.
void PPOTrainer::compute_old_log_prob(DataProto& batch, MetricMap& metrics, MetricMap& timing_raw) {
  if (config_->algorithm.rollout_correction.bypass_mode) {
    VERL_CHECK(batch.has_tensor("rollout_log_probs"), "trainer", "algorithm.rollout_correction.bypass_mode=true "
               "needs rollout_log_probs in the batch: set actor_rollout_ref.rollout.calculate_log_probs=true");
    batch.batch["old_log_probs"] = batch.tensor("rollout_log_probs");
    return;
  }
  PhaseTimer timer("old_log_prob", timing_raw);
  DataProto old_log_prob = actor_rollout_wg_->call("compute_log_prob", batch);
  torch::Tensor entropys = old_log_prob.tensor("entropys");
  metrics["actor/entropy"] =
      algo::agg_loss(entropys, batch.tensor("response_mask"), config_->actor_rollout_ref.actor.loss_agg_mode)
          .item<double>();
  old_log_prob.batch.erase("entropys");
  for (const auto& [key, value] : reduce_worker_metrics(old_log_prob)) metrics[key] = value;  // perf/mfu/actor_infer
  old_log_prob.meta_info.erase("metrics");
  batch.union_rows_with(old_log_prob);
  if (batch.has_tensor("rollout_log_probs")) {  // verl's calculate_debug_metrics: rollout vs actor probabilities
    const int64_t response_length = batch.tensor("responses").size(1);
    for (const auto& [key, value] : algo::compute_rollout_probs_diff_metrics(
             batch.tensor("old_log_probs"), batch.tensor("rollout_log_probs"),
             batch.tensor("response_mask").slice(1, -response_length))) {
      metrics[key] = value;
    }
  }
}

// token_level_scores (+ the reward's extra columns) and token_level_rewards (the scores, less the KL penalty
// with algorithm.use_kl_in_reward).
void PPOTrainer::apply_reward(DataProto& batch, const RewardOutput& reward, MetricMap& metrics) {
  const auto& algorithm = config_->algorithm;
  batch.batch["token_level_scores"] = reward.reward_tensor.to(torch::kFloat32);
  for (const auto& [key, values] : reward.reward_extra_info) {
    VERL_CHECK(static_cast<int64_t>(values.size()) == batch.size(), "trainer", "reward extra info '", key,
               "' has ", values.size(), " values for ", batch.size(), " responses");
    batch.non_tensor_batch[key] = values;
  }
  if (algorithm.use_kl_in_reward) {
    algo::KLPenaltyOutput kl = algo::apply_kl_penalty(
        batch.tensor("token_level_scores"), batch.tensor("old_log_probs"), batch.tensor("ref_log_prob"),
        batch.tensor("response_mask"), *kl_ctrl_in_reward_, algorithm.kl_penalty);
    batch.batch["token_level_rewards"] = kl.token_level_rewards;
    metrics.insert(kl.metrics.begin(), kl.metrics.end());
  } else {
    batch.batch["token_level_rewards"] = batch.tensor("token_level_scores");
  }
}

void PPOTrainer::log(const MetricMap& metrics) {
  logger_->log(metrics, global_steps_);
  if (options_.on_log) options_.on_log(global_steps_, metrics);
}

// A separate rollout gets the actor's weights (verl's one_step_off_policy sync_rollout_weights): the actor
// group and the rollout group are called together, since they meet in one broadcast.
void PPOTrainer::sync_rollout_weights() {
  if (!rollout_wg_) return;
  auto sent = actor_rollout_wg_->call_async("sync_rollout_weights");
  auto received = rollout_wg_->call_async("sync_rollout_weights");
  std::exception_ptr failure;
  for (auto* call : {&sent, &received}) {
    try {
      call->get();
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// verl's examples/split_placement fit: the critic and the actor are on different pools, so both updates are
// issued before either is awaited. timing_raw gets verl's update_critic_call / update_actor_call (issuing) and
// update_actor_critic (waiting for both), and each worker's own update_critic / update_actor seconds: the
// overlap is update_critic + update_actor - update_actor_critic.
void PPOTrainer::update_critic_and_actor_overlapped(DataProto& batch, MetricMap& metrics, MetricMap& timing_raw) {
  const bool update_actor = config_->trainer.critic_warmup <= global_steps_;
  batch.meta_info["multi_turn"] = false;
  std::future<DataProto> critic_output, actor_output;
  {
    PhaseTimer timer("update_critic_call", timing_raw);
    critic_output = critic_wg_->call_async("update_critic", batch);
  }
  if (update_actor) {
    PhaseTimer timer("update_actor_call", timing_raw);
    actor_output = actor_rollout_wg_->call_async("update_actor", batch);
  }
  PhaseTimer timer("update_actor_critic", timing_raw);
  // Both futures are awaited even when the first fails, so no call outlives the batch it reads.
  std::exception_ptr failure;
  auto collect = [&](std::future<DataProto>& output, bool actor) {
    try {
      DataProto result = output.get();
      read_worker_timing(result, timing_raw);
      for (const auto& [key, value] : reduce_worker_metrics(result)) {
        if (actor || !metrics.count(key)) metrics[key] = value;  // update-pass entropy wins
      }
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  };
  collect(critic_output, false);
  if (update_actor) collect(actor_output, true);
  if (failure) std::rethrow_exception(failure);
}

void PPOTrainer::add_step_metrics(MetricMap& metrics, const DataProto& batch, const MetricMap& timing_raw,
                                  const std::vector<int64_t>& global_token_num, int64_t epoch,
                                  int64_t num_gen_batches) const {
  if (config_->algorithm.filter_groups.enable) {
    metrics["train/num_gen_batches"] = static_cast<double>(num_gen_batches);
  }
  metrics["training/global_step"] = static_cast<double>(global_steps_);
  metrics["training/epoch"] = static_cast<double>(epoch);
  algo::DataMetricsInputs data_inputs;
  data_inputs.token_level_scores = batch.tensor("token_level_scores");
  data_inputs.token_level_rewards = batch.tensor("token_level_rewards");
  data_inputs.advantages = batch.tensor("advantages");
  data_inputs.returns = batch.tensor("returns");
  if (use_critic_) data_inputs.values = batch.tensor("values");
  data_inputs.response_mask = batch.tensor("response_mask");
  data_inputs.attention_mask = batch.tensor("attention_mask");
  for (const auto& part : {algo::compute_data_metrics(data_inputs, use_critic_),
                           algo::compute_timing_metrics(batch.tensor("attention_mask"),
                                                        batch.tensor("responses").size(1), timing_raw),
                           algo::compute_throughput_metrics(global_token_num, timing_raw,
                                                            resource_pool_manager_.total_slots())}) {
    metrics.insert(part.begin(), part.end());
  }
  // verl 0.9.1's gradient-variance proxies, when the actor computed sum_pi_squared (actor.calculate_sum_pi_squared).
  if (batch.has_tensor("sum_pi_squared") && batch.has_tensor("old_log_probs")) {
    algo::VarianceProxyInputs proxy;
    proxy.sum_pi_squared = batch.tensor("sum_pi_squared");
    proxy.old_log_probs = batch.tensor("old_log_probs");
    proxy.advantages = batch.tensor("advantages");
    proxy.response_mask = batch.tensor("response_mask");
    if (batch.has_tensor("rollout_is_weights")) proxy.rollout_is_weights = batch.tensor("rollout_is_weights");
    if (auto it = metrics.find("actor/grad_norm"); it != metrics.end()) proxy.gradient_norm = it->second;
    const algo::MetricMap part = algo::compute_variance_proxy_metrics(proxy);
    metrics.insert(part.begin(), part.end());
  }
  // verl 0.9.1's GDPO: each reward component's gdpo/<key>/{mean,std,max,min}.
  if (config_->algorithm.adv_estimator == "gdpo") {
    for (const auto& key : config_->algorithm.gdpo_reward_keys) {
      const auto it = batch.non_tensor_batch.find(key);
      if (it == batch.non_tensor_batch.end()) continue;
      std::vector<double> values;
      values.reserve(it->second.size());
      for (const auto& v : it->second) values.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
      const algo::MetricMap part = algo::compute_reward_component_metrics("gdpo/" + key, values);
      metrics.insert(part.begin(), part.end());
    }
  }
  // Multi-turn rollouts: verl's num_turns/* and tool_call_counts/*, and verl.cpp's tool_errors/* (calls that
  // raised, timed out, named no tool or were not valid JSON).
  for (const auto& [column, prefix] : {std::pair{"__num_turns__", "num_turns"}, std::pair{"tool_call_counts", "tool_call_counts"},
                                       std::pair{"tool_errors", "tool_errors"}}) {
    auto it = batch.non_tensor_batch.find(column);
    if (it == batch.non_tensor_batch.end() || it->second.empty()) continue;
    double lo = it->second.front().get<double>(), hi = lo, sum = 0;
    for (const auto& v : it->second) {
      const double x = v.get<double>();
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      sum += x;
    }
    metrics[std::string(prefix) + "/min"] = lo;
    metrics[std::string(prefix) + "/max"] = hi;
    metrics[std::string(prefix) + "/mean"] = sum / static_cast<double>(it->second.size());
  }
}

void PPOTrainer::fit() {
  VERL_CHECK(actor_rollout_wg_.has_value(), "trainer", "call init_workers() before fit()");
  const config::PPOConfig& cfg = *config_;
  const auto& trainer = cfg.trainer;
  const auto& rollout = cfg.actor_rollout_ref.rollout;
  logger_ = std::make_unique<Tracking>(trainer.project_name, trainer.experiment_name, trainer.logger, run_dir_,
                                       options_.config_yaml, options_.console_out);

  global_steps_ = 0;
  if (cfg.skip_rollout.enable) rollout_skip_.emplace(cfg);
  // Temporaries of writes a killed run left behind (`*.tmp.<pid>`, `*.old.<pid>`): checkpoint folders and the
  // files beside them, and the run folder's reports.
  for (const std::string& dir : {trainer.default_local_dir, run_dir_}) {
    for (const std::string& path : remove_stale_temp_files(dir, /*depth=*/2)) {
      VERL_LOG(Info, "trainer") << "removed " << path << " (left by an interrupted write)";
    }
  }
  load_checkpoint();
  sync_rollout_weights();  // the rollout starts from the actor's (possibly resumed) weights
  const int64_t steps_per_epoch = train_dataloader_->batches_per_epoch();
  const int64_t current_epoch = global_steps_ / steps_per_epoch;

  // Resumed from the final checkpoint (a run killed after its last save, or started again): nothing is left to
  // train, and no step runs past total_training_steps, so where a run ends does not depend on when it was stopped.
  // val_only still validates the final model.
  const bool already_complete = global_steps_ >= total_training_steps_;
  if (val_reward_fn_ && val_dataloader_ && trainer.val_before_train && (!already_complete || trainer.val_only)) {
    MetricMap val_metrics = validate();
    VERL_LOG(Info, "trainer") << "initial validation: " << format_console_line(val_metrics, global_steps_);
    log(val_metrics);
    if (trainer.val_only) {
      logger_->finish();
      return;
    }
  }

  if (already_complete) {
    VERL_LOG(Info, "trainer") << "training already complete: resumed at step " << global_steps_ << " of "
                              << total_training_steps_ << " (trainer.total_training_steps)";
    logger_->finish();
    return;
  }

  ProgressBar progress("training", total_training_steps_, "", options_.progress_mode);
  progress.advance(global_steps_);
  global_steps_ += 1;  // the first step is 1
  const int64_t n = rollout.sampling.n;

  // DAPO dynamic sampling: kept groups (and the step's timings) carry over generation batches, across epochs.
  const auto& filter_groups = cfg.algorithm.filter_groups;
  DynamicSampler dynamic_sampler(filter_groups, cfg.data.train_batch_size, n);
  MetricMap timing_raw;

  for (int64_t epoch = current_epoch; epoch < trainer.total_epochs; ++epoch) {
    train_dataloader_->start_epoch(epoch);
    while (train_dataloader_->has_next()) {
      MetricMap metrics;
      DataProto batch = train_dataloader_->next();
      batch.meta_info["temperature"] = rollout.sampling.temperature;
      // One uid per prompt; the n responses of a prompt share it (GRPO / RLOO groups).
      std::vector<nlohmann::json> uids;
      for (int64_t i = 0; i < batch.size(); ++i) uids.emplace_back(uid_generator_.next());
      batch.non_tensor_batch["uid"] = std::move(uids);

      DataProto gen_batch = get_gen_batch(batch);
      gen_batch.meta_info = generation_meta(/*validate=*/false, rollout.sampling.do_sample);
      const bool is_last_step = global_steps_ >= total_training_steps_;
      RewardOutput reward;
      std::vector<int64_t> global_token_num;
      int64_t num_gen_batches = 0;
      {
        PhaseTimer step_timer("step", timing_raw);
        DataProto gen_batch_output;
        {
          PhaseTimer timer("gen", timing_raw);
          gen_batch_output = generate_training_rollout(gen_batch.repeat(n, /*interleave=*/true), timing_raw);
        }
        if (cfg.algorithm.adv_estimator == "remax") {
          // ReMax: the greedy response of every prompt (un-repeated) is the reward baseline.
          PhaseTimer timer("gen_max", timing_raw);
          DataProto gen_baseline_batch = gen_batch;
          gen_baseline_batch.meta_info["do_sample"] = false;
          DataProto gen_baseline_output = generate(gen_baseline_batch, timing_raw);
          DataProto baseline_batch = batch;
          baseline_batch.union_rows_with(gen_baseline_output);
          if (use_rm_ && !baseline_batch.has_tensor("rm_scores")) {
            baseline_batch.union_rows_with(rm_wg_->call("compute_rm_score", baseline_batch));
          }
          torch::Tensor baseline = compute_reward(baseline_batch, reward_fn_).reward_tensor.sum(-1);
          batch.batch["reward_baselines"] = baseline;
        }

        batch = batch.repeat(n, /*interleave=*/true);
        batch.union_rows_with(gen_batch_output);
        if (!batch.has_tensor("response_mask")) {
          const int64_t response_length = batch.tensor("responses").size(1);
          batch.batch["response_mask"] = batch.tensor("attention_mask").slice(1, -response_length);
        }
        if (filter_groups.enable) {
          // verl's DAPO recipe: reward (after old/ref log-probs when the KL penalty needs them) on each
          // generation batch, its uniform groups dropped; generate again until train_batch_size groups remain.
          if (cfg.algorithm.use_kl_in_reward) {
            compute_old_log_prob(batch, metrics, timing_raw);
            PhaseTimer timer("ref", timing_raw);
            batch.union_rows_with(ref_policy_wg_->call("compute_ref_log_prob", batch));
          }
          {
            PhaseTimer timer("reward", timing_raw);
            if (use_rm_ && !batch.has_tensor("rm_scores"))
              batch.union_rows_with(rm_wg_->call("compute_rm_score", batch));
            reward = compute_reward(batch, reward_fn_);
          }
          apply_reward(batch, reward, metrics);
          if (!dynamic_sampler.add(batch)) {
            VERL_LOG(Info, "trainer") << "filter_groups: " << dynamic_sampler.num_prompt_in_batch() << " < "
                                      << cfg.data.train_batch_size << " groups after "
                                      << dynamic_sampler.num_gen_batches() << " generation batches; generating more";
            continue;
          }
          num_gen_batches = dynamic_sampler.num_gen_batches();
          batch = dynamic_sampler.take();
          for (auto& [key, values] : reward.reward_extra_info) values = batch.column(key);
        }
        if (trainer.balance_batch) balance_batch(batch, metrics);
        torch::Tensor token_num = batch.tensor("attention_mask").sum(-1).to(torch::kInt64).contiguous();
        global_token_num.assign(token_num.data_ptr<int64_t>(), token_num.data_ptr<int64_t>() + token_num.numel());
        batch.meta_info["global_token_num"] = global_token_num;

        if (!filter_groups.enable) {
          PhaseTimer timer("reward", timing_raw);
          if (use_rm_ && !batch.has_tensor("rm_scores")) {
            batch.union_rows_with(rm_wg_->call("compute_rm_score", batch));
          }
          reward = compute_reward(batch, reward_fn_);
        }
        if (!batch.has_tensor("old_log_probs")) compute_old_log_prob(batch, metrics, timing_raw);
        if (use_reference_policy_ && !batch.has_tensor("ref_log_prob")) {
          PhaseTimer timer("ref", timing_raw);
          batch.union_rows_with(ref_policy_wg_->call("compute_ref_log_prob", batch));
        }
        if (use_teacher_) {
          // verl's teacher loop: the teachers' log-probs of the student's tokens, for the distillation loss.
          PhaseTimer timer("teacher", timing_raw);
          batch.union_rows_with(teacher_wg_->call("compute_teacher_log_prob", batch));
        }
        if (use_critic_) {
          PhaseTimer timer("values", timing_raw);
          batch.union_rows_with(critic_wg_->call("compute_values", batch));
        }
        {
          PhaseTimer timer("adv", timing_raw);
          if (!filter_groups.enable) apply_reward(batch, reward, metrics);
          apply_rollout_correction(batch, metrics);
          compute_advantage(batch);
        }
        if (split_updates_) {
          update_critic_and_actor_overlapped(batch, metrics, timing_raw);
        } else {
          if (use_critic_) {
            PhaseTimer timer("update_critic", timing_raw);
            MetricMap critic_metrics = reduce_worker_metrics(critic_wg_->call("update_critic", batch));
            metrics.insert(critic_metrics.begin(), critic_metrics.end());
          }
          if (trainer.critic_warmup <= global_steps_) {
            PhaseTimer timer("update_actor", timing_raw);
            batch.meta_info["multi_turn"] = false;
            MetricMap actor_metrics = reduce_worker_metrics(actor_rollout_wg_->call("update_actor", batch));
            for (const auto& [key, value] : actor_metrics) metrics[key] = value;  // update-pass entropy wins
          }
        }
        if (rollout_wg_ && trainer.critic_warmup <= global_steps_) {
          PhaseTimer timer("sync_rollout_weights", timing_raw);
          sync_rollout_weights();
        }
        if (trainer.rollout_data_dir) {
          PhaseTimer timer("dump_rollout_generations", timing_raw);
          log_rollout_data(batch, reward.reward_extra_info);
        }
      }

      if (val_reward_fn_ && val_dataloader_ && trainer.test_freq > 0 &&
          (is_last_step || global_steps_ % trainer.test_freq == 0)) {
        MetricMap val_metrics;
        {
          PhaseTimer timer("testing", timing_raw);
          val_metrics = validate();
        }
        metrics.insert(val_metrics.begin(), val_metrics.end());
      }
      if (trainer.save_freq > 0 && (is_last_step || global_steps_ % trainer.save_freq == 0)) {
        // The step's line goes into the checkpoint: a kill after the commit and before log() below loses no line.
        MetricMap line = metrics;
        add_step_metrics(line, batch, timing_raw, global_token_num, epoch, num_gen_batches);
        PhaseTimer timer("save_checkpoint", timing_raw);
        save_checkpoint(line);
      }

      add_step_metrics(metrics, batch, timing_raw, global_token_num, epoch, num_gen_batches);
      timing_raw.clear();
      if (progress.live()) std::cerr << "\r\033[K" << std::flush;  // the console line replaces the bar
      log(metrics);
      progress.advance(1);
      global_steps_ += 1;
      if (is_last_step) {
        progress.finish();
        logger_->finish();
        return;
      }
    }
  }
  progress.finish();
  logger_->finish();
}

}  // namespace verl::trainer
