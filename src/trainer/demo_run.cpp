// `verl demo`: the embedded default end to end. Preparation (demo.cpp), then RL through verl's main_ppo with
// an example config that is compiled into the binary, validated before and after.
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/stopwatch.h"
#include "verl/config/config_loader.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/demo.h"
#include "verl/trainer/main_ppo.h"
#include "verl/trainer/ppo_trainer.h"

extern const char verl_embedded_arithmetic_grpo_yaml[];  // generated from examples/arithmetic_grpo.yaml
extern const char verl_embedded_arithmetic_ppo_yaml[];   // generated from examples/arithmetic_ppo.yaml

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

void set_ppo_key(config::Node& root, const std::string& path, config::Node value) {
  config::set_existing_path(root, path, std::move(value), "the PPO defaults");
}

config::Node path_list(const std::string& path) { return config::Node::list({config::Node::string(path)}); }

// The first metric named `prefix` + something (e.g. "mean@1"), if any.
std::optional<double> find_prefixed(const std::map<std::string, double>& metrics, const std::string& prefix) {
  auto it = metrics.lower_bound(prefix);
  if (it != metrics.end() && it->first.compare(0, prefix.size(), prefix) == 0) return it->second;
  return std::nullopt;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

}  // namespace

std::vector<std::string> demo_tools_rl_overrides(const std::string& tool_config_path) {
  return {
      "data.return_raw_chat=true",
      "data.max_prompt_length=160",   // the tool listing makes the prompt about 120 tokens
      "data.max_response_length=64",  // tool call (~25), tool turn (~10), answer (~4), slack for a longer first turn
      // Sequences ~5x the arithmetic demo's: 32 prompts x 8 per step, one optimizer step, one pass.
      "data.train_batch_size=32",
      "actor_rollout_ref.actor.ppo_mini_batch_size=32",
      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=256",
      "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=256",
      // After SFT the policy already calls the tool when greedy (70% of SFT answers do), so greedy validation
      // would not see what RL changes: the share of sampled conversations that call the tool and copy the numbers
      // right. Validation samples at temperature 1, as the rollouts do.
      "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
      "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
      "trainer.total_training_steps=30",
      "trainer.test_freq=10",
      "actor_rollout_ref.rollout.multi_turn.enable=true",
      "actor_rollout_ref.rollout.multi_turn.tool_config_path=" + tool_config_path,
      "actor_rollout_ref.rollout.multi_turn.format=hermes",
      "actor_rollout_ref.rollout.multi_turn.max_assistant_turns=2",
      "trainer.project_name=verl_demo",
      "trainer.experiment_name=arithmetic_tool_grpo",
  };
}

std::string demo_rl_config_yaml(const std::string& algo) {
  if (algo == "grpo") return verl_embedded_arithmetic_grpo_yaml;
  if (algo == "ppo") return verl_embedded_arithmetic_ppo_yaml;
  VERL_FAIL("demo", "--algo expects grpo or ppo, got '", algo, "'");
}

const std::string& demo_accuracy_metric() {
  // verl's val-core key for data_source arithmetic: the GSM8K rule's plain score (1 or 0) is also its `acc`.
  static const std::string prefix = "val-core/arithmetic/acc/mean@";
  return prefix;
}

DemoResult run_demo(const DemoOptions& options) {
  const auto start = Clock::now();
  VERL_CHECK(!options.prepare.out_dir.empty(), "demo", "--out DIR is required");
  const std::string out = fs::absolute(options.prepare.out_dir).lexically_normal().string();
  const std::string data_dir = out + "/data", model_dir = out + "/model";  // what prepare_demo writes

  // The RL config first, so a bad override fails before any work: the example file, the demo's paths, then
  // the user's overrides.
  VERL_CHECK(!options.prepare.tools || options.algo == "grpo", "demo", "--tools runs GRPO; drop --algo ",
             options.algo);
  const std::string example = "examples/arithmetic_" + options.algo + ".yaml";
  const std::string rl_yaml = demo_rl_config_yaml(options.algo);
  config::Node root = config::default_config_tree();
  config::merge_config_file(root, config::parse_yaml(rl_yaml, example + " (built in)"), example);
  const std::string run_name = (options.prepare.tools ? "arithmetic_tool_" : "arithmetic_") + options.algo;
  const std::string default_run_dir = out + "/runs/" + run_name;
  const std::string tool_config_path = out + "/tools/calculator_tool_config.yaml";  // what prepare_demo writes
  if (options.prepare.tools) {
    for (const auto& text : demo_tools_rl_overrides(tool_config_path)) {
      config::apply_override(root, config::parse_override(text));
    }
  }
  const auto seed = static_cast<int64_t>(options.prepare.seed);
  set_ppo_key(root, "data.train_files", path_list(data_dir + "/train.parquet"));
  set_ppo_key(root, "data.val_files", path_list(data_dir + "/test.parquet"));
  set_ppo_key(root, "data.seed", config::Node::integer(seed));
  set_ppo_key(root, "actor_rollout_ref.model.path", config::Node::string(model_dir));
  set_ppo_key(root, "actor_rollout_ref.rollout.seed", config::Node::integer(seed));
  set_ppo_key(root, "critic.model.path", config::Node::string(model_dir));
  set_ppo_key(root, "trainer.default_local_dir", config::Node::string(default_run_dir));
  // The demo prints its own short line per step; console / jsonl / html can be chosen with trainer.logger=...
  set_ppo_key(root, "trainer.logger",
              config::Node::list({config::Node::string("jsonl"), config::Node::string("html")}));
  if (options.prepare.num_threads) {
    set_ppo_key(root, "trainer.num_cpu_threads", config::Node::integer(*options.prepare.num_threads));
  }
  for (const auto& text : options.overrides) config::apply_override(root, config::parse_override(text));
  config::Node resolved = config::resolve_interpolations(root);
  const config::PPOConfig ppo = config::parse_ppo_config(resolved);
  VERL_CHECK(ppo.trainer.val_before_train && !ppo.trainer.val_only && ppo.trainer.test_freq > 0, "demo",
             "the demo validates before and after RL: it needs trainer.val_before_train=true, "
             "trainer.val_only=false and trainer.test_freq > 0");
  validate_ppo_config(ppo, ppo.trainer.nnodes * ppo.trainer.n_gpus_per_node);

  DemoResult result;
  result.prepared = prepare_demo(options.prepare);
  const DemoPrepareResult& prepared = result.prepared;
  VERL_ASSERT(prepared.data_dir == data_dir && prepared.model_dir == model_dir &&
                  (!options.prepare.tools || prepared.tool_config_path == tool_config_path),
              "demo", "prepare_demo wrote to unexpected folders");
  // The example as run, next to the data, for `verl train --config` (its paths are relative to the cwd); with
  // tools the config as composed (absolute paths), as the example alone does not set the multi-turn keys.
  result.config_file = out + "/" + run_name + ".yaml";
  write_file_atomic(result.config_file, options.prepare.tools ? config::to_yaml(resolved) : rl_yaml);
  // A fresh run folder: metrics.jsonl appends and resume_mode=auto would continue an old run.
  if (ppo.trainer.default_local_dir == default_run_dir) fs::remove_all(default_run_dir);

  std::optional<double> before, after;
  int64_t last_step = 0;
  const int64_t planned_steps = ppo.trainer.total_training_steps.value_or(0);
  const auto rl_start = Clock::now();
  std::cerr << "demo: " << options.algo << " on " << prepared.data_dir << "/train.parquet, config "
            << result.config_file << (options.overrides.empty() ? "" : " + overrides") << "\n";
  PPORunHooks hooks;
  hooks.on_log = [&](int64_t step, const std::map<std::string, double>& metrics) {
    std::optional<double> accuracy = find_prefixed(metrics, demo_accuracy_metric());
    if (step == 0) {
      if (accuracy) before = accuracy;
      std::cerr << "demo: validation before RL: accuracy " << (accuracy ? fixed(*accuracy, 3) : "n/a") << " ("
                << fixed(seconds_since(rl_start), 1) << " s)\n";
      return;
    }
    last_step = step;
    if (accuracy) after = accuracy;
    std::ostringstream line;
    line << "demo: " << options.algo << " step " << step;
    if (planned_steps > 0) line << "/" << planned_steps;
    if (auto score = find_prefixed(metrics, "critic/score/mean")) line << "  score " << fixed(*score, 3);
    if (auto entropy = find_prefixed(metrics, "actor/entropy")) line << "  entropy " << fixed(*entropy, 3);
    if (auto calls = find_prefixed(metrics, "tool_call_counts/mean")) {
      if (!result.tool_calls_first) result.tool_calls_first = calls;
      result.tool_calls_last = calls;
      line << "  tool calls " << fixed(*calls, 2);
    }
    if (options.prepare.tools) {  // a single-turn rollout reports two turns every time
      if (auto turns = find_prefixed(metrics, "num_turns/mean")) line << "  turns " << fixed(*turns, 2);
    }
    if (accuracy) line << "  val accuracy " << fixed(*accuracy, 3);
    line << "  (" << fixed(seconds_since(rl_start), 1) << " s)";
    std::cerr << line.str() << "\n";
  };
  PPORunResult run = run_ppo(ppo, config::to_yaml(resolved), hooks);
  result.rl_seconds = seconds_since(rl_start);
  result.run_dir = fs::absolute(run.run_dir).lexically_normal().string();
  result.rl_steps = last_step;
  VERL_CHECK(before.has_value() && after.has_value(), "demo", "the run logged no '", demo_accuracy_metric(),
             "N' before and after RL (is data_source 'arithmetic' in data.val_files?)");
  result.val_accuracy_before = *before;
  result.val_accuracy_after = *after;
  result.total_seconds = seconds_since(start);
  return result;
}

}  // namespace verl::trainer
