#include "verl/data/rl_dataset.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/data/numpy_random.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"
#include "verl/config/node_json.h"
#include "verl/tokenizer/chat_template.h"

namespace verl::data {

namespace {

constexpr const char* kRlDatasetComponent = "data";

bool ends_with_ci(const std::string& text, const std::string& suffix) {
  if (text.size() < suffix.size()) return false;
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[text.size() - suffix.size() + i])) != suffix[i]) return false;
  }
  return true;
}

// A parquet / JSONL value as JSON; Json is nlohmann::json or nlohmann::ordered_json (keeps struct field order).
template <class Json>
Json value_as(const io::Value& value) {
  using Kind = io::Value::Kind;
  switch (value.kind()) {
    case Kind::kNull: return nullptr;
    case Kind::kBool: return value.as_bool();
    case Kind::kInt: return value.as_int();
    case Kind::kDouble: return value.as_double();
    case Kind::kString: return value.as_string();
    case Kind::kList: {
      Json out = Json::array();
      for (const auto& item : value.as_list()) out.push_back(value_as<Json>(item));
      return out;
    }
    case Kind::kStruct: {
      Json out = Json::object();
      for (const auto& [key, item] : value.as_struct()) out[key] = value_as<Json>(item);
      return out;
    }
  }
  return nullptr;
}

nlohmann::ordered_json value_to_ordered_json(const io::Value& value) { return value_as<nlohmann::ordered_json>(value); }

nlohmann::json value_to_json(const io::Value& value) { return value_as<nlohmann::json>(value); }

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.is_open(), kRlDatasetComponent, "cannot open data file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  VERL_CHECK(!in.bad(), kRlDatasetComponent, "read error in data file '", path, "'");
  return text.str();
}

// HF datasets' "json" loader: JSON Lines, or one JSON array of objects.
std::vector<io::Value> read_json_rows(const std::string& path) {
  if (ends_with_ci(path, ".jsonl")) return io::read_jsonl(path);
  const std::string text = read_whole_file(path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    io::Value doc = io::parse_json(text, path);
    return doc.as_list();
  }
  return io::read_jsonl(path);
}

}  // namespace

std::string expand_user(const std::string& path) {
  if (path == "~" || starts_with(path, "~/")) {
    const char* home = std::getenv("HOME");
    if (home != nullptr && *home != '\0') return std::string(home) + path.substr(1);
  }
  return path;
}

std::vector<std::string> data_files_from_config(const std::vector<std::string>& files) {
  VERL_CHECK(!files.empty(), kRlDatasetComponent, "no data files given (data.train_files / data.val_files is empty)");
  std::vector<std::string> out;
  for (const auto& file : files) out.push_back(expand_user(file));
  return out;
}

std::vector<std::string> data_files_from_config(const std::string& file) {
  return data_files_from_config(std::vector<std::string>{file});
}

std::vector<std::string> data_files_from_config(const config::Node& node_or_string) {
  if (node_or_string.kind() == config::Kind::String) return data_files_from_config(node_or_string.as_string());
  VERL_CHECK(node_or_string.is_list(), kRlDatasetComponent, "data files must be a path or a list of paths, got ",
             config::kind_name(node_or_string.kind()));
  std::vector<std::string> files;
  for (const auto& item : node_or_string.items()) {
    VERL_CHECK(item.kind() == config::Kind::String, kRlDatasetComponent, "data files list holds ",
               config::kind_name(item.kind()), " '", item.to_text(), "', expected paths");
    files.push_back(item.as_string());
  }
  return data_files_from_config(files);
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> pad_or_truncate(const std::vector<int32_t>& ids, int64_t max_length,
                                                                     int32_t pad_id, bool left_pad,
                                                                     const std::string& truncation) {
  VERL_CHECK(max_length > 0, kRlDatasetComponent, "max_length must be > 0, got ", max_length);
  const auto n = static_cast<int64_t>(ids.size());
  std::vector<int64_t> out_ids, mask;
  if (n <= max_length) {
    const int64_t pad = max_length - n;
    if (left_pad) {
      out_ids.assign(static_cast<size_t>(pad), pad_id);
      mask.assign(static_cast<size_t>(pad), 0);
    }
    out_ids.insert(out_ids.end(), ids.begin(), ids.end());
    mask.insert(mask.end(), static_cast<size_t>(n), 1);
    if (!left_pad) {
      out_ids.insert(out_ids.end(), static_cast<size_t>(pad), pad_id);
      mask.insert(mask.end(), static_cast<size_t>(pad), 0);
    }
    return {out_ids, mask};
  }
  if (truncation == "left") {
    out_ids.assign(ids.end() - max_length, ids.end());
  } else if (truncation == "right") {
    out_ids.assign(ids.begin(), ids.begin() + max_length);
  } else if (truncation == "middle") {
    const int64_t left_half = max_length / 2;
    const int64_t right_half = max_length - left_half;
    out_ids.assign(ids.begin(), ids.begin() + left_half);
    out_ids.insert(out_ids.end(), ids.end() - right_half, ids.end());
  } else if (truncation == "error") {
    VERL_FAIL(kRlDatasetComponent, "sequence length ", n, " is larger than max_length ", max_length);
  } else {
    VERL_FAIL(kRlDatasetComponent, "unknown truncation '", truncation, "'; expected error, left, right or middle");
  }
  mask.assign(static_cast<size_t>(max_length), 1);
  return {out_ids, mask};
}

void RLHFDataset::check_config() {
  VERL_CHECK(tokenizer_ != nullptr, kRlDatasetComponent, "RLHFDataset needs a tokenizer");
  VERL_CHECK(config_.max_prompt_length > 0, kRlDatasetComponent, "data.max_prompt_length must be > 0, got ",
             config_.max_prompt_length);
  VERL_CHECK(config_.truncation == "error" || config_.truncation == "left" || config_.truncation == "right" ||
                 config_.truncation == "middle",
             kRlDatasetComponent, "data.truncation is '", config_.truncation,
             "'; expected error, left, right or middle");
  VERL_CHECK(!config_.prompt_key.empty(), kRlDatasetComponent, "data.prompt_key is empty");
  if (config_.apply_chat_template_kwargs.is_map()) {
    chat_template_kwargs_ = config::node_to_json(config_.apply_chat_template_kwargs);
  } else {
    VERL_CHECK(config_.apply_chat_template_kwargs.is_null(), kRlDatasetComponent,
               "data.apply_chat_template_kwargs must be a map");
    chat_template_kwargs_ = nlohmann::ordered_json::object();
  }
  if (auto pad = tokenizer_->pad_token_id()) {
    pad_token_id_ = *pad;
  } else if (auto eos = tokenizer_->eos_token_id()) {
    pad_token_id_ = *eos;  // verl's hf_tokenizer: pad_token = eos_token when the tokenizer has none
  } else {
    VERL_FAIL(kRlDatasetComponent, "the tokenizer has neither a pad token nor an eos token; left padding needs one");
  }
}

RLHFDataset::RLHFDataset(std::vector<std::string> files, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                         const config::DataConfig& config, int64_t max_samples,
                         const nlohmann::ordered_json& filter_tool_schemas)
    : files_(data_files_from_config(files)),
      tokenizer_(std::move(tokenizer)),
      config_(config),
      prompt_column_(config.prompt_key) {
  check_config();
  for (size_t f = 0; f < files_.size(); ++f) load_file(static_cast<int32_t>(f));
  rows_read_ = size();
  VERL_LOG(Info, kRlDatasetComponent) << "dataset len: " << rows_read_ << " (" << join(files_, ", ") << ")";

  if (max_samples > 0 && max_samples < size()) {
    std::vector<int64_t> chosen;
    if (config_.shuffle) {
      NumpyGenerator rng(static_cast<uint64_t>(config_.seed.value_or(1)));
      chosen = rng.choice_without_replacement(size(), max_samples);
    } else {
      for (int64_t i = 0; i < max_samples; ++i) chosen.push_back(i);
    }
    std::vector<Row> selected;
    selected.reserve(chosen.size());
    for (int64_t i : chosen) selected.push_back(std::move(rows_[static_cast<size_t>(i)]));
    rows_ = std::move(selected);
    VERL_LOG(Info, kRlDatasetComponent) << "selected " << max_samples << " samples out of " << rows_read_;
  }

  if (config_.filter_overlong_prompts) {
    std::vector<Row> kept;
    kept.reserve(rows_.size());
    for (size_t i = 0; i < rows_.size(); ++i) {
      const std::string text = prompt_text(static_cast<int64_t>(i), filter_tool_schemas);
      if (static_cast<int64_t>(tokenizer_->encode(text, /*add_special_tokens=*/false).size()) <=
          config_.max_prompt_length) {
        kept.push_back(std::move(rows_[i]));
      }
    }
    rows_filtered_out_ = static_cast<int64_t>(rows_.size() - kept.size());
    rows_ = std::move(kept);
    VERL_LOG(Info, kRlDatasetComponent) << "filter dataset len: " << size() << " (" << rows_filtered_out_
                                        << " prompts longer than " << config_.max_prompt_length << " tokens dropped)";
  }
}

RLHFDataset::RLHFDataset(CustomDatasetRows custom_rows, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                         const config::DataConfig& config)
    : tokenizer_(std::move(tokenizer)),
      config_(config),
      prompt_column_("raw_prompt"),
      custom_source_(custom_rows.source) {
  check_config();
  rows_.reserve(custom_rows.rows.size());
  for (size_t r = 0; r < custom_rows.rows.size(); ++r) {
    Row row{std::move(custom_rows.rows[r]), -1, static_cast<int64_t>(r)};
    for (const auto& [key, value] : row.value.as_struct()) {
      bool known = false;
      for (const auto& column : columns_) known = known || column == key;
      if (!known) columns_.push_back(key);
    }
    rows_.push_back(std::move(row));
  }
  rows_read_ = size();
}

void RLHFDataset::load_file(int32_t file_index) {
  const std::string& path = files_[static_cast<size_t>(file_index)];
  VERL_CHECK(std::filesystem::exists(path), kRlDatasetComponent, "data file '", path, "' does not exist");
  VERL_CHECK(!std::filesystem::is_directory(path), kRlDatasetComponent, "data file '", path,
             "' is a directory, expected a file");
  std::vector<io::Value> rows;
  if (ends_with_ci(path, ".parquet")) {
    io::parquet::Reader reader(path);
    const std::vector<std::string> names = reader.column_names();
    bool has_prompt = false;
    for (const auto& name : names) has_prompt = has_prompt || name == config_.prompt_key;
    VERL_CHECK(has_prompt, kRlDatasetComponent, "data file '", path, "' has no column '", config_.prompt_key,
               "' (data.prompt_key); its columns are: ", join(names, ", "));
    rows = reader.read_all();
  } else if (ends_with_ci(path, ".jsonl") || ends_with_ci(path, ".json")) {
    rows = read_json_rows(path);
  } else {
    VERL_FAIL(kRlDatasetComponent, "data file '", path, "': unsupported format; expected .parquet, .jsonl or .json");
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    Row row{std::move(rows[r]), file_index, static_cast<int64_t>(r)};
    VERL_CHECK(row.value.is_struct(), kRlDatasetComponent, where(row), " is ", io::kind_name(row.value.kind()),
               ", expected an object with a '", config_.prompt_key, "' field");
    const io::Value* prompt = row.value.find(config_.prompt_key);
    VERL_CHECK(prompt != nullptr, kRlDatasetComponent, where(row), " has no '", config_.prompt_key,
               "' field (data.prompt_key)");
    VERL_CHECK(prompt->is_list(), kRlDatasetComponent, where(row), ": '", config_.prompt_key,
               "' must be a list of chat messages ({role, content}), got ", io::kind_name(prompt->kind()));
    for (const auto& [key, value] : row.value.as_struct()) {
      bool known = false;
      for (const auto& column : columns_) known = known || column == key;
      if (!known) columns_.push_back(key);
    }
    rows_.push_back(std::move(row));
  }
}

std::string RLHFDataset::where(const Row& row) const {
  if (row.file < 0) return str_cat(custom_source_, " row ", row.row_in_file);
  return str_cat("data file '", files_[static_cast<size_t>(row.file)], "' row ", row.row_in_file);
}

std::string RLHFDataset::prompt_text(int64_t row, const nlohmann::ordered_json& tools) const {
  VERL_CHECK(row >= 0 && row < size(), kRlDatasetComponent, "row ", row, " is outside the dataset (", size(), " rows)");
  const Row& r = rows_[static_cast<size_t>(row)];
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = value_to_ordered_json(*r.value.find(prompt_column_));
  inputs.add_generation_prompt = true;
  inputs.tools = tools;
  inputs.extra_kwargs = chat_template_kwargs_;
  inputs.limits.timeout_s = config_.chat_template_timeout;
  try {
    return tokenizer::apply_chat_template(*tokenizer_, inputs);
  } catch (const Error& e) {
    VERL_FAIL(kRlDatasetComponent, where(r), ": chat template failed on '", prompt_column_, "': ", e.message());
  }
}

std::vector<int32_t> RLHFDataset::prompt_ids(int64_t row) const {
  return tokenizer_->encode(prompt_text(row), /*add_special_tokens=*/false);
}

std::vector<int32_t> RLHFDataset::truncate(const Row& row, std::vector<int32_t> ids) const {
  const int64_t max = config_.max_prompt_length;
  const auto n = static_cast<int64_t>(ids.size());
  if (n <= max) return ids;
  const std::string& mode = config_.truncation;
  VERL_CHECK(mode != "error", kRlDatasetComponent, where(row), ": prompt ('", prompt_column_, "') is ", n,
             " tokens after the chat template, longer than data.max_prompt_length=", max,
             " (data.truncation=error; set data.filter_overlong_prompts=true or data.truncation=left|right|middle)");
  if (mode == "left") return std::vector<int32_t>(ids.end() - max, ids.end());
  if (mode == "right") return std::vector<int32_t>(ids.begin(), ids.begin() + max);
  const int64_t left_half = max / 2;
  std::vector<int32_t> out(ids.begin(), ids.begin() + left_half);
  out.insert(out.end(), ids.end() - (max - left_half), ids.end());
  return out;
}

protocol::DataProto RLHFDataset::collate(const std::vector<int64_t>& rows) const {
  const auto n = static_cast<int64_t>(rows.size());
  const int64_t width = config_.max_prompt_length;
  torch::Tensor input_ids = torch::empty({n, width}, torch::kInt64);
  torch::Tensor attention_mask = torch::empty({n, width}, torch::kInt64);
  torch::Tensor position_ids = torch::empty({n, width}, torch::kInt64);
  auto ids_a = input_ids.accessor<int64_t, 2>();
  auto mask_a = attention_mask.accessor<int64_t, 2>();
  auto pos_a = position_ids.accessor<int64_t, 2>();

  // Columns __getitem__ sets itself replace dataset columns of the same name, as in verl's row_dict.
  // A custom class's __getitem__ is verl's row_dict itself: its index / tools_kwargs / interaction_kwargs stand.
  const bool custom = !custom_source_.empty();
  std::set<std::string> generated = {"raw_prompt_ids", "index", "tools_kwargs", "interaction_kwargs"};
  if (config_.return_raw_chat) generated.insert("raw_prompt");
  if (config_.return_full_prompt) generated.insert("full_prompts");
  std::vector<std::string> kept_columns;
  for (const auto& column : columns_) {
    if (column != prompt_column_ && generated.count(column) == 0) kept_columns.push_back(column);
  }
  protocol::NonTensorMap columns;
  for (const auto& column : kept_columns) columns[column].reserve(rows.size());
  std::vector<protocol::Json>& raw_prompt_ids = columns["raw_prompt_ids"];
  std::vector<protocol::Json>& index = columns["index"];
  std::vector<protocol::Json>& tools_kwargs = columns["tools_kwargs"];
  std::vector<protocol::Json>& interaction_kwargs = columns["interaction_kwargs"];

  for (int64_t b = 0; b < n; ++b) {
    const int64_t row_index = rows[static_cast<size_t>(b)];
    VERL_CHECK(row_index >= 0 && row_index < size(), kRlDatasetComponent, "row ", row_index,
               " is outside the dataset (", size(), " rows)");
    const Row& row = rows_[static_cast<size_t>(row_index)];
    const std::string text = prompt_text(row_index);
    const std::vector<int32_t> ids = truncate(row, tokenizer_->encode(text, /*add_special_tokens=*/false));
    auto [padded, mask] = pad_or_truncate(ids, width, pad_token_id_, /*left_pad=*/true, config_.truncation);
    int64_t position = 0;
    for (int64_t t = 0; t < width; ++t) {
      ids_a[b][t] = padded[static_cast<size_t>(t)];
      mask_a[b][t] = mask[static_cast<size_t>(t)];
      position += mask[static_cast<size_t>(t)];
      pos_a[b][t] = std::max<int64_t>(position - 1, 0);
    }

    for (const auto& column : kept_columns) {
      const io::Value* value = row.value.find(column);
      columns[column].push_back(value != nullptr ? value_to_json(*value) : protocol::Json(nullptr));
    }
    raw_prompt_ids.push_back(protocol::Json(std::vector<int64_t>(ids.begin(), ids.end())));
    if (config_.return_raw_chat) columns["raw_prompt"].push_back(value_to_json(*row.value.find(prompt_column_)));
    if (config_.return_full_prompt) columns["full_prompts"].push_back(text);
    const io::Value* extra = row.value.find("extra_info");
    auto extra_field = [&](const char* key) -> const io::Value* {
      if (custom) return row.value.find(key);
      return (extra != nullptr && extra->is_struct()) ? extra->find(key) : nullptr;
    };
    const io::Value* idx = extra_field("index");
    index.push_back(idx != nullptr && !idx->is_null() ? value_to_json(*idx) : protocol::Json(0));
    const io::Value* tools = extra_field("tools_kwargs");
    tools_kwargs.push_back(tools != nullptr && !tools->is_null() ? value_to_json(*tools) : protocol::Json::object());
    const io::Value* interaction = extra_field("interaction_kwargs");
    interaction_kwargs.push_back(interaction != nullptr && !interaction->is_null() ? value_to_json(*interaction)
                                                                                    : protocol::Json::object());
  }
  if (config_.return_raw_chat) columns["raw_prompt"];  // present even for an empty batch
  if (config_.return_full_prompt) columns["full_prompts"];
  return protocol::DataProto::from_dict(
      {{"input_ids", input_ids}, {"attention_mask", attention_mask}, {"position_ids", position_ids}},
      std::move(columns));
}

}  // namespace verl::data
