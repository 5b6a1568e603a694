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

constexpr const char* kComponent = "checkpoint";

std::string rank_suffix(int world_size, int rank) {
  return "world_size_" + std::to_string(world_size) + "_rank_" + std::to_string(rank);
}

}  // namespace

std::string model_file_name(int world_size, int rank) { return "model_" + rank_suffix(world_size, rank) + ".safetensors"; }
std::string optim_file_name(int world_size, int rank) { return "optim_" + rank_suffix(world_size, rank) + ".pt"; }
std::string extra_state_file_name(int world_size, int rank) {
  return "extra_state_" + rank_suffix(world_size, rank) + ".json";
}

std::string expand_user(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  if (path.size() > 1 && path[1] != '/') return path;  // ~user: left as is
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return path;
  return std::string(home) + path.substr(1);
}

void check_checkpoint_rank_file(const std::string& dir, const std::string& file_name, int world_size) {
  VERL_CHECK(fs::is_directory(dir), kComponent, "checkpoint folder '", dir, "' does not exist");
  if (fs::exists(fs::path(dir) / file_name)) return;
  // Name the world size the folder was saved with, if any rank file is there.
  const std::string marker = "_world_size_";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto at = name.find(marker);
    if (at == std::string::npos) continue;
    auto end = name.find("_rank_", at);
    if (end == std::string::npos) continue;
    const std::string saved = name.substr(at + marker.size(), end - at - marker.size());
    VERL_FAIL(kComponent, "checkpoint folder '", dir, "' was saved with world size ", saved, " (", name,
              "); this run has world size ", world_size, ": resume needs the same world size");
  }
  VERL_FAIL(kComponent, "checkpoint folder '", dir, "' has no '", file_name, "'");
}

void save_module_state(model::CausalLM& module, const std::string& path) {
  model::NamedTensors tensors;
  for (const auto& item : module->named_parameters()) tensors.emplace_back(item.key(), item.value().detach());
  model::save_tensors(path, tensors);
}

void load_module_state(model::CausalLM& module, const std::string& path) {
  VERL_CHECK(fs::exists(path), kComponent, "model state file '", path, "' does not exist");
  std::map<std::string, torch::Tensor> saved;
  for (auto& [name, tensor] : model::load_tensors(path)) saved.emplace(name, tensor);
  torch::NoGradGuard no_grad;
  auto params = module->named_parameters();
  std::set<std::string> names;
  for (auto& item : params) {
    const std::string& name = item.key();
    names.insert(name);
    auto it = saved.find(name);
    VERL_CHECK(it != saved.end(), kComponent, "model state file '", path, "' lacks tensor '", name, "'");
    VERL_CHECK(it->second.sizes() == item.value().sizes(), kComponent, "tensor '", name, "' in '", path, "' has shape ",
               it->second.sizes(), ", the model expects ", item.value().sizes());
    item.value().copy_(it->second.to(item.value().scalar_type()));
  }
  for (const auto& [name, tensor] : saved) {
    VERL_CHECK(names.count(name) > 0, kComponent, "model state file '", path, "' has tensor '", name,
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
  VERL_CHECK(fs::exists(path), kComponent, "model state file '", path, "' does not exist");
  verify_file_digest(path, kComponent);  // safetensors carry no checksum: a flipped byte would load as a weight
  if (sharded != nullptr) {
    sharded->load_shard_state(path);
    return;
  }
  VERL_CHECK(!model::is_shard_state_file(path), kComponent, "model state file '", path,
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
    VERL_CHECK(fs::is_directory(dir), kComponent, "checkpoint folder '", local_path, "' was not created by rank 0");
  }
  write(dir);
  if (staged) staged->commit();
}

nlohmann::json load_extra_state(const std::string& dir, int world_size, int rank, const char* component) {
  check_checkpoint_rank_file(dir, extra_state_file_name(world_size, rank), world_size);
  const std::string path = (std::filesystem::path(dir) / extra_state_file_name(world_size, rank)).string();
  std::ifstream in(path);
  VERL_CHECK(in.good(), component, "cannot read '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), path);
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL(component, "'", path, "' is not valid JSON: ", e.what());
  }
}

}  // namespace verl::workers
