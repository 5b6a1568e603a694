// verl's loggers on a two-step `verl train` (digit completion, tiny model, one CPU process): wandb offline,
// mlflow's local store and swanlab offline, read back with their own packages, hold verl's metric names for both
// steps; verl's file logger writes its {"step", "data"} lines. The wandb / mlflow / swanlab runs skip (with the
// reason) when .venv/test lacks the package (scripts/requirements/test.txt installs all three).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "support/test_python.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& loggers_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_loggers"), 8);
  return instance;
}

std::string site_packages() {
  return std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/.venv/test/lib/python3.11/site-packages";
}

// `env VARS verl train base... logger`, two steps; returns the run's result (metrics.jsonl is also written).
TrainRun train(const std::string& run_dir, const std::string& env, const std::string& loggers) {
  std::vector<std::string> all = loggers_setup().base_overrides(run_dir);
  all.insert(all.end(), {"trainer.total_training_steps=2", "trainer.test_freq=-1", "trainer.logger=" + loggers,
                         "trainer.project_name=verl_cpp_e2e", "trainer.experiment_name=loggers"});
  TrainRun run{run_command("cd '" + run_dir + "' && env " + env + " " + verl_train_command(all)), {}};
  if (run.result.exit_code == 0) run.history = trainer::read_metrics_jsonl(run_dir + "/metrics.jsonl");
  return run;
}

// verl's metric names a PPO step logs (verl's compute_data_metrics / timing / throughput).
const std::vector<std::string> kVerlMetrics = {"critic/score/mean",         "critic/rewards/mean",
                                               "critic/advantages/mean",    "response_length/mean",
                                               "actor/pg_loss",             "actor/lr",
                                               "timing_s/gen",              "perf/throughput",
                                               "training/global_step",      "training/epoch"};

TEST(LoggersE2E, WandbOfflineRunHoldsVerlsMetricsForBothSteps) {
  if (!test_python_imports("wandb")) FAIL() << "wandb: " << test_python_missing_hint();
  const std::string run_dir = make_temp_dir("e2e_logger_wandb");
  TrainRun run = train(run_dir,
                       "WANDB_MODE=offline WANDB_SILENT=true WANDB_DIR='" + run_dir +
                           "' VERL_PYTHON_SITE_PACKAGES='" + site_packages() + "'",
                       "[console,jsonl,wandb]");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("step:2 - "), std::string::npos) << "console logger: " << run.result.out;
  const std::string offline = run_dir + "/wandb/latest-run";
  ASSERT_TRUE(std::filesystem::exists(offline)) << run.result.err;
  CommandResult read = run_command(test_python() + "'" + VERL_SOURCE_DIR_FOR_TESTS +
                                   "/tests/e2e/trainer/read_wandb_run.py' '" + offline + "'");
  ASSERT_EQ(read.exit_code, 0) << read.err;
  const nlohmann::json wandb_run = nlohmann::json::parse(read.out);
  EXPECT_EQ(wandb_run["project"], "verl_cpp_e2e");
  EXPECT_EQ(wandb_run["name"], "loggers");
  // The config went in as verl's nested sections.
  std::set<std::string> config_keys(wandb_run["config_keys"].begin(), wandb_run["config_keys"].end());
  for (const char* section : {"data", "actor_rollout_ref", "critic", "algorithm", "trainer"}) {
    EXPECT_TRUE(config_keys.count(section)) << section;
  }
  for (const char* step : {"1", "2"}) {
    ASSERT_TRUE(wandb_run["history"].contains(step)) << read.out.substr(0, 2000);
    const auto& logged = wandb_run["history"][step];
    for (const auto& name : kVerlMetrics) {
      ASSERT_TRUE(logged.contains(name)) << "step " << step << " lacks " << name;
      // The same number verl.cpp wrote to metrics.jsonl.
      EXPECT_DOUBLE_EQ(logged[name].get<double>(), run.history.at(name).at(std::stoi(step))) << name;
    }
  }
}

TEST(LoggersE2E, MlflowLocalStoreHoldsVerlsMetricsAndTheConfig) {
  if (!test_python_imports("mlflow")) FAIL() << "mlflow: " << test_python_missing_hint();
  const std::string run_dir = make_temp_dir("e2e_logger_mlflow");
  const std::string store = "file:" + run_dir + "/mlruns";
  TrainRun run = train(run_dir,
                       "MLFLOW_TRACKING_URI='" + store + "' MLFLOW_ALLOW_FILE_STORE=true VERL_PYTHON_SITE_PACKAGES='" +
                           site_packages() + "'",
                       "[jsonl,mlflow]");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const std::string script = R"PY(
import json, sys
from mlflow.tracking import MlflowClient
client = MlflowClient(sys.argv[1])
experiment = client.get_experiment_by_name("verl_cpp_e2e")
run = client.search_runs([experiment.experiment_id])[0]
history = {k: {str(m.step): m.value for m in client.get_metric_history(run.info.run_id, k)} for k in run.data.metrics}
print(json.dumps({"name": run.info.run_name, "params": run.data.params, "history": history}))
)PY";
  write_file(run_dir + "/read_mlflow.py", script);
  CommandResult read =
      run_command("MLFLOW_ALLOW_FILE_STORE=true " + test_python() + "'" + run_dir + "/read_mlflow.py' '" + store + "'");
  ASSERT_EQ(read.exit_code, 0) << read.err;
  const nlohmann::json mlflow_run = nlohmann::json::parse(read.out);
  EXPECT_EQ(mlflow_run["name"], "loggers");
  // verl's params: the config flattened with '/', lists as list_len / 0 / 1 ...
  EXPECT_EQ(mlflow_run["params"]["data/train_batch_size"], "8");
  EXPECT_EQ(mlflow_run["params"]["trainer/logger/list_len"], "2");
  EXPECT_EQ(mlflow_run["params"]["trainer/logger/1"], "mlflow");
  for (const auto& name : kVerlMetrics) {
    ASSERT_TRUE(mlflow_run["history"].contains(name)) << name;
    for (int step : {1, 2}) {
      EXPECT_DOUBLE_EQ(mlflow_run["history"][name][std::to_string(step)].get<double>(), run.history.at(name).at(step))
          << name << " step " << step;
    }
  }
}

TEST(LoggersE2E, SwanlabOfflineRunHoldsVerlsConfigAndMetricsForBothSteps) {
  if (!test_python_imports("swanlab")) FAIL() << "swanlab: " << test_python_missing_hint();
  const std::string run_dir = make_temp_dir("e2e_logger_swanlab");
  // verl's variables: SWANLAB_MODE (verl's default cloud), SWANLAB_LOG_DIR (verl's default ./swanlog).
  const std::string logdir = run_dir + "/swanlab_logs";
  TrainRun run = train(run_dir,
                       "SWANLAB_MODE=offline SWANLAB_LOG_DIR='" + logdir + "' VERL_PYTHON_SITE_PACKAGES='" +
                           site_packages() + "'",
                       "[console,jsonl,swanlab]");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  EXPECT_NE(run.result.out.find("step:2 - "), std::string::npos) << "console logger: " << run.result.out;
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/swanlog")) << "SWANLAB_LOG_DIR ignored";
  CommandResult read = run_command(test_python() + "'" + VERL_SOURCE_DIR_FOR_TESTS +
                                   "/tests/e2e/trainer/read_swanlab_run.py' '" + logdir + "'");
  ASSERT_EQ(read.exit_code, 0) << read.err << run.result.err;
  const nlohmann::json swanlab_run = nlohmann::json::parse(read.out);
  EXPECT_EQ(swanlab_run["project"], "verl_cpp_e2e");
  EXPECT_EQ(swanlab_run["name"], "loggers");
  EXPECT_EQ(swanlab_run["state"], "RUN_STATE_FINISHED");
  // verl's config={"FRAMEWORK": "verl", **config}: the resolved config's nested sections.
  const auto& config = swanlab_run["config"];
  EXPECT_EQ(config["FRAMEWORK"], "verl");
  for (const char* section : {"data", "actor_rollout_ref", "critic", "algorithm", "trainer"}) {
    EXPECT_TRUE(config.contains(section)) << section;
  }
  EXPECT_EQ(config["data"]["train_batch_size"], 8);
  EXPECT_EQ(config["trainer"]["project_name"], "verl_cpp_e2e");
  EXPECT_EQ(config["trainer"]["logger"], nlohmann::json::array({"console", "jsonl", "swanlab"}));
  // Each step's metrics, under verl's names, with metrics.jsonl's numbers.
  for (const char* step : {"1", "2"}) {
    ASSERT_TRUE(swanlab_run["history"].contains(step)) << read.out.substr(0, 2000);
    const auto& logged = swanlab_run["history"][step];
    for (const auto& name : kVerlMetrics) {
      ASSERT_TRUE(logged.contains(name)) << "step " << step << " lacks " << name;
      EXPECT_DOUBLE_EQ(logged[name].get<double>(), run.history.at(name).at(std::stoi(step))) << name;
    }
    // Every metric of the step, not only the sample above.
    for (const auto& [name, values] : run.history) {
      if (!values.count(std::stoi(step))) continue;
      ASSERT_TRUE(logged.contains(name)) << "step " << step << " lacks " << name;
      EXPECT_DOUBLE_EQ(logged[name].get<double>(), values.at(std::stoi(step))) << name;
    }
  }
  EXPECT_FALSE(swanlab_run["history"].contains("3"));
}

TEST(LoggersE2E, FileLoggerWritesVerlsLines) {
  const std::string run_dir = make_temp_dir("e2e_logger_file");
  TrainRun run = train(run_dir, "VERL_FILE_LOGGER_ROOT='" + run_dir + "/files'", "[jsonl,file]");
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  // verl's FileLogger: ROOT/PROJECT/EXPERIMENT.jsonl, {"step": N, "data": {...}} per step.
  std::ifstream in(run_dir + "/files/verl_cpp_e2e/loggers.jsonl");
  ASSERT_TRUE(in.good());
  std::string line;
  int64_t step = 0;
  while (std::getline(in, line)) {
    const nlohmann::json record = nlohmann::json::parse(line);
    ++step;
    EXPECT_EQ(record["step"].get<int64_t>(), step);
    for (const auto& name : kVerlMetrics) {
      EXPECT_DOUBLE_EQ(record["data"][name].get<double>(), run.history.at(name).at(step)) << name;
    }
  }
  EXPECT_EQ(step, 2);
}

TEST(LoggersE2E, AMissingPackageIsOneClearLine) {
  const std::string run_dir = make_temp_dir("e2e_logger_missing");
  // An empty site folder and no venv: the interpreter the binary was built with has no swanlab (nor wandb here).
  if (run_command("python3 -c 'import swanlab' 2>/dev/null").exit_code == 0) GTEST_SKIP() << "swanlab is installed";
  TrainRun run = train(run_dir, "VERL_PYTHON_SITE_PACKAGES=", "[console,swanlab]");
  EXPECT_NE(run.result.exit_code, 0);
  EXPECT_NE(run.result.err.find("trainer.logger lists 'swanlab', but the embedded Python"), std::string::npos)
      << run.result.err;
  EXPECT_NE(run.result.err.find("pip install swanlab"), std::string::npos) << run.result.err;
}

}  // namespace
}  // namespace verl::test
