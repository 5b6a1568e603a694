// PPOTrainer checkpoints (verl's _save_checkpoint / _load_checkpoint, reference spec §11):
//   {default_local_dir}/global_step_N/actor/   written by the actor group (save_checkpoint)
//   {default_local_dir}/global_step_N/critic/  written by the critic group
//   {default_local_dir}/global_step_N/rollout/ a separate rollout's sampling state (hybrid_engine=false)
//   {default_local_dir}/global_step_N/data.json  verl's data.pt: dataloader state, plus the controller's own
//                                                state (uid generator, in-reward KL coefficient)
//   {default_local_dir}/latest_checkpointed_iteration.txt  "N", written last, so a crash mid-save leaves the
//                                                previous checkpoint as the one auto-resume picks.
// Then old checkpoints are rotated out, and trainer.checkpoint_callback_class's on_save is called.
// data.json also keeps step N's metrics line as it stood before the save ("step_metrics", values as exact
// decimal text): a run killed after the commit and before the line reached metrics.jsonl logs it at resume,
// so the history has no hole (timing_s/save_checkpoint is the one metric such a line lacks).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/logging.h"
#include "verl/trainer/checkpoint_paths.h"
#include "verl/trainer/ppo_trainer.h"
#include "verl/trainer/step_metrics_record.h"
#include "verl/trainer/trainer_state.h"

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

DataProto meta_only(nlohmann::json meta) {
  DataProto proto;
  proto.meta_info = std::move(meta);
  return proto;
}

// After rotation: a global_step folder without any role folder left holds only data.json; remove it.
void remove_emptied_step_folders(const std::vector<std::string>& deleted_role_dirs) {
  for (const auto& role_dir : deleted_role_dirs) {
    const fs::path step_dir = fs::path(role_dir).parent_path();
    if (!fs::is_directory(step_dir)) continue;
    bool has_subfolder = false;
    for (const auto& entry : fs::directory_iterator(step_dir)) has_subfolder = has_subfolder || entry.is_directory();
    if (!has_subfolder) fs::remove_all(step_dir);
  }
}

}  // namespace

void PPOTrainer::save_checkpoint(const algo::MetricMap& step_metrics) {
  const auto& trainer = config_->trainer;
  const std::string step_dir = global_step_dir(trainer.default_local_dir, global_steps_);
  fs::create_directories(step_dir);
  VERL_LOG(Info, "trainer") << "saving checkpoint " << step_dir;

  nlohmann::json actor_meta = {{"local_path", (fs::path(step_dir) / "actor").string()},
                               {"global_step", global_steps_}};
  if (trainer.max_actor_ckpt_to_keep) actor_meta["max_ckpt_to_keep"] = *trainer.max_actor_ckpt_to_keep;
  actor_rollout_wg_->call("save_checkpoint", meta_only(actor_meta));
  if (rollout_wg_) {  // a separate rollout: its sampling state (its weights are the actor's)
    rollout_wg_->call("save_checkpoint", meta_only({{"local_path", (fs::path(step_dir) / "rollout").string()},
                                                    {"global_step", global_steps_}}));
  }
  if (use_critic_) {
    nlohmann::json critic_meta = {{"local_path", (fs::path(step_dir) / "critic").string()},
                                  {"global_step", global_steps_}};
    if (trainer.max_critic_ckpt_to_keep) critic_meta["max_ckpt_to_keep"] = *trainer.max_critic_ckpt_to_keep;
    critic_wg_->call("save_checkpoint", meta_only(critic_meta));
  }

  nlohmann::json state = {{"format", "verl.cpp trainer state"},
                          {"version", kTrainerStateVersion},
                          {"global_step", global_steps_},
                          {"dataloader", train_dataloader_->state_dict()},
                          {"uid_generator", uid_generator_.state()}};
  if (kl_ctrl_in_reward_) state["kl_ctrl_in_reward"] = kl_ctrl_in_reward_->value();
  if (!step_metrics.empty()) state["step_metrics"] = step_metrics_record(step_metrics);
  write_file_atomic((fs::path(step_dir) / "data.json").string(), state.dump(1) + "\n");

  write_latest_tracker(trainer.default_local_dir, global_steps_);
  if (rollout_wg_) rotate_checkpoints(trainer.default_local_dir, "rollout", trainer.max_actor_ckpt_to_keep);
  remove_emptied_step_folders(rotate_checkpoints(trainer.default_local_dir, "actor", trainer.max_actor_ckpt_to_keep));
  if (use_critic_) {
    remove_emptied_step_folders(
        rotate_checkpoints(trainer.default_local_dir, "critic", trainer.max_critic_ckpt_to_keep));
  }
  if (options_.on_checkpoint_saved) options_.on_checkpoint_saved(global_steps_, step_dir);
}

void PPOTrainer::load_checkpoint() {
  const auto& trainer = config_->trainer;
  std::optional<std::string> folder =
      resolve_resume_path(trainer.resume_mode, trainer.default_local_dir, trainer.resume_from_path);
  if (!folder) {
    VERL_LOG(Info, "trainer") << "training from scratch";
    return;
  }
  global_steps_ = global_step_from_path(*folder);
  VERL_LOG(Info, "trainer") << "resuming from " << *folder << " (global step " << global_steps_ << ")";

  const fs::path actor_path = fs::path(*folder) / "actor";
  VERL_CHECK(fs::is_directory(actor_path), "checkpoint", "'", *folder, "' has no actor checkpoint (", actor_path.string(),
             ")");
  actor_rollout_wg_->call("load_checkpoint", meta_only({{"local_path", actor_path.string()},
                                                        {"del_local_after_load", trainer.del_local_ckpt_after_load}}));
  if (rollout_wg_) {
    const fs::path rollout_path = fs::path(*folder) / "rollout";
    VERL_CHECK(fs::is_directory(rollout_path), "checkpoint", "'", *folder, "' has no rollout checkpoint but this "
               "run has a separate rollout (actor_rollout_ref.hybrid_engine=false)");
    rollout_wg_->call("load_checkpoint", meta_only({{"local_path", rollout_path.string()}}));
  }
  if (use_critic_) {
    const fs::path critic_path = fs::path(*folder) / "critic";
    VERL_CHECK(fs::is_directory(critic_path), "checkpoint", "'", *folder,
               "' has no critic checkpoint but this run uses a critic");
    critic_wg_->call("load_checkpoint", meta_only({{"local_path", critic_path.string()},
                                                   {"del_local_after_load", trainer.del_local_ckpt_after_load}}));
  }

  const fs::path state_path = fs::path(*folder) / "data.json";
  if (!fs::exists(state_path)) {
    VERL_LOG(Warn, "trainer") << "no dataloader state at " << state_path.string() << "; the data order restarts";
    return;
  }
  const nlohmann::json state = read_trainer_state(state_path.string());  // types checked, errors name the key
  train_dataloader_->load_state_dict(state["dataloader"]);
  if (state.contains("uid_generator")) uid_generator_.load_state(state["uid_generator"].get<std::string>());
  if (kl_ctrl_in_reward_ && state.contains("kl_ctrl_in_reward")) {
    kl_ctrl_in_reward_->set_value(state["kl_ctrl_in_reward"].get<double>());
  }
  relog_step_metrics(state, state_path.string());
}

// The checkpointed step's metrics line, when metrics.jsonl does not have it (the run was killed between the
// checkpoint commit and that line).
void PPOTrainer::relog_step_metrics(const nlohmann::json& state, const std::string& state_path) {
  if (!logger_) return;
  const auto line = unlogged_step_metrics(state, state_path, config_->trainer.logger, run_dir_, global_steps_);
  if (!line) return;
  VERL_LOG(Info, "trainer") << "step " << global_steps_ << "'s metrics were not in " << run_dir_
                            << "/metrics.jsonl (the run stopped right after its checkpoint); logging them from "
                            << state_path;
  log(*line);
}

}  // namespace verl::trainer
