// Torch-free entry points behind `verl model init` and `verl model forward` (the CLI area does not
// include LibTorch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "verl/model/hf_config.h"

namespace verl::model {

struct InitOptions {
  Arch arch = Arch::Qwen2;
  std::string out_dir;
  uint64_t seed = 0;
  int64_t hidden_size = 64;
  int64_t num_layers = 2;
  int64_t num_heads = 4;
  int64_t num_kv_heads = 2;
  int64_t intermediate_size = 128;
  int64_t vocab_size = 128;
  std::optional<int64_t> head_dim;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Llama / Qwen3
  bool mlp_bias = false;        // Llama
  std::optional<std::string> rope_scaling;  // "linear:F", "llama3:F:LOW:HIGH:ORIG" or "yarn:F:ORIG"
  // Sliding-window attention of this many positions: on every layer (mistral), or on the layers from
  // max_window_layers on (qwen2 / qwen3, their use_sliding_window).
  std::optional<int64_t> sliding_window;
  int64_t max_window_layers = 0;
  // Mixture of experts (--arch qwen2_moe / qwen3_moe): every decoder_sparse_step-th layer routes each token to
  // num_experts_per_tok of num_experts MLPs of moe_intermediate_size; qwen2_moe adds a shared expert
  // (shared_expert_intermediate_size, 0: the dense intermediate size).
  bool moe = false;
  int64_t num_experts = 4;
  int64_t num_experts_per_tok = 2;
  int64_t moe_intermediate_size = 32;
  int64_t shared_expert_intermediate_size = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  double rope_theta = 10000.0;
  double initializer_range = 0.02;  // std of the random matrices
  bool perturb_norms_and_biases = false;
  std::string dtype = "float32";  // float32 | bfloat16
  std::optional<std::string> tokenizer_dir;
};

// Builds the config, random-initialises the weights (seeded) and writes an HF folder.
HFConfig init_model_folder(const InitOptions& options);

// Runs every row of `input_json` ({"input_ids": [[...], ...]}) as one left-padded batch and writes
// logits_<i> [len_i, V] (fp32) per row to a safetensors file.
void forward_to_file(const std::string& model_dir, const std::string& input_json, const std::string& output_path);

}  // namespace verl::model
