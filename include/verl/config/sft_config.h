// The typed config of `verl sft` (verl's sft_trainer.yaml): built-in defaults (configs/sft_trainer.yaml)
// -> --config FILE -> key=value overrides -> ${...} resolved -> SFTConfig, with every key read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/config/config_loader.h"
#include "verl/config/config_node.h"
#include "verl/config/ppo_config.h"

namespace verl::config {

struct SFTDataConfig {
  int64_t train_batch_size = 0;
  int64_t micro_batch_size_per_gpu = 0;
  std::vector<std::string> train_files;  // a string or a list in the YAML; `~` expanded
  std::vector<std::string> val_files;
  std::string prompt_key, response_key;
  std::vector<std::string> prompt_dict_keys, response_dict_keys;
  int64_t max_length = 0;
  std::string truncation;  // error | left | right
  int64_t train_max_samples = -1;
  int64_t val_max_samples = -1;
  double chat_template_timeout = 60;  // verl.cpp's own: seconds one chat-template rendering may take (0: none)
};

struct SFTOptimConfig {
  double lr = 0;
  std::vector<double> betas;
  double weight_decay = 0;
  double warmup_steps_ratio = 0;
  double clip_grad = 0;
  std::string lr_scheduler;  // cosine | constant
};

struct SFTTrainerSection {
  std::string default_local_dir;
  std::string project_name, experiment_name;
  int64_t total_epochs = 0;
  std::optional<int64_t> total_training_steps;
  std::vector<std::string> logger;
  int64_t seed = 0;
  int64_t save_freq = -1;
  int64_t test_freq = -1;
  std::optional<int64_t> max_ckpt_to_keep;
  std::optional<int64_t> num_cpu_threads;
  std::string resume_mode = "auto";  // auto | disable | resume_path (verl's fsdp_sft_trainer)
  std::optional<std::string> resume_from_path;
};

struct SFTConfig {
  SFTDataConfig data;
  std::string partial_pretrain;  // model.partial_pretrain: an HF model folder (`~` expanded)
  LoraConfig lora;               // model.lora_rank, lora_alpha, target_modules, exclude_modules (model/lora.h)
  bool enable_gradient_checkpointing = true;  // model.enable_gradient_checkpointing
  // verl's top-level use_remove_padding: the trunk runs over the real tokens only (model/packed_tokens.h).
  bool use_remove_padding = false;
  SFTOptimConfig optim;
  SFTTrainerSection trainer;
};

// `~/x` -> $HOME/x (other paths unchanged).
std::string expand_user_path(const std::string& path);

Node default_sft_config_tree();
SFTConfig parse_sft_config(const Node& resolved);

struct LoadedSFTConfig {
  Node resolved;
  SFTConfig sft;
};
LoadedSFTConfig load_sft_config(const ConfigArgs& args);

}  // namespace verl::config
