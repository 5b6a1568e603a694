// The torch-free part of a worker checkpoint folder (checkpoint_files.h has the tensor state): verl's per-rank
// file names, the world-size check and the extra-state reader. Kept apart so the fuzz harness of checkpoint
// metadata (fuzz/fuzz_checkpoint_metadata.cpp) runs the same readers without the model code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace verl::workers {

std::string model_file_name(int world_size, int rank);
std::string optim_file_name(int world_size, int rank);
std::string extra_state_file_name(int world_size, int rank);

// "~" and "~/..." expanded with $HOME (Python's os.path.expanduser for the current user).
std::string expand_user(const std::string& path);

// Errors, naming the folder, when `dir` does not exist or lacks this rank's file for `world_size` while
// holding files of another world size ("saved with world size 2, this run has 1").
void check_checkpoint_rank_file(const std::string& dir, const std::string& file_name, int world_size);

// This rank's extra_state_world_size_{W}_rank_{r}.json in `dir` (check_checkpoint_rank_file first), parsed; an
// unreadable file or invalid JSON is an error under `component` naming the file. Callers check the keys.
nlohmann::json load_extra_state(const std::string& dir, int world_size, int rank, const char* component);

// extra["rng"][generator], the hex text of a saved generator state; an error naming `path` and the key when the
// file lacks it or holds another JSON type there.
std::string extra_state_rng(const nlohmann::json& extra, const std::string& generator, const std::string& path,
                            const char* component);

}  // namespace verl::workers
