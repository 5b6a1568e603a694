// Model shapes the benchmarks run with random weights (no download needed):
//   qwen2-25m      Qwen2, hidden 512, 6 layers, 8 heads / 2 kv heads (head_dim 64), intermediate 1408,
//                  vocab 8192, untied LM head: 25.3M parameters
//   qwen2.5-0.5b   Qwen2.5-0.5B's shape: hidden 896, 24 layers, 14 heads / 2 kv heads, intermediate 4864,
//                  vocab 151936, tied embeddings, rope_theta 1e6: 494M parameters
//   tiny           hidden 64, 2 layers, 4 heads / 2 kv heads, intermediate 128, vocab 256 (tests, smoke runs)
#pragma once

#include <string>
#include <vector>

#include "verl/model/hf_config.h"

namespace verl::bench {

const std::vector<std::string>& model_preset_names();
// Throws naming the valid presets for an unknown name.
model::HFConfig model_preset(const std::string& name);

}  // namespace verl::bench
