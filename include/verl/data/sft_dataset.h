// verl's SFTDataset (verl/utils/dataset/sft_dataset.py): each row's prompt becomes one user message rendered by
// the chat template with add_generation_prompt, the response gets the eos token appended, prompt and response
// are tokenized separately (no special tokens added), concatenated, right-padded with the pad id to max_length
// (truncation error / left / right beyond it), with attention_mask and position_ids.
//
// loss_mask is aligned with input_ids: 1 on the (kept) response tokens, eos included, 0 on the prompt and
// padding. The loss at position t predicts token t+1 and counts when loss_mask[t+1] is 1, i.e. every response
// token is predicted once -- the tokens verl's mask (shifted by one, `loss_mask[:, :-1]`) selects.
//
// A prompt column may hold a string (verl's case) or a chat list [{role, content}, ...] (used as the
// messages); prompt_dict_keys / response_dict_keys descend into struct columns first (verl's *_dict_keys).
//
// With config.multiturn (verl's MultiTurnSFTDataset: `--config-name sft_trainer_engine`, or data.multiturn.enable)
// each row is a conversation tokenized by data/multiturn_sft.h, loss_mask on the assistant messages; padding and
// truncation as above, except that pad_mode no_padding cuts at the right whatever data.truncation says and that a
// left-truncated row's position ids start at the cut (both as verl's MultiTurnSFTDataset).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "verl/config/sft_config.h"
#include "verl/io/value.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::data {

struct SFTBatch {
  torch::Tensor input_ids;       // [n, L] int64
  torch::Tensor attention_mask;  // [n, L] int64
  torch::Tensor position_ids;    // [n, L] int64
  torch::Tensor loss_mask;       // [n, L] int64 (response tokens)
  int64_t size() const { return input_ids.size(0); }
  SFTBatch slice(int64_t begin, int64_t end) const;
};

class SFTDataset {
 public:
  // Reads every file (parquet or JSONL) and tokenizes every row up front (verl keeps the dataframe in
  // memory); max_samples > 0 keeps the first rows only.
  SFTDataset(const std::vector<std::string>& files, const tokenizer::Tokenizer& tokenizer,
             const config::SFTDataConfig& config, int64_t max_samples = -1);

  int64_t size() const { return input_ids_.size(0); }
  int64_t max_length() const { return input_ids_.size(1); }
  SFTBatch get(const std::vector<int64_t>& rows) const;
  SFTBatch all() const;

  // The prompt token ids (chat template applied) of row i, before padding; and the row's raw values.
  const std::vector<int32_t>& prompt_ids(int64_t row) const { return prompt_ids_.at(static_cast<size_t>(row)); }
  const std::vector<io::Value>& rows() const { return rows_; }

 private:
  std::vector<io::Value> rows_;
  std::vector<std::vector<int32_t>> prompt_ids_;
  torch::Tensor input_ids_, attention_mask_, position_ids_, loss_mask_;
};

// verl's SFT tokenization for one example, exposed for tests and the demo: prompt ids from the chat template
// (messages: a string -> one user message, or a chat list), response ids of response + eos_token.
// `template_timeout_s`: data.chat_template_timeout.
std::vector<int32_t> sft_prompt_ids(const tokenizer::Tokenizer& tokenizer, const io::Value& prompt,
                                    double template_timeout_s = 60);
std::vector<int32_t> sft_response_ids(const tokenizer::Tokenizer& tokenizer, const std::string& response);

}  // namespace verl::data
