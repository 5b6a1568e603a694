// `verl train [--config FILE] [key=value ...]`: verl's main_ppo.
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/common/logging.h"
#include "verl/config/config_loader.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/main_ppo.h"

namespace verl::cli {

const char* const kTrainUsage =
    "usage: verl train [--config-path DIR --config-name NAME] [--config FILE] [key.path=value ...]\n"
    "\n"
    "A leading `python3 -m verl.trainer.main_ppo` (verl's launch line pasted as is; also `python`) is ignored.\n"
    "PPO-family RL training, verl's main_ppo: the built-in defaults (verl's ppo_trainer.yaml keys), FILE merged\n"
    "over them, then Hydra-style overrides (see verl config show --help). Builds the tokenizer, the reward\n"
    "managers, the datasets, one co-located worker group on trainer.nnodes x trainer.n_gpus_per_node slots\n"
    "(actor+rollout; critic for gae or critic.enable; reference policy for use_kl_in_reward / use_kl_loss;\n"
    "reward model when reward_model.enable) and runs the loop. The run folder trainer.default_local_dir gets\n"
    "config.yaml, metrics.jsonl / report.html / tfevents (trainer.logger) and global_step_N checkpoints;\n"
    "trainer.resume_mode=auto continues from the latest one.\n"
    "\n"
    "Distributed: `mpirun -np 1+S verl train ...` runs the controller on rank 0 and the S = nnodes x\n"
    "n_gpus_per_node device slots on ranks 1..S, one process each (docs/distributed.md).\n"
    "\n"
    "examples:\n"
    "  verl train data.train_files=data/train.parquet data.val_files=data/test.parquet \\\n"
    "      actor_rollout_ref.model.path=models/tiny critic.model.path=models/tiny trainer.n_gpus_per_node=1\n"
    "  verl train --config examples/arithmetic_grpo.yaml trainer.total_training_steps=20\n";

namespace {

// verl's launch line pasted literally: `python3 -m verl.trainer.main_ppo key=value ...` (or `python ...`). The three
// leading tokens are dropped with one info line; the overrides after them are read as usual.
Args strip_verl_launch_prefix(const Args& args) {
  if (args.size() >= 3 && (args[0] == "python3" || args[0] == "python") && args[1] == "-m" &&
      args[2] == "verl.trainer.main_ppo") {
    VERL_LOG(Info, "train") << "ignoring the pasted launch prefix '" << args[0]
                            << " -m verl.trainer.main_ppo'; reading the overrides after it";
    return Args(args.begin() + 3, args.end());
  }
  return args;
}

}  // namespace

int run_train_command(const Args& raw_args) {
  const Args args = strip_verl_launch_prefix(raw_args);
  config::LoadedConfig loaded = config::load_config(config::parse_config_args(args));
  if (trainer::launched_as_mpi_job()) return trainer::run_ppo_distributed(loaded.ppo, config::to_yaml(loaded.resolved));
  trainer::run_ppo(loaded.ppo, config::to_yaml(loaded.resolved));
  return 0;
}

}  // namespace verl::cli
