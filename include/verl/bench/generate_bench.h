// `verl bench generate`: prefill and decode throughput of the rollout engine (rollout/generator.h, the
// code the trainer runs) on random weights, each beside its roofline bound from the machine's measured GEMM
// FLOP/s and memory bandwidth (bench/roofline.h, bench/model_flops.h). Responses run to full length
// (ignore_eos) so every row decodes the same number of steps. On a CUDA device (--device cuda) the model runs
// there in fp32 or bf16 (--dtype), the bound uses the device's measured peaks (bf16 GEMMs for a bf16 model),
// and each row reports the caching allocator's peak GPU memory. With --lora-rank r > 0 the model carries
// all-linear adapters (model/lora.h, B random so the side path is real work) and each batch runs once per
// --lora-modes entry: off (the base, adapter disabled), merged (W + s B A for the generation: the prefill
// phase includes the merge and the unmerge, which the rollout pays every step) and side (x W^T + s (x A^T) B^T).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <string>
#include <vector>

#include "verl/bench/roofline.h"

namespace verl::bench {

struct GenerateBenchOptions {
  std::vector<std::string> models = {"qwen2-25m", "qwen2.5-0.5b"};  // presets (bench/model_presets.h)
  std::string model_dir;                                           // an HF model folder instead of presets
  std::vector<int64_t> batches = {1, 8, 64};
  int64_t prompt_length = 64;
  int64_t response_length = 32;  // tokens per row: 1 from the prefill logits + response_length - 1 decode steps
  bool greedy = false;           // false: sampling at temperature 1 (verl's rollout default)
  int repeats = 2;               // per batch; the fastest repeat is reported
  uint64_t seed = 0;
  std::string device = "cpu";    // cpu | cuda | cuda:N (the roofline is measured on the same device)
  std::string dtype = "fp32";    // fp32 | bf16: the weights, activations and KV cache
  RooflineOptions roofline;      // measured at the start, in this process
  int64_t lora_rank = 0;         // 0: no adapters
  double lora_alpha = 16;
  std::vector<std::string> lora_modes = {"off", "merged", "side"};  // with lora_rank > 0
};

struct GeneratePhase {
  double seconds = 0, cpu_seconds = 0;  // wall and process CPU time of the phase
  double tokens = 0;
  double flops = 0, bytes = 0;
  std::vector<double> repeat_seconds;   // every repeat's wall seconds (seconds is the best)
  double tokens_per_s() const { return seconds > 0 ? tokens / seconds : 0; }
};

struct GenerateBenchRow {
  std::string model;
  double params = 0;
  int64_t batch = 0, prompt_length = 0, response_length = 0;
  std::string lora = "off";       // off | merged | side (model/lora.h)
  double merge_seconds = 0;       // merged: the best repeat's merge + unmerge (inside prefill.seconds)
  torch::Tensor responses;        // the last repeat's (B, R) tokens (tests compare modes under greedy)
  GeneratePhase prefill, decode;  // decode: tokens = batch x decode steps
  int64_t peak_memory_bytes = 0;  // CUDA: the caching allocator's peak over the row's runs (weights included)
};

struct GenerateBenchResult {
  Roofline roofline;
  GenerateBenchOptions options;
  std::vector<GenerateBenchRow> rows;
};

GenerateBenchResult run_generate_bench(const GenerateBenchOptions& options);

nlohmann::json to_json(const GenerateBenchResult& result);
std::string format_generate_bench(const GenerateBenchResult& result);

}  // namespace verl::bench
