// PPOTrainer validation and generation dumps (verl's _validate, _maybe_log_val_generations,
// _dump_generations, _log_rollout_data).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/numpy_random.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::trainer {

namespace {

using algo::MetricMap;
using Json = nlohmann::json;

// Python's json.dumps(value, ensure_ascii=False): ", " and ": " separators, keys in insertion order.
std::string python_json(const nlohmann::ordered_json& value) {
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += nlohmann::ordered_json(it.key()).dump() + ": " + python_json(it.value());
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_json(value[i]);
    return out + "]";
  }
  if (value.is_null()) return "null";
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  }
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace);
}

Json ground_truth_of(const DataProto& batch, int64_t row) {
  if (!batch.non_tensor_batch.count("reward_model")) return Json();
  const Json& rm = batch.column("reward_model")[static_cast<size_t>(row)];
  return rm.is_object() && rm.contains("ground_truth") ? rm["ground_truth"] : Json();
}

}  // namespace

std::string PPOTrainer::decode(const torch::Tensor& ids) const {
  torch::Tensor row = ids.to(torch::kInt64).contiguous();
  std::vector<int32_t> tokens(static_cast<size_t>(row.numel()));
  const int64_t* data = row.data_ptr<int64_t>();
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(data[i]);
  return tokenizer_->decode(tokens, /*skip_special_tokens=*/true);
}

MetricMap PPOTrainer::validate() {
  const config::PPOConfig& cfg = *config_;
  std::vector<std::string> data_sources, sample_inputs, sample_uids, sample_outputs;
  std::vector<Json> sample_gts;
  std::vector<double> sample_scores;
  std::map<std::string, std::vector<Json>> reward_extra_infos;
  std::vector<double> sample_turns;  // __num_turns__ of every sample, when the rollout reports it
  val_dataloader_->start_epoch(val_passes_++);  // a new epoch restarts the (unshuffled) validation loader
  int64_t prompt_counter = 0;
  while (val_dataloader_->has_next()) {
    DataProto test_batch = val_dataloader_->next();
    if (!test_batch.non_tensor_batch.count("uid")) {
      // Group ids for the metrics only; deterministic so validation never touches the training uid stream.
      std::vector<Json> uids;
      for (int64_t i = 0; i < test_batch.size(); ++i) uids.emplace_back("val-" + std::to_string(prompt_counter++));
      test_batch.non_tensor_batch["uid"] = std::move(uids);
    }
    test_batch = test_batch.repeat(cfg.actor_rollout_ref.rollout.val_kwargs.n, /*interleave=*/true);
    // verl validates only with rule-based rewards.
    if (cfg.reward_model.enable && test_batch.non_tensor_batch.count("reward_model")) {
      const Json& rm = test_batch.column("reward_model").front();
      if (rm.is_object() && rm.value("style", "") == "model") return {};
    }
    const torch::Tensor& input_ids = test_batch.tensor("input_ids");
    for (int64_t i = 0; i < test_batch.size(); ++i) {
      sample_inputs.push_back(decode(input_ids[i]));
      sample_uids.push_back(test_batch.column("uid")[static_cast<size_t>(i)].get<std::string>());
      sample_gts.push_back(ground_truth_of(test_batch, i));
    }
    DataProto test_gen_batch = get_gen_batch(test_batch);
    test_gen_batch.meta_info = generation_meta(/*validate=*/true, cfg.actor_rollout_ref.rollout.val_kwargs.do_sample);
    MetricMap unused_timing;
    DataProto test_output = generate(test_gen_batch, unused_timing);  // dispatch pads to the world size
    const torch::Tensor& responses = test_output.tensor("responses");
    for (int64_t i = 0; i < responses.size(0); ++i) sample_outputs.push_back(decode(responses[i]));
    test_batch.union_with(test_output);
    test_batch.meta_info["validate"] = true;
    VERL_CHECK(val_reward_fn_ != nullptr, "trainer", "validation needs a validation reward function");
    RewardOutput result = val_reward_fn_(test_batch);
    torch::Tensor scores = result.reward_tensor.sum(-1).to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < scores.numel(); ++i) {
      const double score = scores.data_ptr<double>()[i];
      sample_scores.push_back(score);
      reward_extra_infos["reward"].push_back(score);
    }
    for (const auto& [key, values] : result.reward_extra_info) {
      auto& list = reward_extra_infos[key];
      list.insert(list.end(), values.begin(), values.end());
    }
    if (test_batch.non_tensor_batch.count("__num_turns__")) {
      for (const Json& turns : test_batch.column("__num_turns__")) sample_turns.push_back(turns.get<double>());
    }
    for (int64_t i = 0; i < test_batch.size(); ++i) {
      data_sources.push_back(test_batch.non_tensor_batch.count("data_source")
                                 ? test_batch.column("data_source")[static_cast<size_t>(i)].get<std::string>()
                                 : "unknown");
    }
  }
  maybe_log_val_generations(sample_inputs, sample_outputs, sample_scores);
  if (cfg.trainer.validation_data_dir) {
    dump_generations(sample_inputs, sample_outputs, sample_gts, sample_scores, reward_extra_infos,
                     *cfg.trainer.validation_data_dir);
  }
  std::map<std::string, std::vector<algo::InfoValue>> infos;
  for (const auto& [key, values] : reward_extra_infos) {
    VERL_CHECK(values.empty() || values.size() == sample_scores.size(), "trainer", "validation reward info '", key,
               "' has ", values.size(), " values for ", sample_scores.size(), " samples");
    std::vector<algo::InfoValue> converted;
    bool usable = true;
    for (const auto& v : values) {
      if (v.is_number() || v.is_boolean()) {
        converted.emplace_back(v.get<double>());
      } else if (v.is_string()) {
        converted.emplace_back(v.get<std::string>());
      } else {
        usable = false;  // lists, dicts, None: not a metric
        break;
      }
    }
    if (usable && !converted.empty()) infos[key] = std::move(converted);
  }
  if (sample_scores.empty()) return {};
  MetricMap metrics =
      algo::flatten_validation_metrics(algo::process_validation_metrics(data_sources, sample_uids, infos));
  if (!sample_turns.empty()) {  // verl 0.9.1's _validate
    metrics["val-aux/num_turns/min"] = *std::min_element(sample_turns.begin(), sample_turns.end());
    metrics["val-aux/num_turns/max"] = *std::max_element(sample_turns.begin(), sample_turns.end());
    metrics["val-aux/num_turns/mean"] = std::accumulate(sample_turns.begin(), sample_turns.end(), 0.0) /
                                        static_cast<double>(sample_turns.size());
  }
  return metrics;
}

void PPOTrainer::maybe_log_val_generations(const std::vector<std::string>& inputs,
                                           const std::vector<std::string>& outputs,
                                           const std::vector<double>& scores) {
  const int64_t generations_to_log = config_->trainer.log_val_generations;
  if (generations_to_log == 0) return;
  struct Sample {
    std::string input, output;
    double score;
  };
  std::vector<Sample> samples;
  for (size_t i = 0; i < inputs.size(); ++i) samples.push_back({inputs[i], outputs[i], scores[i]});
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.input < b.input; });
  NumpyLegacyRandom(42).shuffle(samples);
  if (static_cast<int64_t>(samples.size()) > generations_to_log) samples.resize(static_cast<size_t>(generations_to_log));
  // verl sends this table to wandb/swanlab; here it goes to RUN_DIR/val_generations.jsonl and the console.
  std::filesystem::create_directories(run_dir_);
  std::ofstream out(std::filesystem::path(run_dir_) / "val_generations.jsonl", std::ios::app);
  const auto& loggers = config_->trainer.logger;
  const bool console = std::find(loggers.begin(), loggers.end(), "console") != loggers.end();
  std::ostream& console_out = options_.console_out ? *options_.console_out : std::cout;
  for (const auto& sample : samples) {
    nlohmann::ordered_json line;
    line["step"] = global_steps_;
    line["input"] = sample.input;
    line["output"] = sample.output;
    line["score"] = sample.score;
    out << python_json(line) << "\n";
    if (console) console_out << "val_generation step:" << global_steps_ << " - " << python_json(line) << "\n";
  }
}

void PPOTrainer::dump_generations(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                  const std::vector<Json>& gts, const std::vector<double>& scores,
                                  const std::map<std::string, std::vector<Json>>& extra,
                                  const std::string& dump_path) const {
  std::filesystem::create_directories(dump_path);
  const std::string filename = (std::filesystem::path(dump_path) / (std::to_string(global_steps_) + ".jsonl")).string();
  const size_t n = inputs.size();
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    nlohmann::ordered_json entry;
    entry["input"] = inputs[i];
    entry["output"] = outputs[i];
    entry["gts"] = nlohmann::ordered_json::parse(gts[i].dump());
    entry["score"] = scores[i];
    entry["step"] = global_steps_;
    for (const auto& [key, values] : extra) {
      if (values.size() == n) entry[key] = nlohmann::ordered_json::parse(values[i].dump());
    }
    text += python_json(entry) + "\n";
  }
  std::ofstream out(filename, std::ios::trunc);
  out << text;
  VERL_CHECK(out.good(), "trainer", "cannot write '", filename, "'");
  VERL_LOG(Info, "trainer") << "dumped generations to " << filename;
}

void PPOTrainer::log_rollout_data(const DataProto& batch, const std::map<std::string, std::vector<Json>>& extra) {
  std::vector<std::string> inputs, outputs;
  std::vector<Json> gts;
  std::vector<double> scores;
  const torch::Tensor& prompts = batch.tensor("prompts");
  const torch::Tensor& responses = batch.tensor("responses");
  torch::Tensor sums = batch.tensor("token_level_scores").sum(-1).to(torch::kFloat64).contiguous();
  for (int64_t i = 0; i < batch.size(); ++i) {
    inputs.push_back(decode(prompts[i]));
    outputs.push_back(decode(responses[i]));
    gts.push_back(ground_truth_of(batch, i));
    scores.push_back(sums.data_ptr<double>()[i]);
  }
  // The extra info rows follow the batch's (balanced) order, as they were attached after reordering.
  std::map<std::string, std::vector<Json>> reordered;
  for (const auto& [key, values] : extra) {
    if (batch.non_tensor_batch.count(key)) reordered[key] = batch.column(key);
  }
  dump_generations(inputs, outputs, gts, scores, reordered, *config_->trainer.rollout_data_dir);
}

}  // namespace verl::trainer
