// verl's per-rank checkpoint layout for a worker folder (".../global_step_N/actor" or ".../critic"):
//   model_world_size_{W}_rank_{r}.safetensors   parameters by HF name (fp32, exact)
//   optim_world_size_{W}_rank_{r}.pt            optimizer state (save_optimizer_state)
//   extra_state_world_size_{W}_rank_{r}.json    {"lr_scheduler": ..., "rng": ...}
//   huggingface/                                config.json, generation_config.json, tokenizer files
//                                               (+ model.safetensors when "hf_model" is saved)
// Shared by the workers that save checkpoints; the folder itself is written through StagedDirectory.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"
#include "verl/workers/checkpoint_rank_files.h"  // file names, world-size check, extra state

namespace verl::parallel {
class Comm;
}

namespace verl::workers {

// Parameters by name, exactly (no dtype change), into a safetensors file written atomically.
void save_module_state(model::CausalLM& module, const std::string& path);
// Copies a file written by save_module_state into the parameters; a missing, extra or reshaped tensor is an
// error naming it and the file.
void load_module_state(model::CausalLM& module, const std::string& path);
// This rank's model file: the module's parameters, or under ZeRO-3 (`sharded` set) this rank's shards
// (FullyShardedModel::save_shard_state). Loading checks that the file holds what this run keeps: a shard file
// without ZeRO-3, or whole parameters with it, is an error naming the file and the key.
void save_model_file(model::CausalLM& module, const model::FullyShardedModel* sharded, const std::string& path);
void load_model_file(model::CausalLM& module, model::FullyShardedModel* sharded, const std::string& path);

// Copies the tokenizer files that exist in `from_dir` (tokenizer.json, tokenizer_config.json, ...) into
// `to_dir`; returns how many were copied (0 when the folder has none or does not exist).
int copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir);

// Writes `dir`/huggingface: config.json and generation_config.json of the module (a value-head module is
// saved as <Family>ForTokenClassification), the tokenizer files of `tokenizer_dir`, and the weights as
// model.safetensors when `with_weights`.
void save_hf_folder(model::CausalLM& module, const std::string& dir, const std::string& tokenizer_dir,
                    bool with_weights);

// Writes one worker folder from every rank of a group, published only when complete. Rank 0 stages it and
// `write(dir)` runs on each rank. With a communicator (ranks in separate processes, running at the same
// time), the staged path is broadcast, every rank writes into it, all meet at a barrier and rank 0
// publishes. Without one (in-process ranks, called rank by rank), rank 0 publishes and the later ranks add
// their files to the published folder.
void save_rank_folder(const std::string& local_path, int rank, parallel::Comm* comm,
                      const std::function<void(const std::filesystem::path& dir)>& write);

}  // namespace verl::workers
