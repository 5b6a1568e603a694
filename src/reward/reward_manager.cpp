#include "verl/reward/reward_manager.h"

#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>

#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/reward/scorers/digit_completion.h"
#include "verl/reward/scorers/reward_worker_pool.h"
#include "verl/reward/scorers/sandbox_fusion.h"

namespace verl::reward {

namespace {

using Json = nlohmann::json;
using RowExtra = std::vector<std::pair<std::string, Json>>;

Json extra_to_json(const ExtraValue& value) {
  struct Visitor {
    Json operator()(std::monostate) const { return nullptr; }
    Json operator()(bool v) const { return v; }
    Json operator()(int64_t v) const { return v; }
    Json operator()(double v) const { return v; }
    Json operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{}, value);
}

Json node_to_json(const config::Node& node) {
  switch (node.kind()) {
    case config::Kind::Null:
      return nullptr;
    case config::Kind::Bool:
      return node.as_bool();
    case config::Kind::Int:
      return node.as_int();
    case config::Kind::Float:
      return node.as_double();
    case config::Kind::String:
      return node.as_string();
    case config::Kind::List: {
      Json out = Json::array();
      for (const auto& item : node.items()) out.push_back(node_to_json(item));
      return out;
    }
    case config::Kind::Map: {
      Json out = Json::object();
      for (const auto& [key, value] : node.fields()) out[key] = node_to_json(value);
      return out;
    }
  }
  return nullptr;
}

// Python's print() text of a JSON value as verl would show it (strings as is).
std::string print_text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "None";
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_number_float()) return python_float_str(value.get<double>());
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<int32_t> row_ids(const torch::Tensor& row, int64_t start, int64_t end) {
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(std::max<int64_t>(end - start, 0)));
  const auto values = row.accessor<int64_t, 1>();
  for (int64_t j = start; j < end; ++j) ids.push_back(static_cast<int32_t>(values[j]));
  return ids;
}

const std::vector<Json>& required_column(const protocol::DataProto& data, const std::string& key,
                                         const std::string& why) {
  const auto it = data.non_tensor_batch.find(key);
  VERL_CHECK(it != data.non_tensor_batch.end(), "reward", "the batch has no non-tensor column '", key, "' (", why,
             ")");
  return it->second;
}

// The generated batch a reward manager reads: prompts [B,P] left-padded, responses [B,R], attention_mask [B,P+R],
// on the CPU as int64.
struct ResponseBatch {
  torch::Tensor prompts, responses, attention_mask;
  int64_t batch = 0, prompt_length = 0, response_length = 0;
};

ResponseBatch read_response_batch(const protocol::DataProto& data) {
  for (const char* key : {"prompts", "responses", "attention_mask"}) {
    VERL_CHECK(data.has_tensor(key), "reward", "the batch has no '", key,
               "' tensor (the reward manager needs prompts, responses and attention_mask)");
  }
  ResponseBatch rb;
  rb.prompts = data.tensor("prompts").to(torch::kCPU, torch::kInt64).contiguous();
  rb.responses = data.tensor("responses").to(torch::kCPU, torch::kInt64).contiguous();
  rb.attention_mask = data.tensor("attention_mask").to(torch::kCPU, torch::kInt64).contiguous();
  VERL_CHECK(rb.prompts.dim() == 2 && rb.responses.dim() == 2 && rb.attention_mask.dim() == 2, "reward",
             "prompts, responses and attention_mask must be 2-D, got ", rb.prompts.sizes(), ", ",
             rb.responses.sizes(), ", ", rb.attention_mask.sizes());
  rb.batch = rb.responses.size(0);
  rb.prompt_length = rb.prompts.size(1);
  rb.response_length = rb.responses.size(1);
  VERL_CHECK(rb.attention_mask.size(1) == rb.prompt_length + rb.response_length, "reward", "attention_mask has ",
             rb.attention_mask.size(1), " columns; expected prompts + responses = ", rb.prompt_length, " + ",
             rb.response_length);
  return rb;
}

// Valid prompt and response token counts of row i (0/1 mask checked).
std::pair<int64_t, int64_t> valid_lengths(const ResponseBatch& rb, int64_t i) {
  const auto mask = rb.attention_mask.accessor<int64_t, 2>();
  int64_t valid_prompt = 0;
  int64_t valid_response = 0;
  for (int64_t j = 0; j < rb.prompt_length; ++j) valid_prompt += mask[i][j];
  for (int64_t j = rb.prompt_length; j < rb.prompt_length + rb.response_length; ++j) valid_response += mask[i][j];
  VERL_CHECK(valid_prompt <= rb.prompt_length && valid_response <= rb.response_length && valid_prompt >= 0 &&
                 valid_response >= 0,
             "reward", "attention_mask row ", i, " is not a 0/1 mask");
  return {valid_prompt, valid_response};
}

// One row's outcome before the extra-info columns are assembled.
struct RowOutcome {
  ScoreResult result;
  bool failed = false;  // the call raised or timed out and the row scores 0 (on_error=zero, rate_limited)
  RowExtra manager_extra;
};

}  // namespace

OnRewardError parse_on_reward_error(const std::string& text) {
  if (text == "raise") return OnRewardError::kRaise;
  if (text == "zero") return OnRewardError::kZero;
  VERL_FAIL("reward", "custom_reward_function.on_error is '", text, "'; expected one of: raise, zero");
}

NaiveRewardManager::NaiveRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                       ComputeScoreFn compute_score, RewardManagerOptions options)
    : tokenizer_(std::move(tokenizer)), compute_score_(std::move(compute_score)), options_(std::move(options)) {
  VERL_CHECK(tokenizer_ != nullptr, "reward", "the reward manager needs a tokenizer");
  VERL_CHECK(static_cast<bool>(compute_score_), "reward", "the reward manager needs a compute_score function");
  VERL_CHECK(options_.num_examine >= 0, "reward", "num_examine must be >= 0, got ", options_.num_examine);
}

double NaiveRewardManager::shape_reward(double score, int64_t /*valid_response_length*/, RowExtra& /*row_extra*/) {
  return score;
}

namespace {

const Json* column_value(const protocol::DataProto& data, const char* key, size_t row) {
  const auto it = data.non_tensor_batch.find(key);
  return it == data.non_tensor_batch.end() ? nullptr : &it->second[row];
}

// verl 0.9.1's agent loop hands its extra fields to the scorer (tool_extra_fields): turn_scores and tool_rewards
// ([] for a single-turn rollout), and the prompt's messages (here when the batch holds raw_prompt).
void add_agent_loop_fields(const protocol::DataProto& data, size_t row, Json& extra_info) {
  for (const char* key : {"turn_scores", "tool_rewards"}) {
    const Json* value = column_value(data, key, row);
    extra_info[key] = value != nullptr ? *value : Json::array();
  }
  if (const Json* raw_prompt = column_value(data, "raw_prompt", row)) extra_info["raw_prompt"] = *raw_prompt;
}

}  // namespace

// verl 0.9.1's naive manager: the agent loop's fields, then num_turns and rollout_reward_scores.
void NaiveRewardManager::add_scorer_extra_info(const protocol::DataProto& data, size_t row, Json& extra_info) const {
  add_agent_loop_fields(data, row, extra_info);
  const Json* turns = column_value(data, "__num_turns__", row);
  extra_info["num_turns"] = turns != nullptr ? *turns : Json(nullptr);
  const Json* rollout_scores = column_value(data, "reward_scores", row);
  extra_info["rollout_reward_scores"] = rollout_scores != nullptr ? *rollout_scores : Json::object();
}

std::vector<ScoreOutcome> NaiveRewardManager::score_calls(const std::vector<ScoreCall>& calls,
                                                          const std::vector<std::string>& data_sources) {
  const config::RewardRateLimits* rate_limits = options_.rate_limits ? &*options_.rate_limits : nullptr;
  if (options_.score_batch) return options_.score_batch(calls, rate_limits);
  std::vector<ScoreOutcome> outcomes(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const ScoreCall& c = calls[i];
    try {
      outcomes[i].result = compute_score_(c.data_source, c.solution_str, c.ground_truth, c.extra_info);
    } catch (const RewardFunctionError& e) {
      outcomes[i].error = outcomes[i].raised = e.message();
    } catch (const Error& e) {
      // rate_limited records whatever a call raises as the sample's failure, as verl catches every exception there.
      if (rate_limits != nullptr) {
        outcomes[i].error = outcomes[i].raised = e.message();
        continue;
      }
      throw Error("reward", str_cat("row ", i, " (data_source '", data_sources[i], "'): ", e.message()));
    }
  }
  return outcomes;
}

std::string NaiveRewardManager::handle_failure(const ScoreOutcome& outcome, size_t row, const std::string& data_source,
                                               RowExtra& /*row_extra*/) {
  const std::string text = str_cat("reward function ", options_.score_fn_name, " raised on row ", row,
                                   " (data_source '", data_source, "'): ", outcome.error);
  if (options_.on_error == OnRewardError::kRaise) {
    throw Error("reward", text + " (set custom_reward_function.on_error=zero to score such samples 0)");
  }
  return text;
}

RewardResult NaiveRewardManager::compute(const protocol::DataProto& data) {
  RewardResult out;
  // A reward model already scored the batch: its scores are the reward (and the keys it lists, the extra info).
  if (data.has_tensor("rm_scores")) {
    out.reward_tensor = data.tensor("rm_scores");
    if (data.meta_info.is_object() && data.meta_info.contains("reward_extra_keys")) {
      for (const auto& key : data.meta_info.at("reward_extra_keys")) {
        VERL_CHECK(key.is_string(), "reward", "meta_info.reward_extra_keys must list strings, got ", key.dump());
        const std::string name = key.get<std::string>();
        out.reward_extra_info[name] = required_column(data, name, "listed in meta_info.reward_extra_keys");
      }
    }
    return out;
  }

  const ResponseBatch rb = read_response_batch(data);
  const int64_t batch = rb.batch;
  const int64_t response_length = rb.response_length;

  const auto& data_sources = required_column(data, options_.reward_fn_key, "data.reward_fn_key");
  const auto& reward_models = required_column(data, "reward_model", "its ground_truth is scored against");
  const auto extra_it = data.non_tensor_batch.find("extra_info");

  // The calls: each row's decoded response, ground truth and extra_info.
  std::vector<ScoreCall> calls(static_cast<size_t>(batch));
  std::vector<std::string> sources(static_cast<size_t>(batch));
  std::vector<int64_t> valid_responses(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) {
    const auto row_index = static_cast<size_t>(i);
    const int64_t valid_response = valid_lengths(rb, i).second;
    valid_responses[row_index] = valid_response;
    const Json& source_value = data_sources[row_index];
    VERL_CHECK(source_value.is_string(), "reward", "row ", i, ": column '", options_.reward_fn_key,
               "' (data.reward_fn_key) must be a string, got ", source_value.dump());
    sources[row_index] = source_value.get<std::string>();
    const Json& reward_model = reward_models[row_index];
    VERL_CHECK(reward_model.is_object() && reward_model.contains("ground_truth"), "reward", "row ", i,
               " (data_source '", sources[row_index],
               "'): reward_model must be an object with a \"ground_truth\", got ", reward_model.dump());
    Json extra_info = Json::object();
    if (extra_it != data.non_tensor_batch.end()) {
      const Json& value = extra_it->second[row_index];
      VERL_CHECK(value.is_object() || value.is_null(), "reward", "row ", i, ": extra_info must be an object, got ",
                 value.dump());
      if (value.is_object()) extra_info = value;
    }
    add_scorer_extra_info(data, row_index, extra_info);
    calls[row_index] =
        ScoreCall{sources[row_index], tokenizer_->decode(row_ids(rb.responses[i], 0, valid_response), true),
                  reward_model.at("ground_truth"), std::move(extra_info)};
  }

  std::vector<ScoreOutcome> outcomes = score_calls(calls, sources);
  VERL_CHECK(outcomes.size() == calls.size(), "reward", "the reward function gave ", outcomes.size(), " outcomes for ",
             calls.size(), " calls");

  torch::Tensor reward_tensor = torch::zeros({batch, response_length}, torch::kFloat32);
  auto rewards = reward_tensor.accessor<float, 2>();
  std::vector<RowOutcome> rows(static_cast<size_t>(batch));
  std::map<std::string, int64_t> printed;  // data source -> samples printed (verl's already_print_data_sources)
  int64_t failures = 0;
  std::string first_failure;
  for (int64_t i = 0; i < batch; ++i) {
    const auto row_index = static_cast<size_t>(i);
    RowOutcome& row = rows[row_index];
    ScoreOutcome& outcome = outcomes[row_index];
    if (outcome.result.has_value()) {
      row.result = std::move(*outcome.result);
      // verl 0.9.1's reward-loop managers: a plain number is also reward_extra_info["acc"] (so validation reports
      // val-core/<source>/acc and filter_groups.metric=acc works); a dict gives its own keys.
      if (!row.result.is_dict) row.manager_extra.emplace_back("acc", row.result.score);
    } else {
      std::string failure = handle_failure(outcome, row_index, sources[row_index], row.manager_extra);
      if (failures++ == 0) first_failure = std::move(failure);
      row.failed = true;
      row.result = ScoreResult::scalar(0.0);
    }
    const int64_t valid_response = valid_responses[row_index];
    const double reward = shape_reward(row.result.score, valid_response, row.manager_extra);
    // reward_tensor[i, valid_response_length - 1]: with no valid token, index -1 is the last column.
    const int64_t column = valid_response > 0 ? valid_response - 1 : response_length - 1;
    if (response_length > 0) rewards[i][column] = static_cast<float>(reward);

    int64_t& shown = printed[sources[row_index]];
    if (shown < options_.num_examine) {
      ++shown;
      const int64_t valid_prompt = valid_lengths(rb, i).first;
      // prompts[-valid_prompt:]: left padding; with no valid token Python's [-0:] is the whole row.
      const int64_t prompt_start = valid_prompt == 0 ? 0 : rb.prompt_length - valid_prompt;
      std::ostringstream text;
      text << "[prompt] " << tokenizer_->decode(row_ids(rb.prompts[i], prompt_start, rb.prompt_length), true)
           << "\n[response] " << calls[row_index].solution_str << "\n[ground_truth] "
           << print_text(calls[row_index].ground_truth) << "\n";
      text << "[score] " << python_float_str(row.result.score) << "\n";
      for (const auto& [key, value] : row.result.extra) text << "[" << key << "] " << python_str(value) << "\n";
      std::cout << text.str() << std::flush;
    }
  }

  if (failures > 0) {
    VERL_LOG(Warn, "reward") << failures << " of " << batch << " samples scored 0 because the reward function "
                             << failure_reason() << "; first: " << first_failure;
  }

  // reward_extra_info: every key of the dict results (score included) and the manager's own entries, one value
  // per row. A row that failed gets score and acc 0.0 and null for the other keys; the failure keys of
  // rate_limited (error, timeout) are null on the rows that did not fail.
  std::vector<std::string> keys;
  std::set<std::string> seen;
  const auto add_key = [&](const std::string& key) {
    if (seen.insert(key).second) keys.push_back(key);
  };
  for (const RowOutcome& row : rows) {
    if (row.result.is_dict) {
      add_key("score");
      for (const auto& [key, value] : row.result.extra) add_key(key);
    }
    for (const auto& [key, value] : row.manager_extra) add_key(key);
  }
  for (const std::string& key : keys) {
    std::vector<Json> values;
    values.reserve(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const RowOutcome& row = rows[i];
      const Json* found = nullptr;
      Json scratch;
      for (const auto& [k, v] : row.manager_extra) {
        if (k == key) found = &v;
      }
      if (found == nullptr && row.result.is_dict) {
        if (key == "score") {
          scratch = row.result.score;
          found = &scratch;
        }
        for (const auto& [k, v] : row.result.extra) {
          if (k == key) {
            scratch = extra_to_json(v);
            found = &scratch;
          }
        }
      }
      if (found != nullptr) {
        values.push_back(*found);
      } else if (row.failed) {
        values.push_back(key == "score" || key == "acc" ? Json(0.0) : Json(nullptr));
      } else if (key == "error" || key == "timeout") {
        values.push_back(nullptr);
      } else {
        VERL_FAIL("reward", "reward function ", options_.score_fn_name, " returned the key '", key,
                  "' for some samples but not for row ", i, " (data_source '", sources[i],
                  "'); every sample's result must have the same keys (a number counts as no keys)");
      }
    }
    out.reward_extra_info[key] = std::move(values);
  }
  out.reward_tensor = reward_tensor;
  return out;
}

DAPORewardManager::DAPORewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                     ComputeScoreFn compute_score, RewardManagerOptions options)
    : NaiveRewardManager(std::move(tokenizer), std::move(compute_score), std::move(options)) {
  // verl 0.9.1's checks, made when the penalty is on.
  if (options_.overlong_buffer.has_value() && options_.overlong_buffer->enable) {
    const OverlongBufferConfig& cfg = *options_.overlong_buffer;
    VERL_CHECK(options_.max_resp_len.has_value(), "reward",
               "reward_model.reward_kwargs.max_resp_len must be set when overlong_buffer_cfg.enable is true (dapo)");
    VERL_CHECK(*options_.max_resp_len >= cfg.len, "reward", "reward_model.reward_kwargs.max_resp_len (",
               *options_.max_resp_len, ") must be >= overlong_buffer_cfg.len (", cfg.len, ")");
    VERL_CHECK(cfg.len > 0, "reward",
               "reward_model.reward_kwargs.overlong_buffer_cfg.len must be > 0 when enabled, got ", cfg.len,
               " (set overlong_buffer_cfg.enable=false to turn the penalty off)");
  }
}

// verl 0.9.1's dapo manager passes the sample's extra_info as it is.
void DAPORewardManager::add_scorer_extra_info(const protocol::DataProto& /*data*/, size_t /*row*/,
                                              Json& /*extra_info*/) const {}

double DAPORewardManager::shape_reward(double score, int64_t valid_response_length, RowExtra& row_extra) {
  if (!options_.overlong_buffer.has_value() || !options_.overlong_buffer->enable) return score;
  const OverlongBufferConfig& cfg = *options_.overlong_buffer;
  const int64_t expected_len = *options_.max_resp_len - cfg.len;
  const int64_t exceed_len = valid_response_length - expected_len;
  // verl computes this with a float32 tensor: -exceed_len / len * penalty_factor, capped at 0.
  float penalty = static_cast<float>(-exceed_len) / static_cast<float>(cfg.len);
  penalty = penalty * static_cast<float>(cfg.penalty_factor);
  penalty = std::min(penalty, 0.0f);
  if (cfg.log) {
    row_extra.emplace_back("overlong_reward", static_cast<double>(penalty));
    row_extra.emplace_back("overlong", penalty < 0);
  }
  return static_cast<double>(static_cast<float>(score) + penalty);
}

GDPORewardManager::GDPORewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                     ComputeScoreFn compute_score, RewardManagerOptions options)
    : NaiveRewardManager(std::move(tokenizer), std::move(compute_score), std::move(options)) {}

void GDPORewardManager::add_scorer_extra_info(const protocol::DataProto& /*data*/, size_t /*row*/,
                                              Json& extra_info) const {
  extra_info["experiment_name"] = options_.experiment_name;
}

RateLimitedRewardManager::RateLimitedRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                   ComputeScoreFn compute_score, RewardManagerOptions options)
    : NaiveRewardManager(std::move(tokenizer), std::move(compute_score), std::move(options)) {
  VERL_CHECK(options_.rate_limits.has_value(), "reward", "the rate_limited reward manager needs its budget");
}

// verl 0.9.1's rate_limited manager: the agent loop's fields only.
void RateLimitedRewardManager::add_scorer_extra_info(const protocol::DataProto& data, size_t row,
                                                     Json& extra_info) const {
  add_agent_loop_fields(data, row, extra_info);
}

std::string RateLimitedRewardManager::handle_failure(const ScoreOutcome& outcome, size_t row,
                                                     const std::string& data_source, RowExtra& row_extra) {
  if (outcome.timed_out) {
    row_extra.emplace_back("timeout", true);
  } else {
    row_extra.emplace_back("error", outcome.raised);
  }
  row_extra.emplace_back("acc", 0.0);
  return str_cat("row ", row, " (data_source '", data_source, "'): ", outcome.error);
}

DigitCompletionRewardManager::DigitCompletionRewardManager(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                           int64_t num_examine)
    : tokenizer_(std::move(tokenizer)), num_examine_(num_examine) {
  VERL_CHECK(tokenizer_ != nullptr, "reward", "the reward manager needs a tokenizer");
}

RewardResult DigitCompletionRewardManager::compute(const protocol::DataProto& data) {
  const ResponseBatch rb = read_response_batch(data);
  const auto& reward_models = required_column(data, "reward_model", "its ground_truth is scored against");
  torch::Tensor reward_tensor = torch::zeros({rb.batch, rb.response_length}, torch::kFloat32);
  auto rewards = reward_tensor.accessor<float, 2>();
  for (int64_t i = 0; i < rb.batch; ++i) {
    const auto [valid_prompt, valid_response] = valid_lengths(rb, i);
    const Json& reward_model = reward_models[static_cast<size_t>(i)];
    VERL_CHECK(reward_model.is_object() && reward_model.contains("ground_truth") &&
                   reward_model.at("ground_truth").is_string(),
               "reward", "row ", i, ": reward_model must be an object with a string \"ground_truth\" (the completion "
               "or the task prompt \"a,b:max,k\"), got ", reward_model.dump());
    const std::string target =
        digit_completion_target(reward_model.at("ground_truth").get_ref<const std::string&>());
    // verl decodes with the separator and EOS stripped: special tokens skipped.
    const std::string response = tokenizer_->decode(row_ids(rb.responses[i], 0, valid_response), true);
    const std::vector<float> token_rewards =
        digit_completion_token_rewards(response, target, static_cast<size_t>(valid_response));
    float total = 0.0f;
    for (int64_t j = 0; j < valid_response; ++j) {
      rewards[i][j] = token_rewards[static_cast<size_t>(j)];
      total += token_rewards[static_cast<size_t>(j)];
    }
    if (i < num_examine_) {
      const int64_t prompt_start = rb.prompt_length - valid_prompt;
      std::cout << "[prompt] " << tokenizer_->decode(row_ids(rb.prompts[i], prompt_start, rb.prompt_length), true)
                << "\n[response] " << response << "\n[ground_truth] " << target << "\n[score] "
                << python_float_str(total) << "\n"
                << std::flush;
    }
  }
  RewardResult out;
  out.reward_tensor = reward_tensor;
  return out;
}

const std::vector<std::string>& supported_reward_managers() {
  static const std::vector<std::string> names = {"naive", "dapo", "gdpo", "rate_limited", "remote", "digit_completion"};
  return names;
}

namespace {

std::optional<OverlongBufferConfig> parse_overlong_buffer(const Json& value) {
  if (value.is_null()) return std::nullopt;
  VERL_CHECK(value.is_object(), "reward", "reward_model.reward_kwargs.overlong_buffer_cfg must be a map, got ",
             value.dump());
  OverlongBufferConfig cfg;
  for (const auto& [key, item] : value.items()) {
    const std::string where = "reward_model.reward_kwargs.overlong_buffer_cfg." + key;
    if (key == "enable" || key == "log") {
      VERL_CHECK(item.is_boolean(), "reward", where, " must be a bool, got ", item.dump());
      (key == "enable" ? cfg.enable : cfg.log) = item.get<bool>();
    } else if (key == "len") {
      VERL_CHECK(item.is_number_integer(), "reward", where, " must be an integer, got ", item.dump());
      cfg.len = item.get<int64_t>();
    } else if (key == "penalty_factor") {
      VERL_CHECK(item.is_number(), "reward", where, " must be a number, got ", item.dump());
      cfg.penalty_factor = item.get<double>();
    } else {
      VERL_FAIL("reward", "unknown key '", where, "'; expected enable, len, penalty_factor, log");
    }
  }
  return cfg;
}

}  // namespace

std::unique_ptr<RewardManager> load_reward_manager(const config::PPOConfig& config,
                                                   std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                   int64_t num_examine) {
  const std::string& manager = config.reward_model.reward_manager;
  const auto& names = supported_reward_managers();
  VERL_CHECK(std::find(names.begin(), names.end(), manager) != names.end(), "reward",
             "reward_model.reward_manager is '", manager, "'; verl.cpp implements: ", join(names, ", "));

  if (manager == "digit_completion") {
    const Json reward_kwargs = node_to_json(config.reward_model.reward_kwargs);
    const auto& custom = config.custom_reward_function;
    VERL_CHECK(!custom.path.has_value() || custom.path->empty(), "reward",
               "custom_reward_function.path is set, but the digit_completion reward manager computes its own dense "
               "reward; use reward_model.reward_manager=naive for a custom function");
    VERL_CHECK(reward_kwargs.empty(), "reward", "reward_model.reward_kwargs has key '", reward_kwargs.begin().key(),
               "', which the digit_completion reward manager does not take");
    return std::make_unique<DigitCompletionRewardManager>(std::move(tokenizer), num_examine);
  }

  RewardManagerOptions options;
  options.num_examine = num_examine;
  options.reward_fn_key = config.data.reward_fn_key;
  options.on_error = parse_on_reward_error(config.custom_reward_function.on_error);
  options.experiment_name = config.trainer.experiment_name;

  ComputeScoreFn compute_score;
  const auto& custom = config.custom_reward_function;
  const bool python_file = custom.path.has_value() && !custom.path->empty() && !ends_with(*custom.path, ".so");
  if (manager == "remote" && python_file) {
    // verl 0.9.1's remote manager: each call in one of reward.num_workers worker processes.
    RewardWorkerPoolOptions pool_options;
    pool_options.path = *custom.path;
    pool_options.name = custom.name;
    pool_options.reward_kwargs = node_to_json(custom.reward_kwargs);
    pool_options.limits.timeout_s = custom.timeout;
    pool_options.num_workers = config.reward_model.num_workers;
    std::shared_ptr<RewardWorkerPool> pool = shared_reward_worker_pool(pool_options);
    options.score_batch = [pool](const std::vector<ScoreCall>& calls, const config::RewardRateLimits*) {
      return pool->score(calls);
    };
    compute_score = [pool](const std::string& data_source, const std::string& solution_str, const Json& ground_truth,
                           const Json& extra_info) {
      ScoreOutcome outcome =
          std::move(pool->score({ScoreCall{data_source, solution_str, ground_truth, extra_info}})[0]);
      if (!outcome.result) throw RewardFunctionError("reward", outcome.error);
      return *outcome.result;
    };
    options.score_fn_name = "'" + custom.name + "' from '" + *custom.path + "'";
    VERL_LOG(Info, "reward") << "using customized reward function '" << custom.name << "' from '" << *custom.path
                             << "' in " << pool->num_workers() << " worker processes (reward_manager=remote)";
  } else if (custom.path.has_value() && !custom.path->empty()) {
    UserCodeLimits limits;
    limits.timeout_s = custom.timeout;
    RewardFunction function =
        load_reward_function(*custom.path, custom.name, node_to_json(custom.reward_kwargs), limits);
    compute_score = std::move(function.score);
    options.score_batch = std::move(function.score_batch);
    options.score_fn_name = "'" + custom.name + "' from '" + *custom.path + "'";
    VERL_LOG(Info, "reward") << "using customized reward function '" << custom.name << "' from '" << *custom.path
                             << "'";
  } else {
    // reward.sandbox_fusion.url: the code data sources are scored by that service (verl's sandbox_fusion).
    std::shared_ptr<const SandboxFusionClient> sandbox;
    const config::SandboxFusionConfig& sandbox_config = config.reward_model.sandbox_fusion;
    if (sandbox_config.url.has_value()) {
      sandbox = std::make_shared<const SandboxFusionClient>(
          SandboxFusionOptions{*sandbox_config.url, sandbox_config.max_concurrent, sandbox_config.memory_limit_mb});
      VERL_LOG(Info, "reward") << "code data sources are scored by the sandbox fusion service at "
                               << *sandbox_config.url << " (at most " << sandbox_config.max_concurrent
                               << " requests at once)";
    }
    compute_score = default_score_function(sandbox);
    // The code data sources' scorer runs reward.num_workers calls at once; rate_limited paces calls.
    if (manager != "rate_limited") options.score_batch = default_score_batch(config.reward_model.num_workers, sandbox);
  }

  const Json reward_kwargs = node_to_json(config.reward_model.reward_kwargs);
  if (manager == "dapo") {
    for (const auto& [key, value] : reward_kwargs.items()) {
      if (key == "max_resp_len") {
        VERL_CHECK(value.is_number_integer() || value.is_null(), "reward",
                   "reward_model.reward_kwargs.max_resp_len must be an integer, got ", value.dump());
        if (value.is_number_integer()) options.max_resp_len = value.get<int64_t>();
      } else if (key == "overlong_buffer_cfg") {
        options.overlong_buffer = parse_overlong_buffer(value);
      } else {
        VERL_FAIL("reward", "reward_model.reward_kwargs has key '", key,
                  "', which the dapo reward manager does not take (it takes max_resp_len, overlong_buffer_cfg)");
      }
    }
    return std::make_unique<DAPORewardManager>(std::move(tokenizer), std::move(compute_score), std::move(options));
  }
  VERL_CHECK(reward_kwargs.empty(), "reward", "reward_model.reward_kwargs has key '", reward_kwargs.begin().key(),
             "', which the ", manager, " reward manager does not take");
  if (manager == "gdpo") {
    return std::make_unique<GDPORewardManager>(std::move(tokenizer), std::move(compute_score), std::move(options));
  }
  if (manager == "rate_limited") {
    options.rate_limits = config.reward_model.rate_limits;
    return std::make_unique<RateLimitedRewardManager>(std::move(tokenizer), std::move(compute_score),
                                                      std::move(options));
  }
  return std::make_unique<NaiveRewardManager>(std::move(tokenizer), std::move(compute_score), std::move(options));
}

}  // namespace verl::reward
