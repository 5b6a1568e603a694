// The typed config of `verl sft` (verl's sft_trainer.yaml): built-in defaults (configs/sft_trainer.yaml)
// -> --config FILE -> key=value overrides -> ${...} resolved -> SFTConfig, with every key read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

  // verl 0.9.1's sft_trainer (MultiTurnSFTDataset, data/multiturn_sft.h): each row is a conversation.
  bool multiturn = false;
  std::string messages_key = "messages", tools_key = "tools", enable_thinking_key = "enable_thinking";
  std::optional<bool> enable_thinking_default;  // verl's value by Python truthiness; nullopt: not passed
  nlohmann::ordered_json apply_chat_template_kwargs = nlohmann::ordered_json::object();
  bool ignore_input_ids_mismatch = false;
  // right: rows over max_length are truncated by `truncation`; no_padding (verl's sft_trainer default): cut at the
  // right whatever `truncation` says (error still errs), as verl's dataset does.
  std::string pad_mode = "right";
  bool use_dynamic_bsz = false;  // micro-batches by max_token_len_per_gpu tokens instead of rows
  int64_t max_token_len_per_gpu = 0;
};

// How a step's loss is normalised: verl's fsdp_sft_trainer averages each micro-batch's tokens and the micro-batches
// (MicroBatchMean); verl 0.9.1's sft_trainer divides every token's loss by the batch's loss-token count
// (BatchTokenMean, verl.workers.utils.losses.sft_loss), so the micro-batch split does not change the loss.
enum class SFTLossNormalization { MicroBatchMean, BatchTokenMean };

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
  std::string device = "cpu";  // trainer.device (sft_trainer layout): verl sft trains on the CPU only
  static constexpr int64_t kAfterEachEpoch = -2;  // save_freq / test_freq "after_each_epoch" (sft_trainer layout)
  // The data order: each epoch a permutation seeded by shuffle_seed + epoch. verl's samplers take no seed (0);
  // fsdp_sft_trainer's layout (verl.cpp's older behaviour) seeds it with trainer.seed.
  int64_t shuffle_seed = 0;
};

// Which of verl's two SFT trainers the config is laid out for (`verl sft --config-name`).
enum class SFTLayout {
  FsdpSFTTrainer,  // configs/sft_trainer.yaml: verl's fsdp_sft_trainer (prompt / response columns)
  SFTTrainer,      // configs/sft_trainer_engine.yaml: verl 0.9.1's sft_trainer (conversations)
};

struct SFTConfig {
  SFTLayout layout = SFTLayout::FsdpSFTTrainer;
  SFTDataConfig data;
  std::string partial_pretrain;  // model.partial_pretrain (model.path): an HF model folder (`~` expanded)
  // model.tokenizer_path / hf_config_path (sft_trainer layout, verl's HFModelConfig): the tokenizer and config.json
  // from folders apart from the weights' (empty: partial_pretrain).
  std::string tokenizer_path;
  std::string hf_config_path;
  std::optional<std::string> custom_chat_template;                    // model.custom_chat_template (sft_trainer layout)
  model::HFConfigOverrides override_config{"model.override_config"};  // (sft_trainer layout)
  LoraConfig lora;               // model.lora_rank, lora_alpha, target_modules, exclude_modules (model/lora.h)
  bool enable_gradient_checkpointing = true;  // model.enable_gradient_checkpointing
  // verl's top-level use_remove_padding: the trunk runs over the real tokens only (model/packed_tokens.h).
  bool use_remove_padding = false;
  // Under mpirun: the ranks sharing each row, each running 1/sp of its sequence (ulysses_sequence_parallel_size;
  // engine.ulysses_sequence_parallel_size). The rest of the world size is data parallel.
  int64_t ulysses_sequence_parallel_size = 1;
  // data.balance_dp_token (fsdp_sft_trainer layout): a micro-batch's loss over its loss tokens summed over the
  // data-parallel ranks, times their count, instead of over its own.
  bool balance_dp_token = false;
  // Under mpirun, the ranks each optimizer-state shard group spans (engine.fsdp_size; -1: all of them, verl's FSDP
  // default and the fsdp_sft_trainer layout's; 1: whole replicas).
  int64_t fsdp_size = -1;
  // The optimizer and LR schedule as built (optim.* of the sft_trainer layout; the fsdp_sft_trainer layout's
  // optim keys mapped onto it). total_training_steps is set by the trainer.
  OptimConfig optimizer;
  double clip_grad = 0;  // optim.clip_grad: the gradient norm clipped to
  SFTLossNormalization loss_normalization = SFTLossNormalization::MicroBatchMean;
  // Validation batches: rows each (fsdp_sft_trainer: micro_batch_size_per_gpu; sft_trainer: train_batch_size).
  int64_t val_batch_size = 0;
  SFTTrainerSection trainer;

  const std::string& tokenizer_dir() const { return tokenizer_path.empty() ? partial_pretrain : tokenizer_path; }
  const std::string& hf_config_dir() const { return hf_config_path.empty() ? partial_pretrain : hf_config_path; }
};

// `~/x` -> $HOME/x (other paths unchanged).
std::string expand_user_path(const std::string& path);

Node default_sft_config_tree();
SFTConfig parse_sft_config(const Node& resolved);

struct LoadedSFTConfig {
  Node resolved;
  SFTConfig sft;
};
// `--config-name` picks the layout: sft_trainer (the default) or sft_trainer_engine.
LoadedSFTConfig load_sft_config(const ConfigArgs& args);

// The sft_trainer layout (src/config/sft_engine_config.cpp): its built-in defaults, and the typed config of a
// resolved tree composed over them (`defaults` not yet resolved, to tell keys set off their default).
Node default_sft_engine_config_tree();
SFTConfig parse_sft_engine_config(const Node& resolved, const Node& defaults);

}  // namespace verl::config
