#include "verl/workers/checkpoint_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <set>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/file_digest.h"
#include "verl/common/input_limits.h"
#include "verl/model/hf_config.h"
#include "verl/model/weights.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointFilesComponent = "checkpoint";

}  // namespace

void save_module_state(model::CausalLM& module, const std::string& path) {
  model::NamedTensors tensors;
  for (const auto& item : module->named_parameters()) tensors.emplace_back(item.key(), item.value().detach());
  model::save_tensors(path, tensors);
}

void load_module_state(model::CausalLM& module, const std::string& path) {
  VERL_CHECK(fs::exists(path), kCheckpointFilesComponent, "model state file '", path, "' does not exist");
  std::map<std::string, torch::Tensor> saved;
  for (auto& [name, tensor] : model::load_tensors(path)) saved.emplace(name, tensor);
  torch::NoGradGuard no_grad;
  auto params = module->named_parameters();
  std::set<std::string> names;
  for (auto& item : params) {
    const std::string& name = item.key();
    names.insert(name);
    auto it = saved.find(name);
    VERL_CHECK(it != saved.end(), kCheckpointFilesComponent, "model state file '", path, "' lacks tensor '", name, "'");
    VERL_CHECK(it->second.sizes() == item.value().sizes(), kCheckpointFilesComponent, "tensor '", name, "' in '", path,
               "' has shape ", it->second.sizes(), ", the model expects ", item.value().sizes());
    item.value().copy_(it->second.to(item.value().scalar_type()));
  }
  for (const auto& [name, tensor] : saved) {
    VERL_CHECK(names.count(name) > 0, kCheckpointFilesComponent, "model state file '", path, "' has tensor '", name,
               "' that the model does not have");
  }
}

void save_model_file(model::CausalLM& module, const model::FullyShardedModel* sharded, const std::string& path) {
  if (sharded != nullptr) {
    sharded->save_shard_state(path);
  } else {
    save_module_state(module, path);
  }
  write_file_digest(path);
}

void load_model_file(model::CausalLM& module, model::FullyShardedModel* sharded, const std::string& path) {
  VERL_CHECK(fs::exists(path), kCheckpointFilesComponent, "model state file '", path, "' does not exist");
  verify_file_digest(
      path, kCheckpointFilesComponent);  // safetensors carry no checksum: a flipped byte would load as a weight
  if (sharded != nullptr) {
    sharded->load_shard_state(path);
    return;
  }
  VERL_CHECK(!model::is_shard_state_file(path), kCheckpointFilesComponent, "model state file '", path,
             "' holds ZeRO-3 shards (saved with fsdp_config.reshard_after_forward=true); resume with "
             "reshard_after_forward=true and the same number of ranks");
  load_module_state(module, path);
}

int copy_tokenizer_files(const std::string& from_dir, const std::string& to_dir) {
  if (from_dir.empty() || !fs::is_directory(from_dir)) return 0;
  int copied = 0;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                           "merges.txt", "tokenizer.model", "added_tokens.json", "chat_template.jinja"}) {
    const fs::path src = fs::path(from_dir) / name;
    if (!fs::exists(src)) continue;
    fs::create_directories(to_dir);
    fs::copy_file(src, fs::path(to_dir) / name, fs::copy_options::overwrite_existing);
    ++copied;
  }
  return copied;
}

void save_hf_folder(model::CausalLM& module, const std::string& dir, const std::string& tokenizer_dir,
                    bool with_weights) {
  const std::string hf_dir = (fs::path(dir) / "huggingface").string();
  fs::create_directories(hf_dir);
  if (with_weights) {
    model::save_model(module, hf_dir);
  } else {
    model::HFConfig config = module->config;
    config.token_classification = module->head == model::HeadKind::Value;
    model::save_hf_config(config, hf_dir);
    model::save_generation_config(config, hf_dir);
  }
  copy_tokenizer_files(tokenizer_dir, hf_dir);
}

void save_rank_folder(const std::string& local_path, int rank, parallel::Comm* comm,
                      const std::function<void(const fs::path& dir)>& write) {
  std::unique_ptr<StagedDirectory> staged;
  std::string dir = local_path;
  if (rank == 0) {
    fs::create_directories(fs::path(local_path).parent_path());
    staged = std::make_unique<StagedDirectory>(local_path);
    dir = staged->path();
  }
  if (comm != nullptr && comm->size() > 1) {
    comm->broadcast_bytes(dir, 0);
    write(dir);
    comm->barrier();  // every rank's files are in the staged folder
    if (staged) staged->commit();
    return;
  }
  if (!staged) {
    VERL_CHECK(fs::is_directory(dir), kCheckpointFilesComponent, "checkpoint folder '", local_path,
               "' was not created by rank 0");
  }
  write(dir);
  if (staged) staged->commit();
}

}  // namespace verl::workers
