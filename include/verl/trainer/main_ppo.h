// verl's main_ppo (TaskRunner.run): everything `verl train` builds before PPOTrainer::fit().
//
//   tokenizer (actor_rollout_ref.model.path) -> reward managers (train: num_examine 0, validation: 1)
//   -> role_worker_mapping + ResourcePoolManager({"global_pool": [n_gpus_per_node] * nnodes})
//      (critic when the estimator needs it or critic.enable; ref when use_kl_in_reward or use_kl_loss;
//       reward model when reward_model.enable)
//   -> datasets and dataloaders -> PPOTrainer(...) -> init_workers() -> fit()
// Every check that needs no weights (batch sizes, data files, model folders, tokenizer vs model vocab) runs
// first, so a misconfiguration fails with one line before any model loads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "verl/config/ppo_config.h"
#include "verl/tokenizer/tokenizer.h"

// Torch-free: the command line (src/cli) includes this header.
namespace verl::trainer {

// Checks that need no weights: batch sizes for the device count, data files exist, model folders have a
// config.json, the tokenizer fits the model's vocabulary. Throws one line naming the key.
void preflight_check(const config::PPOConfig& config, const tokenizer::Tokenizer& tokenizer);

struct PPORunHooks {
  // Every record the trackers log: the initial validation at step 0, then one per training step.
  std::function<void(int64_t step, const std::map<std::string, double>& metrics)> on_log;
};

struct PPORunResult {
  std::string run_dir;  // trainer.default_local_dir: config.yaml, metrics.jsonl, report.html, checkpoints
};

// The whole run. `resolved_yaml` is saved as RUN_DIR/config.yaml. LibTorch's intra-op threads follow
// trainer.num_cpu_threads (runtime/cpu_threads.h), set before the worker threads start.
PPORunResult run_ppo(const config::PPOConfig& config, const std::string& resolved_yaml,
                     const PPORunHooks& hooks = {});

// True when an MPI launcher (mpirun, srun) started this process: `verl train` then runs distributed.
bool launched_as_mpi_job();
// `mpirun -np 1+S verl train ...` (trainer/main_ppo_mpi.cpp): world rank 0 is the controller and runs
// run_ppo with every worker group on the MPI transport; ranks 1..S serve the resource pools' slots. A job of
// one process runs in-process. Returns the exit code; an error on any rank ends the whole job.
int run_ppo_distributed(const config::PPOConfig& config, const std::string& resolved_yaml,
                        const PPORunHooks& hooks = {});

// verl's model merger: an HF model folder from a checkpoint (a global_step_N folder or its actor/ folder). A LoRA
// checkpoint gives PEFT's adapter folder, or with merge_lora the base model with the adapter merged.
void export_actor_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir, bool merge_lora = false);

}  // namespace verl::trainer
