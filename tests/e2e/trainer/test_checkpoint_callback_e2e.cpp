// trainer.checkpoint_callback_class through `verl train` (digit completion, tiny model, one CPU process): a
// callback module in the run's working folder is imported (as `python -m` would find it), gets an omegaconf
// DictConfig when omegaconf imports (here omegaconf from .venv/test) and is called after each
// complete checkpoint; a callback that raises ends the run with one line, its checkpoint kept; a class that cannot
// be imported ends the run before any step.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "support/test_python.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& callback_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("e2e_ckpt_callback"), 8);
  return instance;
}

constexpr const char* kCallbackModule = R"PY(
import json
import os

from verl.trainer.ppo.checkpoint_callback import CheckpointCallback


class Record(CheckpointCallback):
    """Appends one JSON line per call to calls.jsonl in the working folder."""

    def on_save(self, trainer, global_step, checkpoint_dir, async_save=False, **kwargs):
        root = os.path.dirname(checkpoint_dir)
        with open(os.path.join(root, "latest_checkpointed_iteration.txt")) as f:
            tracker = f.read()
        line = {"global_step": global_step, "dir": os.path.basename(checkpoint_dir), "tracker": tracker,
                "actor": os.path.isdir(os.path.join(checkpoint_dir, "actor")),
                "data": os.path.isfile(os.path.join(checkpoint_dir, "data.json")),
                "config_type": type(self.config).__name__, "save_freq": self.config.trainer.save_freq,
                "trainer_steps": trainer.global_steps}
        with open("calls.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")


class FailAtTwo(CheckpointCallback):
    def on_save(self, trainer, global_step, checkpoint_dir, **kwargs):
        if global_step == 2:
            raise RuntimeError("model registry unreachable")
)PY";

// omegaconf and what it imports from .venv/test, without the verl wheel there (whose package needs Ray): a folder of
// links for VERL_PYTHON_SITE_PACKAGES.
std::string omegaconf_site_packages() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("e2e_ckpt_callback_site");
    const std::filesystem::path venv =
        std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/.venv/test/lib/python3.11/site-packages";
    for (const char* package : {"omegaconf", "antlr4", "yaml", "_yaml"}) {
      if (std::filesystem::exists(venv / package))
        std::filesystem::create_directory_symlink(venv / package, std::filesystem::path(d) / package);
    }
    return d;
  }();
  return dir;
}

CommandResult train_with_callback(const std::string& run_dir, const std::string& callback, const std::string& env) {
  write_file(run_dir + "/my_callbacks.py", kCallbackModule);
  std::vector<std::string> all = callback_setup().base_overrides(run_dir);
  all.insert(all.end(), {"trainer.total_training_steps=3", "trainer.test_freq=-1", "trainer.save_freq=1",
                         "trainer.max_actor_ckpt_to_keep=2", "trainer.checkpoint_callback_class=" + callback});
  return run_command("cd '" + run_dir + "' && env " + env + " " + verl_train_command(all));
}

TEST(CheckpointCallbackE2E, EachCompleteCheckpointIsHandedToTheCallback) {
  if (!test_python_imports("omegaconf")) FAIL() << "omegaconf: " << test_python_missing_hint();
  const std::string run_dir = make_temp_dir("e2e_ckpt_callback_record");
  const CommandResult run = train_with_callback(run_dir, "my_callbacks.Record",
                                                "VERL_PYTHON_SITE_PACKAGES='" + omegaconf_site_packages() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::istringstream lines(read_file(run_dir + "/calls.jsonl"));
  std::vector<nlohmann::json> calls;
  for (std::string line; std::getline(lines, line);) calls.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(calls.size(), 3u);
  for (int step = 1; step <= 3; ++step) {
    const nlohmann::json& call = calls[step - 1];
    EXPECT_EQ(call["global_step"], step);
    EXPECT_EQ(call["dir"], "global_step_" + std::to_string(step));
    EXPECT_EQ(call["tracker"], std::to_string(step));
    EXPECT_EQ(call["actor"], true);
    EXPECT_EQ(call["data"], true);
    EXPECT_EQ(call["config_type"], "DictConfig");
    EXPECT_EQ(call["save_freq"], 1);
    EXPECT_EQ(call["trainer_steps"], step);
  }
}

TEST(CheckpointCallbackE2E, ACallbackThatRaisesEndsTheRunWithItsCheckpointKept) {
  const std::string run_dir = make_temp_dir("e2e_ckpt_callback_fails");
  const CommandResult run = train_with_callback(run_dir, "my_callbacks.FailAtTwo", "VERL_PYTHON_SITE_PACKAGES=");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("trainer.checkpoint_callback_class 'my_callbacks.FailAtTwo': on_save failed at global "
                         "step 2: RuntimeError: model registry unreachable"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(read_file(run_dir + "/latest_checkpointed_iteration.txt"), "2");
  EXPECT_TRUE(std::filesystem::is_directory(run_dir + "/global_step_2/actor"));
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/global_step_3"));

  // A class that cannot be imported stops the run before its first step.
  const std::string missing_dir = make_temp_dir("e2e_ckpt_callback_missing");
  const CommandResult missing = train_with_callback(missing_dir, "my_callbacks.Nope", "VERL_PYTHON_SITE_PACKAGES=");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("trainer.checkpoint_callback_class 'my_callbacks.Nope' cannot be loaded"),
            std::string::npos)
      << missing.err;
  EXPECT_FALSE(std::filesystem::exists(missing_dir + "/global_step_1"));
}

}  // namespace
}  // namespace verl::test
