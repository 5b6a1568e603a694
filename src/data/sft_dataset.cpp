#include "verl/data/sft_dataset.h"

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "verl/common/error.h"
#include "verl/data/multiturn_sft.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"
#include "verl/model/transformer.h"
#include "verl/tokenizer/chat_template.h"

namespace verl::data {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<io::Value> read_rows(const std::string& path) {
  if (ends_with(path, ".jsonl") || ends_with(path, ".json")) return io::read_jsonl(path);
  return io::parquet::read_parquet(path);
}

// row[key][dict_keys[0]][dict_keys[1]]...
const io::Value& pick(const io::Value& row, const std::string& key, const std::vector<std::string>& dict_keys,
                      const std::string& where) {
  const io::Value* v = row.find(key);
  VERL_CHECK(v != nullptr, "data", where, " has no column '", key, "'");
  std::string path = key;
  for (const auto& k : dict_keys) {
    const io::Value* next = v->find(k);
    VERL_CHECK(next != nullptr, "data", where, ": '", path, "' has no field '", k, "'");
    path += "." + k;
    v = next;
  }
  return *v;
}

nlohmann::ordered_json to_message_list(const io::Value& prompt) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (prompt.is_string()) {
    messages.push_back({{"role", "user"}, {"content", prompt.as_string()}});
    return messages;
  }
  VERL_CHECK(prompt.is_list(), "data", "an SFT prompt must be a string or a chat list, got ",
             io::kind_name(prompt.kind()));
  for (const auto& message : prompt.as_list()) {
    const io::Value* role = message.find("role");
    const io::Value* content = message.find("content");
    VERL_CHECK(role != nullptr && role->is_string() && content != nullptr && content->is_string(), "data",
               "chat prompt messages need string 'role' and 'content' fields, got ", io::to_json(message));
    messages.push_back({{"role", role->as_string()}, {"content", content->as_string()}});
  }
  return messages;
}

}  // namespace

SFTBatch SFTBatch::slice(int64_t begin, int64_t end) const {
  return SFTBatch{input_ids.slice(0, begin, end), attention_mask.slice(0, begin, end),
                  position_ids.slice(0, begin, end), loss_mask.slice(0, begin, end)};
}

std::vector<int32_t> sft_prompt_ids(const tokenizer::Tokenizer& tokenizer, const io::Value& prompt,
                                    double template_timeout_s) {
  tokenizer::ChatTemplateInputs inputs;
  inputs.limits.timeout_s = template_timeout_s;
  inputs.messages = to_message_list(prompt);
  inputs.add_generation_prompt = true;
  return tokenizer.encode(tokenizer::apply_chat_template(tokenizer, inputs), /*add_special_tokens=*/false);
}

std::vector<int32_t> sft_response_ids(const tokenizer::Tokenizer& tokenizer, const std::string& response) {
  const auto& eos = tokenizer.config().eos_token;
  VERL_CHECK(eos.has_value(), "data", "the tokenizer has no eos_token; SFT appends it to every response");
  return tokenizer.encode(response + *eos, /*add_special_tokens=*/false);
}

SFTDataset::SFTDataset(const std::vector<std::string>& files, const tokenizer::Tokenizer& tokenizer,
                       const config::SFTDataConfig& config, int64_t max_samples) {
  VERL_CHECK(!files.empty(), "data", "SFT dataset: no files given");
  std::vector<std::string> origin;
  for (const auto& file : files) {
    std::vector<io::Value> rows = read_rows(file);
    for (auto& row : rows) {
      if (max_samples > 0 && static_cast<int64_t>(rows_.size()) >= max_samples) break;
      origin.push_back(file + " row " + std::to_string(origin.size()));
      rows_.push_back(std::move(row));
    }
  }
  VERL_CHECK(!rows_.empty(), "data", "SFT dataset ", files[0], (files.size() > 1 ? " (and others)" : ""),
             " has no rows");
  std::optional<int32_t> pad = tokenizer.pad_token_id();
  if (!pad) pad = tokenizer.eos_token_id();  // verl's hf_tokenizer sets pad = eos when missing
  VERL_CHECK(pad.has_value(), "data", "the tokenizer has neither a pad_token nor an eos_token");

  const int64_t n = static_cast<int64_t>(rows_.size());
  const int64_t max_length = config.max_length;
  input_ids_ = torch::full({n, max_length}, static_cast<int64_t>(*pad), torch::kInt64);
  attention_mask_ = torch::zeros({n, max_length}, torch::kInt64);
  loss_mask_ = torch::zeros({n, max_length}, torch::kInt64);
  auto ids_acc = input_ids_.accessor<int64_t, 2>();
  auto attn_acc = attention_mask_.accessor<int64_t, 2>();
  auto loss_acc = loss_mask_.accessor<int64_t, 2>();
  std::unordered_map<std::string, std::vector<int32_t>> prompt_cache;  // rendered prompts repeat in practice
  std::unique_ptr<MultiTurnSFTTokenizer> conversations;
  std::vector<std::pair<int64_t, int64_t>> left_cut;  // (row, tokens cut at its left)
  if (config.multiturn) conversations = std::make_unique<MultiTurnSFTTokenizer>(tokenizer, config);
  prompt_ids_.reserve(rows_.size());
  for (int64_t i = 0; i < n; ++i) {
    const io::Value& row = rows_[static_cast<size_t>(i)];
    const std::string& where = origin[static_cast<size_t>(i)];
    std::vector<int64_t> ids, is_response;
    if (conversations) {
      SFTExample example = conversations->tokenize(row, where);
      ids = std::move(example.input_ids);
      is_response = std::move(example.loss_mask);
      // The prompt: what comes before the first trained token.
      const auto first = std::find(is_response.begin(), is_response.end(), 1);
      prompt_ids_.emplace_back(ids.begin(), ids.begin() + (first - is_response.begin()));
    } else {
      const io::Value& prompt = pick(row, config.prompt_key, config.prompt_dict_keys, where);
      const io::Value& response = pick(row, config.response_key, config.response_dict_keys, where);
      VERL_CHECK(response.is_string(), "data", where, ": response '", config.response_key, "' must be a string, got ",
                 io::kind_name(response.kind()));
      std::string cache_key = io::to_json(prompt);
      auto it = prompt_cache.find(cache_key);
      if (it == prompt_cache.end()) {
        it = prompt_cache.emplace(cache_key, sft_prompt_ids(tokenizer, prompt, config.chat_template_timeout)).first;
      }
      const std::vector<int32_t>& p_ids = it->second;
      std::vector<int32_t> r_ids = sft_response_ids(tokenizer, response.as_string());
      prompt_ids_.push_back(p_ids);
      ids.assign(p_ids.begin(), p_ids.end());
      ids.insert(ids.end(), r_ids.begin(), r_ids.end());
      is_response.assign(p_ids.size(), 0);
      is_response.resize(ids.size(), 1);
    }
    const int64_t length = static_cast<int64_t>(ids.size());
    int64_t begin = 0;
    if (length > max_length) {
      VERL_CHECK(config.truncation != "error", "data", where, ": the row is ", length,
                 " tokens, longer than data.max_length=", max_length,
                 " (set data.truncation=left|right or raise data.max_length)");
      // verl's no_padding mode keeps the first max_length tokens whatever data.truncation says.
      if (config.truncation == "left" && config.pad_mode != "no_padding") begin = length - max_length;
    }
    if (begin > 0 && conversations) left_cut.emplace_back(i, begin);
    const int64_t kept = std::min(length, max_length);
    for (int64_t j = 0; j < kept; ++j) {
      ids_acc[i][j] = ids[static_cast<size_t>(begin + j)];
      attn_acc[i][j] = 1;
      loss_acc[i][j] = is_response[static_cast<size_t>(begin + j)];
    }
  }
  position_ids_ = model::position_ids_from_mask(attention_mask_);
  // verl's MultiTurnSFTDataset cuts a left-truncated row's positions with its tokens (they start at the cut);
  // fsdp_sft_trainer's SFTDataset numbers the kept tokens from 0. RoPE sees only differences: the same logits.
  for (const auto& [row, offset] : left_cut) position_ids_[row].add_(offset);
}

SFTBatch SFTDataset::get(const std::vector<int64_t>& rows) const {
  torch::Tensor index = torch::tensor(rows, torch::kInt64);
  return SFTBatch{input_ids_.index_select(0, index), attention_mask_.index_select(0, index),
                  position_ids_.index_select(0, index), loss_mask_.index_select(0, index)};
}

SFTBatch SFTDataset::all() const { return SFTBatch{input_ids_, attention_mask_, position_ids_, loss_mask_}; }

}  // namespace verl::data
