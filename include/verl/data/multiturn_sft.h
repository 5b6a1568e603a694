// verl 0.9.1's MultiTurnSFTDataset (verl/utils/dataset/multiturn_sft_dataset.py), the tokenization of one
// conversation for `verl sft --config-name sft_trainer_engine`:
//   - the chat template renders each message alone (tools with the first one only; enable_thinking from the row's
//     column, else data.enable_thinking_default; data.apply_chat_template_kwargs), tokenized without special
//     tokens, and the pieces are concatenated. A template that cannot render a lone message gets verl's fallback: a
//     dummy empty user message before it, whose tokens are then dropped;
//   - every message after the first, unless it is a system message, drops its first len(system prompt) tokens
//     (the template's default system turn, found as verl does: the rendering of one empty user message less the
//     length one more such message adds);
//   - assistant messages are trained on (loss mask 1) except their first len(generation prompt) tokens (the
//     rendering with add_generation_prompt less the one without); other roles are not;
//   - the concatenation must equal the rendering of the whole conversation at once, else an error naming the row
//     (data.ignore_input_ids_mismatch=true: a warning, the concatenation is used).
// Multimodal rows (an images / videos column) are an error: verl.cpp has no processor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verl/config/sft_config.h"
#include "verl/io/value.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::data {

// One conversation's tokens and its loss mask (aligned with the tokens), before padding and truncation.
struct SFTExample {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> loss_mask;
};

class MultiTurnSFTTokenizer {
 public:
  MultiTurnSFTTokenizer(const tokenizer::Tokenizer& tokenizer, const config::SFTDataConfig& config);

  // `row` holds config.messages_key (and optionally the tools / enable_thinking columns); `where` names it in errors.
  SFTExample tokenize(const io::Value& row, const std::string& where) const;

  const std::vector<int32_t>& system_prompt() const { return system_prompt_; }
  const std::vector<int32_t>& generation_prompt() const { return generation_prompt_; }

 private:
  std::vector<int32_t> render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                              bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const;
  // verl's chat_template.apply_chat_template: with the dummy-user fallback.
  std::vector<int32_t> render_message(const nlohmann::ordered_json& message, const nlohmann::ordered_json& tools,
                                      const nlohmann::ordered_json& kwargs) const;

  const tokenizer::Tokenizer& tokenizer_;
  const config::SFTDataConfig& config_;
  std::vector<int32_t> system_prompt_, generation_prompt_;
  mutable bool mismatch_warned_ = false;
};

}  // namespace verl::data
