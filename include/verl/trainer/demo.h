// The embedded default (`verl demo`), torch-free interface. Preparation (`verl demo --prepare-only --out DIR`):
//   DIR/data/        arithmetic train/test (RL, verl schema) and sft_train/sft_val parquet
//   DIR/model_init/  a byte-level BPE tokenizer (printable ASCII + merges for the template's words, ChatML
//                    template, <|im_start|> <|im_end|> <|endoftext|>) and a random tiny Qwen2 model
//                    (hidden 128, 2 layers, 4 heads, tied embeddings)
//   DIR/sft/         the SFT run (verl sft with an embedded config: metrics.jsonl, config.yaml, global_step_N)
//   DIR/model/       the warm-started HF model folder (weights + tokenizer) that RL starts from
// SFT runs until greedy accuracy on sft_val reaches `target_accuracy` (checked every `eval_every` steps) or
// `max_sft_steps`.
// With `tools` (`verl demo --tools`, demo_tools.h) the task is arithmetic_tool ("12*34+5=" with a calculator
// tool): DIR/data holds its splits (SFT mixing tool transcripts and direct answers), DIR/tools the calculator tool
// file and its verl tool config, the tokenizer renders tools (chatml_tools_template); the SFT target is the
// accuracy of conversations that call the tool (tool_path_accuracy), and RL is GRPO with the multi-turn rollout.
// The whole demo (`verl demo [--algo grpo|ppo]`) then runs RL through verl's main_ppo (`run_ppo`, the same path
// as `verl train`) with an embedded example config (examples/arithmetic_<algo>.yaml, copied to
// DIR/arithmetic_<algo>.yaml) pointed at DIR, plus the user's overrides:
//   DIR/runs/arithmetic_<algo>/   config.yaml, metrics.jsonl, report.html (validated before and after RL)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace verl::trainer {

struct DemoPrepareOptions {
  std::string out_dir;
  bool tools = false;  // the multi-turn variant: arithmetic_tool with the calculator tool
  uint64_t seed = 0;
  double target_accuracy = 0.22;
  int64_t max_sft_steps = 2000;
  int64_t eval_every = 50;
  int64_t sft_batch_size = 128;
  double sft_lr = 3e-3;
  std::optional<int64_t> num_threads;  // default: 1 (design.md: as fast as 2 passive OpenMP threads here)
};

struct DemoPrepareResult {
  std::string data_dir, init_model_dir, sft_dir, model_dir;
  int64_t vocab_size = 0;
  int64_t num_parameters = 0;
  int64_t sft_steps = 0;
  double sft_seconds = 0;           // wall time of the SFT phase (training + accuracy checks)
  double sft_val_accuracy = 0;      // greedy, on sft_val, at the last check
  double test_accuracy = 0;         // greedy, on the RL test split, of DIR/model
  // `tools` only (demo_tools.h's two-turn greedy evaluation): the share of first turns calling the tool, and the
  // accuracy of conversations made to start with <tool_call>.
  double sft_val_tool_call_rate = 0, sft_val_tool_path_accuracy = 0;
  double test_tool_call_rate = 0, test_tool_path_accuracy = 0;
  std::string tool_config_path;     // DIR/tools/calculator_tool_config.yaml (`tools` only)
  double total_seconds = 0;
};

DemoPrepareResult prepare_demo(const DemoPrepareOptions& options);

struct DemoOptions {
  DemoPrepareOptions prepare;          // out_dir, seed (also data.seed and rollout.seed), threads, SFT target
  std::string algo = "grpo";           // grpo | ppo: which embedded example config runs
  std::vector<std::string> overrides;  // verl `key=value` overrides, applied after the demo's own keys
};

struct DemoResult {
  DemoPrepareResult prepared;
  std::string config_file;  // DIR/arithmetic_<algo>.yaml
  std::string run_dir;
  int64_t rl_steps = 0;
  double rl_seconds = 0;            // wall time of the RL run (workers, validations, report)
  double val_accuracy_before = 0;   // greedy accuracy on the held-out test split, before RL (step 0)
  double val_accuracy_after = 0;    // the same after the last RL step
  // `tools` only: tool calls per sample in the rollouts (verl's tool_call_counts/mean) at the first and last step.
  std::optional<double> tool_calls_first, tool_calls_last;
  double total_seconds = 0;
};

// Preparation, then RL. Progress lines go to stderr.
DemoResult run_demo(const DemoOptions& options);

// The embedded example config of `algo` (grpo | ppo); anything else is an error. `verl demo --tools` runs the
// grpo one with demo_tools_rl_overrides() on top.
std::string demo_rl_config_yaml(const std::string& algo);

// The validation metric the demo reports: greedy accuracy = mean GSM8K-rule reward on the test split.
const std::string& demo_accuracy_metric();

// The words the demo tokenizer merges into single tokens (template roles, the instruction, "####").
const std::vector<std::string>& demo_tokenizer_words();

// The keys `verl demo --tools` sets on the grpo example for the multi-turn rollout (key=value, verl's names):
// multi_turn.enable, tool_config_path = `tool_config_path`, format hermes, max_assistant_turns 2,
// data.return_raw_chat, the longer prompt / response lengths, validation by sampling (val_kwargs), 30 steps,
// run names.
std::vector<std::string> demo_tools_rl_overrides(const std::string& tool_config_path);

}  // namespace verl::trainer
