// trainer.checkpoint_callback_class (trainer/checkpoint_callback.h): loading verl-style callback classes in the
// embedded interpreter (the built-in verl package's CheckpointCallback base, no verl installed), on_save's
// arguments, the read-only config view, and one-line errors for classes that cannot load, raise or hang.
#include <gtest/gtest.h>
#include <pybind11/embed.h>

#include <nlohmann/json.hpp>

#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/python/interpreter.h"
#include "verl/trainer/checkpoint_callback.h"

namespace verl::trainer {
namespace {

namespace py = pybind11;
using test::make_temp_dir;
using test::write_file;

// A folder of callback modules on the embedded interpreter's sys.path (module names differ per test: Python caches
// them by name).
std::string callback_modules_dir() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("checkpoint_callbacks");
    python::with_gil("test", [&] { py::module_::import("sys").attr("path").attr("insert")(0, d); });
    return d;
  }();
  return dir;
}

std::string write_callback_module(const std::string& module, const std::string& source) {
  write_file(callback_modules_dir() + "/" + module + ".py", source);
  return module;
}

// The value of a Python expression, as JSON text.
nlohmann::json callback_python_value(const std::string& expression) {
  return nlohmann::json::parse(python::with_gil("test", [&] {
    py::dict scope;
    scope["sys"] = py::module_::import("sys");
    return py::module_::import("json").attr("dumps")(py::eval(expression, scope)).cast<std::string>();
  }));
}

const nlohmann::ordered_json kCallbackConfig = {
    {"trainer", {{"save_freq", 2}, {"project_name", "p"}, {"logger", {"console", "jsonl"}}}},
    {"data", {{"train_batch_size", 4}}},
    {"actor", {{"_target_", "verl.workers.config.ActorConfig"}}}};

TEST(CheckpointCallback, OnSaveGetsVerlsKeywordArgumentsAndTheConfig) {
  write_callback_module("ckpt_cb_records", R"PY(
import copy

from verl.trainer.ppo.checkpoint_callback import CheckpointCallback

CALLS = []
SEEN = {}


class Recorder(CheckpointCallback):
    def __init__(self, config):
        super().__init__(config=config)
        SEEN["save_freq_attr"] = config.trainer.save_freq
        SEEN["save_freq_item"] = config["trainer"]["save_freq"]
        SEEN["missing"] = config.trainer.get("checkpoint_callback_class", "absent")
        SEEN["logger"] = list(config.trainer.logger)
        SEEN["sections"] = sorted(config)
        try:
            config.trainer = {}
            SEEN["read_only"] = False
        except TypeError:
            SEEN["read_only"] = True
        try:
            config.nothing
        except AttributeError:
            SEEN["attribute_error"] = True
        SEEN["deep_copy"] = copy.deepcopy(config).trainer.save_freq
        SEEN["target"] = config.actor._target_

    def on_save(self, trainer, global_step, checkpoint_dir, async_save=False, **kwargs):
        CALLS.append({"global_step": global_step, "checkpoint_dir": checkpoint_dir, "async_save": async_save,
                      "trainer_steps": trainer.global_steps, "same_config": trainer.config is self.config,
                      "extra": sorted(kwargs)})
)PY");
  const CheckpointCallback callback("ckpt_cb_records.Recorder", kCallbackConfig, 60);
  callback.on_save(2, "/ckpt/global_step_2");
  callback.on_save(4, "/ckpt/global_step_4");
  const nlohmann::json seen = callback_python_value("sys.modules['ckpt_cb_records'].SEEN");
  EXPECT_EQ(seen["save_freq_attr"], 2);
  EXPECT_EQ(seen["save_freq_item"], 2);
  EXPECT_EQ(seen["missing"], "absent");
  EXPECT_EQ(seen["logger"], nlohmann::json({"console", "jsonl"}));
  EXPECT_EQ(seen["sections"], nlohmann::json({"actor", "data", "trainer"}));
  EXPECT_EQ(seen["read_only"], true);
  EXPECT_EQ(seen["attribute_error"], true);
  EXPECT_EQ(seen["deep_copy"], 2);
  EXPECT_EQ(seen["target"], "verl.workers.config.ActorConfig");
  const nlohmann::json calls = callback_python_value("sys.modules['ckpt_cb_records'].CALLS");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0], nlohmann::json({{"global_step", 2},
                                      {"checkpoint_dir", "/ckpt/global_step_2"},
                                      {"async_save", false},
                                      {"trainer_steps", 2},
                                      {"same_config", true},
                                      {"extra", nlohmann::json::array()}}));
  EXPECT_EQ(calls[1]["global_step"], 4);
  EXPECT_EQ(calls[1]["trainer_steps"], 4);
}

TEST(CheckpointCallback, TheBaseClassIsANoOp) {
  // verl's own base class name works as the callback (its on_save does nothing).
  const CheckpointCallback callback("verl.trainer.ppo.checkpoint_callback.CheckpointCallback", kCallbackConfig, 60);
  EXPECT_NO_THROW(callback.on_save(1, "/ckpt/global_step_1"));
}

TEST(CheckpointCallback, ClassesThatCannotLoadAreOneLineErrorsNamingTheKey) {
  write_callback_module("ckpt_cb_bad", R"PY(
class RaisesInInit:
    def __init__(self, config):
        raise RuntimeError("no credentials for the model registry")


class NoOnSave:
    def __init__(self, config):
        self.config = config
)PY");
  const auto load = [](const std::string& name) {
    return test::error_of([&] { CheckpointCallback(name, kCallbackConfig, 60); });
  };
  const std::string key = "trainer.checkpoint_callback_class";
  for (const auto& [name, expected] : std::vector<std::pair<std::string, std::string>>{
           {"NoModule", "cannot be loaded: ValueError: Empty module name"},  // the config rejects it first
           {"ckpt_cb_not_there.Callback", "ModuleNotFoundError: No module named 'ckpt_cb_not_there'"},
           {"ckpt_cb_bad.Missing", "has no 'Missing'"},
           {"ckpt_cb_bad.RaisesInInit", "RuntimeError: no credentials for the model registry"},
           {"ckpt_cb_bad.NoOnSave", "NoOnSave has no on_save method"}}) {
    const std::string message = load(name);
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << name << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(CheckpointCallback, AnOnSaveThatRaisesOrHangsIsAnErrorNamingTheClassAndStep) {
  write_callback_module("ckpt_cb_failing", R"PY(
import time

from verl.trainer.ppo.checkpoint_callback import CheckpointCallback


class Raises(CheckpointCallback):
    def on_save(self, trainer, global_step, checkpoint_dir, **kwargs):
        raise OSError(f"upload of {checkpoint_dir} refused")


class Hangs(CheckpointCallback):
    def on_save(self, trainer, global_step, checkpoint_dir, **kwargs):
        time.sleep(3600)


class HangsInInit(CheckpointCallback):
    def __init__(self, config):
        time.sleep(3600)
)PY");
  const CheckpointCallback raises("ckpt_cb_failing.Raises", kCallbackConfig, 60);
  std::string message = test::error_of([&] { raises.on_save(3, "/ckpt/global_step_3"); });
  EXPECT_NE(message.find("'ckpt_cb_failing.Raises': on_save failed at global step 3: OSError: upload of "
                         "/ckpt/global_step_3 refused (the checkpoint /ckpt/global_step_3 is complete)"),
            std::string::npos)
      << message;

  const CheckpointCallback hangs("ckpt_cb_failing.Hangs", kCallbackConfig, 0.5);
  message = test::error_of([&] { hangs.on_save(5, "/ckpt/global_step_5"); });
  EXPECT_NE(message.find("trainer.checkpoint_callback_class 'ckpt_cb_failing.Hangs': on_save at global step 5 did "
                         "not return within 0.5 s (trainer.checkpoint_callback_timeout) (the checkpoint "
                         "/ckpt/global_step_5 is complete)"),
            std::string::npos)
      << message;
  message = test::error_of([&] { CheckpointCallback("ckpt_cb_failing.HangsInInit", kCallbackConfig, 0.5); });
  EXPECT_NE(message.find("trainer.checkpoint_callback_class 'ckpt_cb_failing.HangsInInit' (import and construction) "
                         "did not return within 0.5 s (trainer.checkpoint_callback_timeout)"),
            std::string::npos)
      << message;
  // The interpreter is still usable: the next call of another callback goes through.
  EXPECT_NO_THROW(CheckpointCallback("verl.trainer.ppo.checkpoint_callback.CheckpointCallback", kCallbackConfig, 60)
                      .on_save(6, "/ckpt/global_step_6"));
}

}  // namespace
}  // namespace verl::trainer
