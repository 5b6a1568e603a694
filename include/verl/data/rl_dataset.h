// verl's RLHFDataset (verl/utils/dataset/rl_dataset.py) with the classic tokenized __getitem__ + collate_fn
// (reference spec §5.2-5.3):
//   * rows from .parquet, .jsonl or .json files (one or several, concatenated in order);
//   * max_samples (data.train_max_samples / val_max_samples) > 0 and < rows: with data.shuffle, numpy's
//     default_rng(data.seed).choice(rows, max_samples, replace=False) reproduced exactly (numpy_random.h);
//     data.seed null uses seed 1 (numpy would draw OS entropy, a different subset every run and after a
//     resume); without data.shuffle the first max_samples rows. Chosen before filtering, as verl does;
//   * filter_overlong_prompts: keeps rows whose chat-templated prompt is <= max_prompt_length tokens, the prompt
//     rendered with the tool schemas when data.tool_config_path / function_tool_path name tools (the caller
//     passes them: filter_tool_schemas; verl counts the tools the multi-turn rollout will render);
//   * collate(rows): prompt = tokenizer's chat template over the prompt_key messages with
//     add_generation_prompt=True and data.apply_chat_template_kwargs, encoded without special tokens,
//     truncated (data.truncation: error | left | right | middle) and left-padded to max_prompt_length with
//     the pad id (the eos id when the tokenizer has no pad token, as verl's hf_tokenizer sets it);
//     position_ids = clip(cumsum(attention_mask) - 1, min 0).
// Errors are one line naming the file (and row, 0-based, and key where it applies).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/config/config_node.h"
#include "verl/config/ppo_config.h"
#include "verl/data/custom_dataset.h"
#include "verl/io/value.h"
#include "verl/protocol/data_proto.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::data {

class RLHFDataset {
 public:
  // `filter_tool_schemas`: null, or the schemas of data.tool_config_path / function_tool_path
  // (agent::ToolSet::load(...)->schemas()), rendered with each prompt by the overlong-prompt filter only.
  RLHFDataset(std::vector<std::string> files, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
              const config::DataConfig& config, int64_t max_samples = -1,
              const nlohmann::ordered_json& filter_tool_schemas = nullptr);

  // The rows of a data.custom_cls class (data/custom_dataset.h), each prompt its `raw_prompt` messages, as verl's
  // agent loop reads them. The class did its own max_samples and filtering (verl filters inside RLHFDataset), so
  // none is done here; truncation and padding are as above, and a row's own index / tools_kwargs /
  // interaction_kwargs (set by its __getitem__) are kept.
  RLHFDataset(CustomDatasetRows custom_rows, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
              const config::DataConfig& config);

  int64_t size() const { return static_cast<int64_t>(rows_.size()); }

  // verl's __getitem__ for each row, then collate_fn. Tensors (int64) input_ids, attention_mask,
  // position_ids [n, max_prompt_length]; non-tensor columns: every dataset column except the prompt key
  // (null where a row lacks it), raw_prompt_ids, raw_prompt (return_raw_chat), full_prompts
  // (return_full_prompt), index (extra_info.index, else 0), tools_kwargs and interaction_kwargs (from
  // extra_info, else {}).
  protocol::DataProto collate(const std::vector<int64_t>& rows) const;

  // The chat-templated prompt text of one row (with `tools` rendered when not null), and its ids before
  // truncation / padding.
  std::string prompt_text(int64_t row, const nlohmann::ordered_json& tools = nullptr) const;
  std::vector<int32_t> prompt_ids(int64_t row) const;

  int32_t pad_token_id() const { return pad_token_id_; }
  const std::vector<std::string>& files() const { return files_; }
  // Rows before max_samples and filtering, and how many the filter dropped.
  int64_t rows_read() const { return rows_read_; }
  int64_t rows_filtered_out() const { return rows_filtered_out_; }
  // Dataset columns in first-seen order (the prompt key included).
  const std::vector<std::string>& columns() const { return columns_; }

 private:
  struct Row {
    io::Value value;   // the struct read from the file (or given by a custom class)
    int32_t file = 0;  // -1: a custom class's row
    int64_t row_in_file = 0;
  };

  std::string where(const Row& row) const;
  void check_config();  // also sets pad_token_id_
  void load_file(int32_t file_index);
  std::vector<int32_t> truncate(const Row& row, std::vector<int32_t> ids) const;

  std::vector<std::string> files_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  config::DataConfig config_;
  // The prompt messages' field: data.prompt_key, or raw_prompt for a custom class's rows.
  std::string prompt_column_;
  std::string custom_source_;  // set for a custom class's rows: "data.custom_cls 'Name' (path)"
  nlohmann::ordered_json chat_template_kwargs_;
  int32_t pad_token_id_ = 0;
  std::vector<Row> rows_;
  std::vector<std::string> columns_;
  int64_t rows_read_ = 0;
  int64_t rows_filtered_out_ = 0;
};

// One file spec from the config, `~` expanded: data.train_files / data.val_files hold a path or a list of paths
// (config::DataConfig keeps them as a list of strings; the Node and single-path forms are for other callers).
std::vector<std::string> data_files_from_config(const config::Node& node_or_string);
std::vector<std::string> data_files_from_config(const std::vector<std::string>& files);
std::vector<std::string> data_files_from_config(const std::string& file);

// `~` or `~/...` -> $HOME/...; anything else unchanged.
std::string expand_user(const std::string& path);

// verl's torch_functional.postprocess_data for one unbatched sequence (exposed for tests and the SFT data):
// pads (left or right) to max_length with pad_id (mask 0), or truncates with "left" | "right" | "middle";
// "error" throws. Returns (ids, mask).
std::pair<std::vector<int64_t>, std::vector<int64_t>> pad_or_truncate(const std::vector<int32_t>& ids, int64_t max_length,
                                                                     int32_t pad_id, bool left_pad,
                                                                     const std::string& truncation);

}  // namespace verl::data
