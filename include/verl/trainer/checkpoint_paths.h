// verl's checkpoint folder layout (reference spec section 11) and the rules that find what to resume:
//   {default_local_dir}/global_step_{N}/actor/ ...  critic/ ...  data.pt (dataloader state)
//   {default_local_dir}/latest_checkpointed_iteration.txt   -> "N"
// resume_mode: auto (latest if any, else scratch), disable (scratch), resume_path (trainer.resume_from_path,
// which must name a global_step_N folder).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace verl::trainer {

std::string global_step_dir(const std::string& default_local_dir, int64_t step);
std::string latest_tracker_path(const std::string& default_local_dir);

// N from ".../global_step_N" (trailing slash allowed); an error naming the path otherwise.
int64_t global_step_from_path(const std::string& path);

// The folder named by latest_checkpointed_iteration.txt, or nullopt when there is no tracker. A tracker that
// is unreadable or names a missing folder is an error (a checkpoint was expected and is not there).
std::optional<std::string> find_latest_checkpoint(const std::string& default_local_dir);

// The checkpoint folder a run starts from, or nullopt to start from scratch.
std::optional<std::string> resolve_resume_path(const std::string& resume_mode, const std::string& default_local_dir,
                                               const std::optional<std::string>& resume_from_path);

// Records `step` as the latest complete checkpoint (atomic write).
void write_latest_tracker(const std::string& default_local_dir, int64_t step);

// Keeps the newest `keep` global_step_*/{role} folders and deletes older ones (an emptied global_step_N
// folder goes too). keep = nullopt or <= 0 keeps everything. Returns the deleted role folders.
std::vector<std::string> rotate_checkpoints(const std::string& default_local_dir, const std::string& role,
                                            std::optional<int64_t> keep);

}  // namespace verl::trainer
