// data.custom_cls through `verl train` (digit completion, tiny model, one CPU process): the class in the run's
// working folder is constructed once for the train and once for the val data, as verl's create_rl_dataset does
// (data_files, the data config, max_samples), and its rows are the ones trained on; a class that cannot be loaded
// ends the run with one line before any step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/digit_completion_setup.h"
#include "support/metric_compare.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& custom_dataset_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_custom_dataset"), 8);
  return instance;
}

// Keeps every other row of verl-format JSON Lines and records what it was given.
constexpr const char* kDatasetModule = R"PY(
import json

try:
    from torch.utils.data import Dataset
except ImportError:
    Dataset = object


class EveryOtherRow(Dataset):
    def __init__(self, data_files, tokenizer, config, processor=None, max_samples=-1):
        self.rows = []
        for path in data_files:
            with open(path) as f:
                self.rows += [json.loads(line) for line in f if line.strip()]
        self.rows = self.rows[::2]
        if max_samples > 0:
            self.rows = self.rows[:max_samples]
        with open("constructed.jsonl", "a") as f:
            f.write(json.dumps({"data_files": list(data_files), "max_samples": max_samples, "rows": len(self.rows),
                                "max_prompt_length": config.max_prompt_length,
                                "name": config.custom_cls.name}) + "\n")

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, item):
        row = dict(self.rows[item])
        row["raw_prompt"] = row["prompt"]
        return row
)PY";

// Records its process id, then never finishes loading.
constexpr const char* kHangingModule = R"PY(
import os
import time

try:
    from torch.utils.data import Dataset
except ImportError:
    Dataset = object


class Hangs(Dataset):
    def __init__(self, **kwargs):
        with open("loader.pid.tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename("loader.pid.tmp", "loader.pid")
        time.sleep(600)

    def __len__(self):
        return 0

    def __getitem__(self, item):
        return {}
)PY";

int64_t line_count(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

CommandResult train_with_dataset_class(const std::string& run_dir, const std::string& class_name,
                                       const std::vector<std::string>& more = {"trainer.total_training_steps=2",
                                                                               "trainer.test_freq=2",
                                                                               "trainer.save_freq=-1"}) {
  write_file(run_dir + "/my_dataset.py", kDatasetModule);
  std::vector<std::string> all = custom_dataset_setup().base_overrides(run_dir);
  all.insert(all.end(),
             {"data.val_max_samples=3", "data.custom_cls.path=my_dataset.py", "data.custom_cls.name=" + class_name});
  all.insert(all.end(), more.begin(), more.end());
  return run_command("cd '" + run_dir + "' && env VERL_PYTHON_SITE_PACKAGES= " + verl_train_command(all));
}

TEST(CustomDatasetE2E, TheClassRowsAreTrainedAndValidatedOn) {
  const std::string run_dir = make_temp_dir("e2e_custom_dataset_run");
  const CommandResult run = train_with_dataset_class(run_dir, "EveryOtherRow");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const DigitCompletionSetup& setup = custom_dataset_setup();
  const int64_t train_rows = (line_count(setup.train_file) + 1) / 2;
  std::istringstream lines(read_file(run_dir + "/constructed.jsonl"));
  std::vector<nlohmann::json> calls;
  for (std::string line; std::getline(lines, line);) calls.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["data_files"], nlohmann::json::array({setup.train_file}));
  EXPECT_EQ(calls[0]["max_samples"], -1);
  EXPECT_EQ(calls[0]["rows"], train_rows);
  EXPECT_EQ(calls[0]["max_prompt_length"], 8);
  EXPECT_EQ(calls[0]["name"], "EveryOtherRow");
  EXPECT_EQ(calls[1]["data_files"], nlohmann::json::array({setup.val_file}));
  EXPECT_EQ(calls[1]["max_samples"], 3);
  EXPECT_EQ(calls[1]["rows"], 3);
  EXPECT_NE(run.err.find("gave " + std::to_string(train_rows) + " train rows"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("gave 3 val rows"), std::string::npos) << run.err;

  const trainer::MetricHistory history = trainer::read_metrics_jsonl(run_dir + "/metrics.jsonl");
  ASSERT_TRUE(history.count("actor/pg_loss"));
  EXPECT_EQ(history.at("actor/pg_loss").size(), 2u);
  bool validated = false;
  for (const auto& [key, by_step] : history)
    validated = validated || (key.rfind("val-core/", 0) == 0 && by_step.count(2));
  EXPECT_TRUE(validated) << "no val-core/ metric at step 2";
}

// The dataloader's checkpointed position indexes the class's rows: a run stopped after step 2 and resumed (the class
// constructed again) continues with the uninterrupted run's batches, every step-3 and step-4 metric bitwise equal.
TEST(CustomDatasetE2E, AResumedRunContinuesWithTheSameRows) {
  const std::string straight_dir = make_temp_dir("e2e_custom_dataset_straight");
  const CommandResult straight = train_with_dataset_class(
      straight_dir, "EveryOtherRow", {"trainer.total_training_steps=4", "trainer.test_freq=-1", "trainer.save_freq=2"});
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  const std::string dir = make_temp_dir("e2e_custom_dataset_resumed");
  const CommandResult first = train_with_dataset_class(
      dir, "EveryOtherRow", {"trainer.total_training_steps=2", "trainer.test_freq=-1", "trainer.save_freq=2"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const CommandResult resumed = train_with_dataset_class(
      dir, "EveryOtherRow", {"trainer.total_training_steps=4", "trainer.test_freq=-1", "trainer.save_freq=2"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("global_step_2"), std::string::npos) << "did not resume: " << resumed.err;

  const trainer::MetricHistory expected = trainer::read_metrics_jsonl(straight_dir + "/metrics.jsonl");
  const trainer::MetricHistory got = trainer::read_metrics_jsonl(dir + "/metrics.jsonl");
  int compared = 0;
  for (const auto& [key, by_step] : expected) {
    if (is_machine_measured_metric(key)) continue;
    for (const int64_t step : {3, 4}) {
      if (!by_step.count(step)) continue;
      ASSERT_TRUE(got.count(key) && got.at(key).count(step)) << key << " missing at step " << step;
      const double a = by_step.at(step), b = got.at(key).at(step);
      EXPECT_TRUE(a == b || (a != a && b != b)) << key << " step " << step << ": " << a << " vs " << b;
      ++compared;
    }
  }
  EXPECT_GT(compared, 40);
}

// The loader runs in a process group of its own (so that a timeout ends the workers it forked), where a Ctrl-C or a
// kill of the run does not reach it: it must end with the run instead of loading on as an orphan.
TEST(CustomDatasetE2E, TheLoaderEndsWhenTheRunIsKilled) {
  const std::string run_dir = make_temp_dir("e2e_custom_dataset_killed");
  write_file(run_dir + "/hangs.py", kHangingModule);
  std::vector<std::string> all = custom_dataset_setup().base_overrides(run_dir);
  all.insert(all.end(), {"data.custom_cls.path=hangs.py", "data.custom_cls.name=Hangs"});
  const std::string script =
      "cd '" + run_dir + "' && { env VERL_PYTHON_SITE_PACKAGES= " + verl_train_command(all) +
      " > run.log 2>&1 & V=$!; "
      "for i in $(seq 600); do [ -s loader.pid ] && break; sleep 0.1; done; "
      "[ -s loader.pid ] || { echo NO_LOADER; kill -9 $V; exit 1; }; "
      "kill -9 $V; wait $V; "
      "for i in $(seq 100); do kill -0 $(cat loader.pid) 2>/dev/null || { echo GONE; exit 0; }; sleep 0.1; done; "
      "kill -9 $(cat loader.pid); echo ALIVE; }";
  const CommandResult r = run_command(script);
  EXPECT_EQ(r.out, "GONE\n") << r.err << read_file(run_dir + "/run.log");
}

TEST(CustomDatasetE2E, AClassThatCannotBeLoadedEndsTheRunBeforeAnyStep) {
  const std::string run_dir = make_temp_dir("e2e_custom_dataset_missing");
  const CommandResult run = train_with_dataset_class(run_dir, "Nope");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("data.custom_cls 'Nope' (my_dataset.py) failed on the train data: 'my_dataset.py' has no "
                         "'Nope'"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/metrics.jsonl") && !read_file(run_dir + "/metrics.jsonl").empty());
}

}  // namespace
}  // namespace verl::test
