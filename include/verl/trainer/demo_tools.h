// `verl demo --tools`: the pieces of the multi-turn variant of the embedded default. The task is `arithmetic_tool`
// ("12*34+5=", data/preprocess.h) with a calculator tool in verl's tool interface
// (examples/multi_turn/calculator_tool.py + calculator_tool_config.yaml, built in and written to the demo folder);
// the tokenizer adds the hermes tags as tokens and renders tools with tokenizer::chatml_tools_template().
// The warm start is measured by a greedy two-turn evaluation that answers the tool calls itself (the calculator's
// arithmetic in C++), the same conversation layout the multi-turn rollout builds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/model/transformer.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace verl::trainer {

// The demo tokenizer (printable ASCII, demo_tokenizer_words()) plus: the non-special added tokens <tool_call>,
// </tool_call>, <tool_response>, </tool_response>; every non-numeric pre-tokenizer chunk of the tool listing and of
// a tool call as a word (one token each); every number below 1000 as a word (the task's numbers are single tokens,
// the same wherever they appear); chatml_tools_template().
tokenizer::ByteLevelBPESpec demo_tools_tokenizer_spec();

// The built-in copies of examples/multi_turn/calculator_tool.py and calculator_tool_config.yaml.
const std::string& demo_calculator_tool_py();
const std::string& demo_calculator_tool_yaml();

// The value calculator_tool.py gives `expression` (integers, + - *, parentheses, unary minus, whitespace), or
// nullopt where it answers with an error.
std::optional<int64_t> evaluate_calculator_expression(const std::string& expression);

struct ToolEvalResult {
  int64_t total = 0;
  double accuracy = 0;            // greedy, the GSM8K rule on the final turn (direct answers included)
  double tool_call_rate = 0;      // share of first turns with a <tool_call>
  double tool_path_accuracy = 0;  // accuracy when the first turn is made to start with <tool_call>
  std::vector<std::string> first_turns;  // decoded first turns, in prompt order
  std::string tool_path_sample;          // the first prompt's tool-path conversation: call -> tool text -> answer
};

// Greedy conversations: turn 1 from each prompt text (chat template with tools and the generation prompt); a turn
// with a tool call gets the calculator's answer (or its error text) as a tool turn, then turn 2; at most
// `max_turn_tokens` per turn. Prompt texts are encoded without special tokens.
ToolEvalResult tool_greedy_eval(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                const std::vector<std::string>& prompt_texts,
                                const std::vector<std::string>& ground_truths, int64_t max_turn_tokens);

// The prompt texts (template with tools = [calculator], generation prompt) and ground truths of an
// arithmetic_tool parquet split: RL rows (system + user) or SFT rows (the listing already in the system message).
void load_tool_eval_set(const std::string& path, const tokenizer::Tokenizer& tokenizer,
                        std::vector<std::string>& prompt_texts, std::vector<std::string>& ground_truths);

}  // namespace verl::trainer
