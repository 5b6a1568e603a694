// PPOTrainer: verl's RayPPOTrainer, the single controller of PPO-family training (reference spec §2).
// It owns the dataloader, the step loop, reward shaping, advantages, metrics and checkpoints; everything
// heavy is a call into a worker group:
//
//   PPOTrainer trainer(config, tokenizer, role_worker_mapping, resource_pool_manager,
//                      reward_fn, val_reward_fn, train_dataloader, val_dataloader);
//   trainer.init_workers();   // one co-located worker group per resource pool, per-role views spawned from it
//   trainer.fit();            // verl's fit(): generate -> reward -> old log-prob -> ref -> values -> KL ->
//                             // advantages -> update_critic -> update_actor -> validate -> checkpoint -> log
//
// Shapes: B responses (= prompts x rollout.n), P prompt length, R response length.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/kl_controller.h"
#include "verl/algo/metrics.h"
#include "verl/common/progress.h"
#include "verl/config/ppo_config.h"
#include "verl/protocol/data_proto.h"
#include "verl/single_controller/resource_pool.h"
#include "verl/single_controller/role.h"
#include "verl/single_controller/transport.h"
#include "verl/single_controller/worker_group.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/trainer/balance_batch.h"
#include "verl/trainer/rollout_skip.h"
#include "verl/trainer/tracking.h"
#include "verl/trainer/uid_generator.h"

namespace verl::trainer {

using protocol::DataProto;
using single_controller::Role;

// verl's reward_fn(batch, return_dict=True).
struct RewardOutput {
  torch::Tensor reward_tensor;                                            // (B, R) fp32
  std::map<std::string, std::vector<nlohmann::json>> reward_extra_info;  // per-row values
};
using RewardFn = std::function<RewardOutput(const DataProto&)>;

// What the trainer needs of a dataloader (verl's StatefulDataLoader): batches of collated prompts
// (input_ids, attention_mask, position_ids (n, P) + the dataset's non-tensor columns) and a resumable state.
class PromptDataLoader {
 public:
  virtual ~PromptDataLoader() = default;
  virtual int64_t batches_per_epoch() const = 0;  // len(dataloader)
  virtual void start_epoch(int64_t epoch) = 0;    // keeps the position when resuming into the same epoch
  virtual bool has_next() const = 0;
  virtual DataProto next() = 0;
  virtual nlohmann::json state_dict() const = 0;
  virtual void load_state_dict(const nlohmann::json& state) = 0;
};

// Role -> the factory of its worker (verl's role_worker_mapping of Role -> worker class).
using RoleWorkerMapping = std::map<Role, single_controller::WorkerFactory>;

// The roles each resource pool's co-located worker hosts, as (method prefix, factory) in verl's init order
// (actor_rollout, critic, ref, rm); the controller and, under MPI, the worker ranks build the same list.
using PoolRoles = std::map<std::string, std::vector<std::pair<std::string, single_controller::WorkerFactory>>>;
PoolRoles colocated_roles(const RoleWorkerMapping& mapping, const single_controller::ResourcePoolManager& pools);

// Builds the transport of one worker group (one per resource pool). Default: InProcessTransport.
using TransportFactory = std::function<std::shared_ptr<single_controller::Transport>(
    const std::string& group_name, int world_size, const single_controller::WorkerFactory& factory)>;

struct PPOTrainerOptions {
  std::string run_dir;           // metrics.jsonl, report.html, config.yaml; empty: trainer.default_local_dir
  std::string config_yaml;       // the resolved config, saved as RUN_DIR/config.yaml (empty: not saved)
  TransportFactory transport_factory;
  PartitionFn seqlen_partitioner;  // Karmarkar-Karp; required when trainer.balance_batch is on
  std::function<int64_t(int64_t)> sequence_workload;  // default: 24576 * L + L * L
  std::ostream* console_out = nullptr;                // console logger and generation logs (default stdout)
  ProgressBar::Mode progress_mode = ProgressBar::Mode::Auto;
  // Called with every record the trackers log (the initial validation at step 0, then one per step), after
  // the trackers: lets a caller follow a run (`verl demo` prints a short line per step) without a backend.
  std::function<void(int64_t step, const algo::MetricMap& metrics)> on_log;
  // Called after each complete checkpoint (trainer.checkpoint_callback_class: trainer/checkpoint_callback.h); an
  // exception it throws ends the run.
  std::function<void(int64_t global_step, const std::string& checkpoint_dir)> on_checkpoint_saved;
};

// verl's need_critic: critic.enable when set, else adv_estimator == "gae".
bool need_critic(const config::PPOConfig& config);
// algorithm.use_kl_in_reward or actor.use_kl_loss.
bool need_reference_policy(const config::PPOConfig& config);
// verl's _validate_config plus the worker-side batch-size normalisation checks, for `n_gpus` devices.
// Throws one line naming the keys and values that do not fit. Needs no weights, so main_ppo runs it first.
void validate_ppo_config(const config::PPOConfig& config, int64_t n_gpus);
// trainer.split_placement needs a critic and slots that halve (by GPUs per node, else by nodes).
void check_split_placement(const config::PPOConfig& config);

class PPOTrainer {
 public:
  // `config` is shared with the worker factories: the constructor writes total_training_steps into
  // actor/critic optim before init_workers() builds the workers (as verl does).
  PPOTrainer(std::shared_ptr<config::PPOConfig> config, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
             RoleWorkerMapping role_worker_mapping, single_controller::ResourcePoolManager resource_pool_manager,
             RewardFn reward_fn, RewardFn val_reward_fn, std::shared_ptr<PromptDataLoader> train_dataloader,
             std::shared_ptr<PromptDataLoader> val_dataloader, PPOTrainerOptions options = {});
  ~PPOTrainer();
  PPOTrainer(const PPOTrainer&) = delete;
  PPOTrainer& operator=(const PPOTrainer&) = delete;

  // Spawns one co-located worker group per resource pool and the per-role views; init_model on the
  // critic, ref and reward model first and on the actor last.
  void init_workers();
  // The training loop; returns after the last step (or after validation when trainer.val_only).
  void fit();

  int64_t total_training_steps() const { return total_training_steps_; }
  int64_t global_steps() const { return global_steps_; }
  bool use_critic() const { return use_critic_; }
  bool use_reference_policy() const { return use_reference_policy_; }
  bool use_rm() const { return use_rm_; }
  const std::string& run_dir() const { return run_dir_; }

 private:
  DataProto get_gen_batch(DataProto& batch) const;
  nlohmann::json generation_meta(bool validate, bool do_sample) const;
  DataProto generate(const DataProto& gen_batch, algo::MetricMap& timing_raw);
  // The step's training rollout: generate(), or skip.rollout's dump of it (trainer/rollout_skip.h), once per step
  // (DAPO's further generation batches of the step generate).
  DataProto generate_training_rollout(const DataProto& gen_batch, algo::MetricMap& timing_raw);
  RewardOutput compute_reward(DataProto& batch, const RewardFn& reward_fn);
  void balance_batch(DataProto& batch, algo::MetricMap& metrics);
  void compute_advantage(DataProto& batch) const;  // + PF-PPO resampling after GAE (algorithm.use_pf_ppo)
  void apply_rollout_correction(DataProto& batch, algo::MetricMap& metrics) const;
  void compute_old_log_prob(DataProto& batch, algo::MetricMap& metrics, algo::MetricMap& timing_raw);
  void apply_reward(DataProto& batch, const RewardOutput& reward, algo::MetricMap& metrics);
  void sync_rollout_weights();
  std::map<std::string, single_controller::WorkerFactory> with_in_process_weight_sync(
      std::map<std::string, single_controller::WorkerFactory> pool_factories);
  void update_critic_and_actor_overlapped(DataProto& batch, algo::MetricMap& metrics, algo::MetricMap& timing_raw);
  algo::MetricMap validate();
  void maybe_log_val_generations(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                 const std::vector<double>& scores);
  void dump_generations(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::vector<nlohmann::json>& gts, const std::vector<double>& scores,
                        const std::map<std::string, std::vector<nlohmann::json>>& extra,
                        const std::string& dump_path) const;
  void log_rollout_data(const DataProto& batch, const std::map<std::string, std::vector<nlohmann::json>>& extra);
  void log(const algo::MetricMap& metrics);  // the trackers, then options_.on_log, at global_steps_
  // save_checkpoint keeps `step_metrics` (the step's metrics line as it stands before the save) in data.json;
  // load_checkpoint logs it again when metrics.jsonl lacks that step (killed between checkpoint and log line).
  void save_checkpoint(const algo::MetricMap& step_metrics = {});
  void load_checkpoint();
  void relog_step_metrics(const nlohmann::json& state, const std::string& state_path);
  // Step metrics the fit loop adds last (global_step, epoch, data, timing and throughput metrics).
  void add_step_metrics(algo::MetricMap& metrics, const DataProto& batch, const algo::MetricMap& timing_raw,
                        const std::vector<int64_t>& global_token_num, int64_t epoch, int64_t num_gen_batches) const;
  std::string decode(const torch::Tensor& ids) const;

  std::shared_ptr<config::PPOConfig> config_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  RoleWorkerMapping role_worker_mapping_;
  single_controller::ResourcePoolManager resource_pool_manager_;
  RewardFn reward_fn_;
  RewardFn val_reward_fn_;
  std::shared_ptr<PromptDataLoader> train_dataloader_;
  std::shared_ptr<PromptDataLoader> val_dataloader_;
  PPOTrainerOptions options_;

  bool use_critic_ = false;
  bool use_reference_policy_ = false;
  bool use_rm_ = false;
  bool use_teacher_ = false;  // distillation.enabled: Role::TeacherModel scores the responses
  bool split_updates_ = false;  // critic and actor on different pools: updates overlap
  bool in_process_ = false;     // workers in this process (no transport factory given)
  int64_t total_training_steps_ = 0;
  int64_t global_steps_ = 0;
  int64_t val_passes_ = 0;
  std::string run_dir_;
  std::unique_ptr<algo::KLController> kl_ctrl_in_reward_;
  UidGenerator uid_generator_;
  std::optional<RolloutSkip> rollout_skip_;  // skip.rollout.enable
  int64_t rollout_skip_step_ = 0;            // the last step skip.rollout handled

  std::map<std::string, single_controller::WorkerGroup> all_wg_;
  std::optional<single_controller::WorkerGroup> actor_rollout_wg_;
  std::optional<single_controller::WorkerGroup> rollout_wg_;  // a separate Rollout role (hybrid_engine=false)
  std::optional<single_controller::WorkerGroup> critic_wg_;
  std::optional<single_controller::WorkerGroup> ref_policy_wg_;
  std::optional<single_controller::WorkerGroup> rm_wg_;
  std::optional<single_controller::WorkerGroup> teacher_wg_;
  std::unique_ptr<Tracking> logger_;
};

}  // namespace verl::trainer
