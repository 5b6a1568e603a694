// rollout.trace.backend=mlflow on a one-step `verl train` (digit completion, tiny model, GRPO with n=2): the traces
// in mlflow's local store, read back with mlflow's own client from .venv/test, are verl's: one per rollout, root
// span "agent_loop" with the trace tags (sample_index, step, rollout_n, validate, experiment_name) and the
// AsyncLLMServerManager.generate span whose prompt_ids / token_ids have the lengths of the step's logged
// prompt_length / response_length means; max_samples_per_step_per_worker keeps that many samples with all their
// rollouts. Skips (with the reason) when .venv/test lacks mlflow.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "support/test_python.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& rollout_trace_mlflow_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("rollout_trace_setup"), 4);
  return instance;
}

struct TracedRun {
  TrainRun run;
  nlohmann::json traces;
};

// .venv/test's site-packages without its verl package (which needs ray, absent there): tool files then import
// verl's modules from verl.cpp's built-in shim, as in a user's environment without verl.
std::string site_packages_without_verl() {
  namespace fs = std::filesystem;
  static const std::string dir = [] {
    const std::string out = make_temp_dir("site_without_verl");
    const fs::path site = fs::path(VERL_SOURCE_DIR_FOR_TESTS) / ".venv/test/lib/python3.11/site-packages";
    for (const auto& entry : fs::directory_iterator(site)) {
      const std::string name = entry.path().filename().string();
      const bool verl_dist_info = name.rfind("verl-", 0) == 0 && name.find(".dist-info") != std::string::npos;
      if (name == "verl" || verl_dist_info) continue;  // verl-libtorch.pth stays: torch and its dependencies
      fs::create_directory_symlink(entry.path(), fs::path(out) / name);
    }
    return out;
  }();
  return dir;
}

TracedRun traced_run(const std::string& name, const std::vector<std::string>& extra) {
  const std::string run_dir = make_temp_dir(name);
  const std::string store = "file:" + run_dir + "/mlruns";
  std::vector<std::string> all = rollout_trace_mlflow_setup().base_overrides(run_dir);
  all.insert(all.end(), {"trainer.total_training_steps=1", "trainer.test_freq=-1", "algorithm.adv_estimator=grpo",
                         "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
                         "actor_rollout_ref.rollout.trace.backend=mlflow", "trainer.project_name=trace_project",
                         "trainer.experiment_name=trace_experiment"});
  all.insert(all.end(), extra.begin(), extra.end());
  const std::string env = "MLFLOW_TRACKING_URI='" + store + "' MLFLOW_ALLOW_FILE_STORE=true VERL_PYTHON_SITE_PACKAGES='" +
                          site_packages_without_verl() + "'";
  TracedRun out;
  out.run.result = run_command("cd '" + run_dir + "' && env " + env + " " + verl_train_command(all));
  if (out.run.result.exit_code != 0) return out;
  out.run.history = trainer::read_metrics_jsonl(run_dir + "/metrics.jsonl");
  write_file(run_dir + "/read_traces.py", R"PY(
import json, sys
import mlflow
from mlflow import MlflowClient
mlflow.set_tracking_uri(sys.argv[1])
client = MlflowClient()
experiment = client.get_experiment_by_name("trace_project")
out = []
for t in client.search_traces(locations=[experiment.experiment_id], max_results=1000):
    spans = t.data.spans
    root = [s for s in spans if s.parent_id is None][0]
    def tree(parent):
        return [{"name": s.name, "inputs": s.inputs, "outputs": s.outputs, "children": tree(s)}
                for s in sorted(spans, key=lambda s: s.start_time_ns) if s.parent_id == parent.span_id]
    tags = {k: t.info.tags.get(k) for k in ["sample_index", "step", "rollout_n", "validate", "experiment_name"]}
    out.append({"root": root.name, "tags": tags, "children": tree(root)})
print(json.dumps(out))
)PY");
  const CommandResult read = run_command("MLFLOW_ALLOW_FILE_STORE=true " + test_python() + "'" + run_dir +
                                         "/read_traces.py' '" + store + "'");
  EXPECT_EQ(read.exit_code, 0) << read.err;
  if (read.exit_code == 0) out.traces = nlohmann::json::parse(read.out);
  return out;
}

TEST(RolloutTraceMlflow, EveryRolloutIsATraceWithVerlsSpansAndTags) {
  if (!test_python_imports("mlflow")) FAIL() << "mlflow: " << test_python_missing_hint();
  const TracedRun r = traced_run("rollout_trace_all", {});
  ASSERT_EQ(r.run.result.exit_code, 0) << r.run.result.err;
  ASSERT_EQ(r.traces.size(), 16u);  // 8 prompts x n=2
  std::map<std::string, std::set<std::string>> rollouts_of;
  double prompt_tokens = 0, response_tokens = 0;
  for (const auto& t : r.traces) {
    EXPECT_EQ(t["root"], "agent_loop");
    EXPECT_EQ(t["tags"]["step"], "1");
    EXPECT_EQ(t["tags"]["validate"], "False");
    EXPECT_EQ(t["tags"]["experiment_name"], "trace_experiment");
    rollouts_of[t["tags"]["sample_index"].get<std::string>()].insert(t["tags"]["rollout_n"].get<std::string>());
    ASSERT_EQ(t["children"].size(), 1u);
    const auto& generate = t["children"][0];
    EXPECT_EQ(generate["name"], "AsyncLLMServerManager.generate");
    EXPECT_EQ(generate["inputs"]["sampling_params"]["temperature"], 1.0);
    prompt_tokens += static_cast<double>(generate["inputs"]["prompt_ids"].size());
    response_tokens += static_cast<double>(generate["outputs"]["token_ids"].size());
  }
  EXPECT_EQ(rollouts_of.size(), 8u);
  for (const auto& [index, rollouts] : rollouts_of) EXPECT_EQ(rollouts, (std::set<std::string>{"0", "1"})) << index;
  EXPECT_DOUBLE_EQ(prompt_tokens / 16, r.run.history.at("prompt_length/mean").at(1));
  EXPECT_DOUBLE_EQ(response_tokens / 16, r.run.history.at("response_length/mean").at(1));
}

// The tool agent loop (multi_turn.enable, verl's GSM8K tool; this character tokenizer writes no tool call, so one
// policy turn per conversation): ToolAgentLoop.run under agent_loop, its generate span first, its output's
// response_ids the logged response lengths.
TEST(RolloutTraceMlflow, ToolAgentLoopRunsAreTracedWithTheirTurns) {
  if (!test_python_imports("mlflow")) FAIL() << "mlflow: " << test_python_missing_hint();
  const std::string dir = make_temp_dir("rollout_trace_tools");
  write_file(dir + "/tools.yaml", R"Y(tools:
  - class_name: verl.tools.gsm8k_tool.Gsm8kTool
    config: {type: native}
    tool_schema:
      type: function
      function:
        name: calc_gsm8k_reward
        description: scores an answer
        parameters: {type: object, properties: {answer: {type: string}}, required: [answer]}
)Y");
  const TracedRun r = traced_run("rollout_trace_multi", {"actor_rollout_ref.rollout.multi_turn.enable=true",
                                                         "actor_rollout_ref.rollout.multi_turn.tool_config_path=" +
                                                             dir + "/tools.yaml",
                                                         "data.return_raw_chat=true",
                                                         "actor_rollout_ref.rollout.trace.token2text=true"});
  ASSERT_EQ(r.run.result.exit_code, 0) << r.run.result.err;
  ASSERT_EQ(r.traces.size(), 16u);
  double response_tokens = 0;
  for (const auto& t : r.traces) {
    ASSERT_EQ(t["children"].size(), 1u);
    const auto& run = t["children"][0];
    EXPECT_EQ(run["name"], "ToolAgentLoop.run");
    ASSERT_GE(run["children"].size(), 1u);
    EXPECT_EQ(run["children"][0]["name"], "AsyncLLMServerManager.generate");
    EXPECT_EQ(run["children"][0]["outputs"]["token_ids"], run["outputs"]["response_ids"]);
    EXPECT_TRUE(run["inputs"]["kwargs"].contains("raw_prompt"));
    EXPECT_TRUE(run["outputs"]["response_text"].is_string());
    EXPECT_EQ(run["outputs"]["num_turns"], 2);
    response_tokens += static_cast<double>(run["outputs"]["response_ids"].size());
  }
  EXPECT_DOUBLE_EQ(response_tokens / 16, r.run.history.at("response_length/mean").at(1));
}

TEST(RolloutTraceMlflow, MaxSamplesPerStepKeepsThatManySamplesWithAllTheirRollouts) {
  if (!test_python_imports("mlflow")) FAIL() << "mlflow: " << test_python_missing_hint();
  const TracedRun r =
      traced_run("rollout_trace_some", {"actor_rollout_ref.rollout.trace.max_samples_per_step_per_worker=3"});
  ASSERT_EQ(r.run.result.exit_code, 0) << r.run.result.err;
  ASSERT_EQ(r.traces.size(), 6u);
  std::map<std::string, int> rollouts_of;
  for (const auto& t : r.traces) ++rollouts_of[t["tags"]["sample_index"].get<std::string>()];
  EXPECT_EQ(rollouts_of.size(), 3u);
  for (const auto& [index, count] : rollouts_of) EXPECT_EQ(count, 2) << index;
}

}  // namespace
}  // namespace verl::test
