#include "verl/trainer/main_generation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/progress.h"
#include "verl/common/stopwatch.h"
#include "verl/common/strings.h"
#include "verl/config/config_loader.h"
#include "verl/data/rl_dataset.h"
#include "verl/model/weights.h"
#include "verl/rollout/generator.h"
#include "verl/workers/multi_turn_rollout.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::trainer {
namespace {

namespace fs = std::filesystem;
constexpr const char* kMainGenerationComponent = "generate";
const std::string kChatKwargs = "data.apply_chat_template_kwargs";

// "key=value", "+key=value", "++key=value", "~key" -> key.
std::string override_key(const std::string& override_text) {
  std::string text = override_text;
  if (text.rfind("++", 0) == 0) text = text.substr(2);
  else if (!text.empty() && (text[0] == '+' || text[0] == '~')) text = text.substr(1);
  return text.substr(0, text.find('='));
}

constexpr const char* kMultiTurn = "actor_rollout_ref.rollout.multi_turn.";

void check_override_keys(const std::vector<std::string>& overrides) {
  const auto& keys = generation_override_keys();
  for (const auto& o : overrides) {
    const std::string key = override_key(o);
    const bool chat_kwarg = key == kChatKwargs || key.rfind(kChatKwargs + ".", 0) == 0;
    const bool multi_turn = key.rfind(kMultiTurn, 0) == 0;  // every multi_turn.* key (docs/multi_turn.md)
    VERL_CHECK(chat_kwarg || multi_turn || std::find(keys.begin(), keys.end(), key) != keys.end(),
               kMainGenerationComponent, "'", o, "': verl generate does not use '", key, "'; it reads ",
               join(keys, ", "));
  }
}

std::vector<int32_t> to_int32(const torch::Tensor& row, int64_t length) {
  auto r = row.narrow(0, 0, length).to(torch::kInt32).contiguous();
  return std::vector<int32_t>(r.data_ptr<int32_t>(), r.data_ptr<int32_t>() + length);
}

}  // namespace

const std::vector<std::string>& generation_override_keys() {
  static const std::vector<std::string> keys = {
      "data.prompt_key",
      "data.max_prompt_length",
      "data.max_response_length",
      "data.truncation",
      "data.filter_overlong_prompts",
      kChatKwargs,
      "data.chat_template_timeout",
      "actor_rollout_ref.rollout.n",
      "actor_rollout_ref.rollout.temperature",
      "actor_rollout_ref.rollout.top_k",
      "actor_rollout_ref.rollout.top_p",
      "actor_rollout_ref.rollout.do_sample",
      "actor_rollout_ref.rollout.response_length",
      "actor_rollout_ref.rollout.ignore_eos",
      "actor_rollout_ref.rollout.calculate_log_probs",
      "actor_rollout_ref.rollout.seed",
      "actor_rollout_ref.rollout.max_num_seqs",
      "actor_rollout_ref.rollout.agent.default_agent_loop",
      "data.return_raw_chat",
      std::string(kMultiTurn) + "*"};
  return keys;
}

GenerationSummary run_generation(const GenerationOptions& o) {
  VERL_CHECK(!o.model_dir.empty() && !o.data_files.empty() && !o.output_path.empty(), kMainGenerationComponent,
             "needs --model, --data and --output");
  VERL_CHECK(o.batch_size >= 1, kMainGenerationComponent, "--batch-size must be at least 1, got ", o.batch_size);
  // Settings first (no weights loaded yet): unknown keys fail with a suggestion, unused keys name what is read.
  config::ConfigArgs args;
  args.overrides = o.overrides;
  args.overrides.push_back("actor_rollout_ref.model.path=" + o.model_dir);
  const config::PPOConfig cfg = config::load_config(args).ppo;
  check_override_keys(o.overrides);
  const auto& rollout = cfg.actor_rollout_ref.rollout;
  VERL_CHECK(rollout.response_length >= 1, kMainGenerationComponent,
             "actor_rollout_ref.rollout.response_length must be >= 1, got ", rollout.response_length);

  const std::string model_dir = data::expand_user(o.model_dir);
  VERL_CHECK(fs::exists(fs::path(model_dir) / "config.json"), kMainGenerationComponent, "--model '", o.model_dir,
             "' is not a Hugging Face model folder (no config.json)");
  VERL_CHECK(fs::exists(fs::path(model_dir) / "tokenizer.json"), kMainGenerationComponent, "--model '", o.model_dir,
             "' has no tokenizer.json (verl model init --tokenizer DIR copies one in)");
  const fs::path out_path(o.output_path);
  VERL_CHECK(!fs::is_directory(out_path), kMainGenerationComponent, "--output '", o.output_path,
             "' is a folder, expected a file");
  VERL_CHECK(out_path.parent_path().empty() || fs::is_directory(out_path.parent_path()), kMainGenerationComponent,
             "--output '", o.output_path, "': folder '", out_path.parent_path().string(), "' does not exist");
  auto tokenizer = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(model_dir));
  const model::HFConfig hf = model::load_hf_config(model_dir);
  VERL_CHECK(static_cast<int64_t>(tokenizer->vocab_size()) <= hf.vocab_size, kMainGenerationComponent,
             "the tokenizer of '", o.model_dir, "' has ", tokenizer->vocab_size(),
             " tokens but the model's vocab_size is ", hf.vocab_size);
  data::RLHFDataset dataset(o.data_files, tokenizer, cfg.data, -1, workers::dataset_filter_tool_schemas(cfg));
  VERL_CHECK(dataset.size() > 0, kMainGenerationComponent, "no prompts in ", join(dataset.files(), ", "),
             dataset.rows_filtered_out() > 0 ? " after data.filter_overlong_prompts" : "");

  std::vector<int32_t> eos32 = tokenizer->eos_token_ids();
  std::vector<int64_t> eos(eos32.begin(), eos32.end());
  const int64_t pad = dataset.pad_token_id();
  model::CausalLM model = model::load_model(model_dir);
  model->eval();

  // Multi-turn (rollout.multi_turn.enable): the tool agent loop, each line with its whole conversation.
  std::unique_ptr<workers::MultiTurnRollout> multi_turn;
  if (rollout.multi_turn.enable) multi_turn = std::make_unique<workers::MultiTurnRollout>(cfg);

  // One seed per engine call from a stream seeded by rollout.seed, as the rollout worker draws them.
  auto seeds = at::detail::createCPUGenerator(static_cast<uint64_t>(rollout.seed));
  const int64_t n = rollout.sampling.n;
  std::string text;
  GenerationSummary summary;
  Stopwatch watch;
  ProgressBar progress("generate", dataset.size(), "tok");
  for (int64_t start = 0; start < dataset.size(); start += o.batch_size) {
    const int64_t count = std::min(o.batch_size, dataset.size() - start);
    std::vector<int64_t> rows(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) rows[static_cast<size_t>(i)] = start + i;
    protocol::DataProto batch = dataset.collate(rows);
    uint64_t seed = 0;
    {
      std::lock_guard<std::mutex> lock(seeds.mutex());
      seed = at::check_generator<at::CPUGeneratorImpl>(seeds)->random64();
    }
    rollout::SamplingParams params = rollout::sampling_params_from_config(rollout, /*validate=*/false, eos, pad, seed);
    rollout::GenerationOutput out;
    agent::AgentLoopOutput conversations;
    if (multi_turn) {
      params.n = 1;
      conversations = multi_turn->run(model, batch.repeat(n, /*interleave=*/true), params);
      out.responses = conversations.responses;
      out.rollout_log_probs = conversations.rollout_log_probs;
      const auto lengths = conversations.attention_mask.narrow(1, conversations.prompts.size(1), rollout.response_length).sum(1);
      for (int64_t j = 0; j < lengths.size(0); ++j) out.response_lengths.push_back(lengths[j].item<int64_t>());
    } else {
      out = rollout::generate(model, batch.tensor("input_ids"), batch.tensor("attention_mask"), params);
    }
    auto responses = out.responses.to(torch::kCPU);
    torch::Tensor log_probs;
    if (params.calculate_log_probs) log_probs = out.rollout_log_probs.to(torch::kCPU).contiguous();
    int64_t batch_tokens = 0;
    for (int64_t i = 0; i < count; ++i) {
      std::vector<int32_t> prompt32;
      if (multi_turn) {  // the prompt the loop built: the template with the tools rendered
        const auto row = conversations.prompts[i * n];
        const auto real = conversations.attention_mask[i * n].narrow(0, 0, row.size(0));
        for (int64_t p = 0; p < row.size(0); ++p) {
          if (real[p].item<int64_t>() != 0) prompt32.push_back(static_cast<int32_t>(row[p].item<int64_t>()));
        }
      } else {
        for (const auto& id : batch.column("raw_prompt_ids")[static_cast<size_t>(i)]) prompt32.push_back(id.get<int32_t>());
      }
      const std::string prompt_text = tokenizer->decode(prompt32, /*skip_special_tokens=*/false);
      nlohmann::ordered_json data = nlohmann::ordered_json::object();
      for (const auto& column : dataset.columns()) {
        if (column == cfg.data.prompt_key || !batch.non_tensor_batch.count(column)) continue;
        data[column] = batch.column(column)[static_cast<size_t>(i)];
      }
      for (int64_t k = 0; k < n; ++k) {
        const int64_t j = i * n + k;
        const int64_t length = out.response_lengths[static_cast<size_t>(j)];
        std::vector<int32_t> ids = to_int32(responses[j], length);
        const bool stopped = !params.ignore_eos && length > 0 &&
                             std::find(eos.begin(), eos.end(), static_cast<int64_t>(ids.back())) != eos.end();
        nlohmann::ordered_json line;
        line["row"] = start + i;
        line["sample"] = k;
        line["prompt"] = prompt_text;
        line["prompt_ids"] = prompt32;
        line["response"] = tokenizer->decode(ids, /*skip_special_tokens=*/true);
        line["response_ids"] = ids;
        line["finish_reason"] = stopped ? "stop" : "length";
        if (params.calculate_log_probs) {
          const float* lp = log_probs[j].data_ptr<float>();
          line["response_log_probs"] = std::vector<float>(lp, lp + length);
        }
        if (multi_turn) {
          line["messages"] = conversations.messages[static_cast<size_t>(j)];
          line["num_turns"] = conversations.num_turns[static_cast<size_t>(j)];
          line["tool_call_counts"] = conversations.tool_call_counts[static_cast<size_t>(j)];
          line["reward_scores"] = conversations.reward_scores[static_cast<size_t>(j)];
        }
        line["data"] = data;
        text += line.dump() + "\n";
        batch_tokens += length;
      }
    }
    summary.responses += count * n;
    summary.response_tokens += batch_tokens;
    progress.advance(count, static_cast<double>(batch_tokens));
  }
  progress.finish();
  write_file_atomic(o.output_path, text);
  summary.prompts = dataset.size();
  summary.seconds = watch.wall_seconds();
  return summary;
}

}  // namespace verl::trainer
