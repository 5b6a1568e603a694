// verl's example dataset builders (examples/data_preprocess/gsm8k.py, math_dataset.py), torch-free: source
// JSONL rows in, verl-format rows out (data_source, prompt, ability, reward_model, extra_info).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "verl/io/parquet/writer.h"
#include "verl/io/value.h"

namespace verl::data {

struct PreprocessedDataset {
  std::vector<io::Value> rows;
  std::vector<io::parquet::WriteField> schema;
};
// Writes DIR/<name>.parquet for each (name, split) (DIR is created).
void write_parquet_splits(const std::string& dir,
                          const std::vector<std::pair<std::string, const PreprocessedDataset*>>& splits);

// A generated task's four splits: RL train and test (verl's RL columns), SFT train and val (prompt, response).
struct RlAndSftSplits {
  PreprocessedDataset train, test, sft_train, sft_val;
};
// Writes DIR/{train,test,sft_train,sft_val}.parquet (DIR is created).
void write_rl_and_sft_splits(const std::string& dir, const RlAndSftSplits& splits);

// The dataset names preprocess_dataset accepts.
const std::vector<std::string>& preprocess_dataset_names();
// Fails (listing the valid names) unless `dataset` is one of them.
void check_preprocess_dataset(const std::string& dataset);

// `dataset`: "gsm8k", "gsm8k_multiturn_w_tool", "gsm8k_multiturn_w_interaction" or "math" (an unknown name is an
// error listing the valid ones). `where` names the input in errors.
PreprocessedDataset preprocess_dataset(const std::string& dataset, const std::vector<io::Value>& source,
                                       const std::string& split, const std::string& where);

// gsm8k: ground truth from the first "#### N" in the answer, commas removed (verl's extract_solution).
std::string gsm8k_extract_solution(const std::string& answer);
PreprocessedDataset preprocess_gsm8k(const std::vector<io::Value>& source, const std::string& split,
                                     const std::string& where);

// verl's multi-turn GSM8K (examples/data_preprocess/gsm8k_multiturn_w_tool.py): prompt = [verl's system message
// asking for the calc_gsm8k_reward tool, user = question + " " + instruction], extra_info adds need_tools_kwargs,
// tools_kwargs.calc_gsm8k_reward.create_kwargs.ground_truth and interaction_kwargs {query, ground_truth}.
PreprocessedDataset preprocess_gsm8k_multiturn_w_tool(const std::vector<io::Value>& source, const std::string& split,
                                                      const std::string& where);
// gsm8k_multiturn_w_interaction.py: its own system message; extra_info.interaction_kwargs {name: "gsm8k", query,
// ground_truth}, no tools.
PreprocessedDataset preprocess_gsm8k_multiturn_w_interaction(const std::vector<io::Value>& source,
                                                             const std::string& split, const std::string& where);

// MATH: verl's last_boxed_only_string (empty optional when none) and remove_boxed.
bool math_last_boxed_only_string(const std::string& text, std::string& boxed);
std::string math_remove_boxed(const std::string& boxed);
PreprocessedDataset preprocess_math(const std::vector<io::Value>& source, const std::string& split,
                                    const std::string& where);

// verl's digit-completion toy task (tests/special_e2e/envs/digit_completion): every prompt
// "{a},{b}:{max_number},{k}" for a in [0, max_number], diff in [0, max_diff], k in [0, max_num_in_response],
// b = (a + diff) % max_number, as a one-message `prompt` column; shuffled with `seed` and split 80/20.
struct DigitCompletionSplits {
  PreprocessedDataset train, test;
};
DigitCompletionSplits digit_completion_splits(uint64_t seed, int max_number = 9, int max_diff = 9,
                                              int max_num_in_response = 9);
// The same rows with the columns verl.cpp's reward manager reads added after `prompt`: data_source
// "digit_completion" and reward_model {ground_truth: the prompt (the scorer derives the answer), style: rule}.
// verl scored this task with a reward function in its test runner instead.
DigitCompletionSplits with_digit_completion_reward_columns(const DigitCompletionSplits& splits);

// The `arithmetic` synthetic task (the embedded default's data): word-free integer problems "a+b=", "a-b="
// (a, b in 0..99) and "a*b=" (a in 0..99, b in 0..9), the operation drawn uniformly, as one user message
// "<problem>\n" + arithmetic_instruction(); answers "#### N" so verl's GSM8K scorer applies
// (data_source "arithmetic"). Seeded and platform-independent (a 64-bit LCG, no std distributions).
//   test     `test_size` distinct held-out problems (RL validation)
//   sft_val  `sft_val_size` distinct problems, none in test (SFT validation, greedy accuracy)
//   train    `train_size` RL rows drawn with replacement from problems in neither test nor sft_val
//   sft_train `sft_train_size` SFT rows drawn the same way: columns prompt (the user message text),
//            response ("#### N"), plus data_source / reward_model / extra_info for scoring
struct ArithmeticOptions {
  uint64_t seed = 0;
  int64_t train_size = 10000;
  int64_t test_size = 500;
  int64_t sft_train_size = 40000;
  int64_t sft_val_size = 500;
};
struct ArithmeticProblem {
  int64_t a = 0, b = 0;
  char op = '+';
  std::string question() const;  // "12+35="
  int64_t answer() const;
};
using ArithmeticSplits = RlAndSftSplits;
const std::string& arithmetic_instruction();
// The user message of a problem: question + "\n" + instruction.
std::string arithmetic_prompt_text(const ArithmeticProblem& problem);
ArithmeticSplits arithmetic_splits(const ArithmeticOptions& options);
// Writes DIR/{train,test,sft_train,sft_val}.parquet (DIR is created).
void write_arithmetic_dataset(const std::string& dir, const ArithmeticOptions& options);

// The `arithmetic_tool` synthetic task (`verl demo --tools`): "a*b+c=" with a, b in 10..29 and c in 10..99 (answers
// 110..940), beyond the tiny model's mental arithmetic but one call of a calculator tool away. Scored like `arithmetic`
// (data_source "arithmetic", "#### N", the GSM8K rule). Seeded, platform-independent.
//   train / test    verl's multi-turn layout: prompt [system arithmetic_tool_system_prompt(), user question +
//                   "\n" + arithmetic_instruction()], extra_info.need_tools_kwargs = true and
//                   tools_kwargs.calculator.create_kwargs.ground_truth; test problems are distinct and held out
//   sft_train / sft_val   prompt [system: the same system prompt + "\n\n" + the tool listing of
//                   tokenizer::chatml_tools_template(), user], so the template renders it without `tools` exactly
//                   as the RL prompt with tools = [calculator_tool_schema()]; response: for a `tool_fraction`
//                   share (extra_info.uses_tool) arithmetic_tool_transcript(), otherwise "#### N"
struct ArithmeticToolOptions {
  uint64_t seed = 0;
  int64_t train_size = 10000;
  int64_t test_size = 500;
  int64_t sft_train_size = 20000;
  int64_t sft_val_size = 500;
  // The share of SFT answers that call the tool. Copying the tool's result into the answer competes with guessing
  // it in the direct answers; measured (seed 2, tiny demo model): tool-path accuracy 0.005 at SFT step 1500 with
  // 0.7, 0.285 at step 700 with 0.85 (0.4 took 1000-1400 steps with seeds 0 and 1).
  double tool_fraction = 0.85;
};
struct ArithmeticToolProblem {
  int64_t a = 0, b = 0, c = 0;
  std::string expression() const;  // "12*34+5"
  std::string question() const;    // "12*34+5="
  int64_t answer() const;
};
using ArithmeticToolSplits = RlAndSftSplits;
// The calculator's OpenAI function schema, as examples/multi_turn/calculator_tool_config.yaml declares it.
const nlohmann::ordered_json& calculator_tool_schema();
const std::string& arithmetic_tool_system_prompt();
std::string arithmetic_tool_user_text(const ArithmeticToolProblem& problem);
// The response of a tool-using answer, as chatml_tools_template() and verl's token building lay the turns out
// (policy turn, tool turn, policy turn; the final <|im_end|> is SFT's eos):
//   <tool_call>\n{"name": "calculator", "arguments": {"expression": "12*34+5"}}\n</tool_call><|im_end|>\n
//   <|im_start|>user\n<tool_response>\n413\n</tool_response><|im_end|>\n<|im_start|>assistant\n#### 413
std::string arithmetic_tool_transcript(const ArithmeticToolProblem& problem);
ArithmeticToolSplits arithmetic_tool_splits(const ArithmeticToolOptions& options);
// Writes DIR/{train,test,sft_train,sft_val}.parquet (DIR is created).
void write_arithmetic_tool_dataset(const std::string& dir, const ArithmeticToolOptions& options);

}  // namespace verl::data
