// `verl generate`: verl's main_generation on the native rollout engine. Prompts come from a dataset file
// through RLHFDataset (the chat template with add_generation_prompt, truncation and left padding exactly as
// the trainer's prompts), responses from rollout::generate with the rollout section's sampling settings,
// and every response becomes one JSON line:
//   {"row": dataset row (0-based, after filtering), "sample": k (0..n-1), "prompt": the decoded prompt ids
//    (what the model saw, special tokens kept), "prompt_ids": [...], "response": text (special tokens
//    skipped), "response_ids": [...] (through the first eos), "finish_reason": "stop" | "length",
//    "response_log_probs": [...] (with actor_rollout_ref.rollout.calculate_log_probs=true),
//    "data": {the row's other dataset columns (data_source, reward_model, extra_info, ...)}}
// Settings are verl's keys as key=value overrides; only the keys generation reads are accepted
// (generation_override_keys()), so nothing is silently ignored. The output file is written atomically once
// every batch is done. Seeded: the same settings, files and --batch-size give the same lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Torch-free: the command line (src/cli) includes this header.
namespace verl::trainer {

struct GenerationOptions {
  std::string model_dir;                // HF model folder with its tokenizer files
  std::vector<std::string> data_files;  // .parquet / .jsonl / .json in verl's schema (the prompt_key column)
  std::string output_path;              // .jsonl
  int64_t batch_size = 16;              // prompts per engine call (each gives n responses)
  std::vector<std::string> overrides;   // key=value, keys from generation_override_keys()
};

struct GenerationSummary {
  int64_t prompts = 0;
  int64_t responses = 0;
  int64_t response_tokens = 0;
  double seconds = 0;
};

// The config keys `verl generate` reads (data.apply_chat_template_kwargs also takes sub-keys).
const std::vector<std::string>& generation_override_keys();

GenerationSummary run_generation(const GenerationOptions& options);

}  // namespace verl::trainer
