// verl's trainer.checkpoint_callback_class: a Python class (its fully qualified name, `module.ClassName`) that the
// trainer constructs once on the controller with `config=` the run's resolved config, and whose
// `on_save(trainer=..., global_step=N, checkpoint_dir=".../global_step_N", async_save=False)` it calls after each
// checkpoint is complete (every role's folder and data.json written, latest_checkpointed_iteration.txt updated, old
// checkpoints rotated out): the place to upload a checkpoint or register a model version.
//
// As in verl, the base class is verl.trainer.ppo.checkpoint_callback.CheckpointCallback (the built-in verl package
// has it when no verl is installed), and an exception raised by on_save stops training: the error names the class
// and the step, and the checkpoint it was told about stays complete. verl.cpp adds a time limit
// (trainer.checkpoint_callback_timeout seconds, 0: none, on the import and construction and on each on_save;
// python::UserCallLimit, as for reward functions) so that a hung upload ends the run with an error instead of
// stalling it.
//
// `config` is an omegaconf DictConfig when omegaconf can be imported (what verl passes), else a read-only mapping
// with attribute access (config.trainer.save_freq, config["trainer"], .get). `trainer` is verl.cpp's stand-in for
// verl's trainer object: its `config` (the same object) and `global_steps`. The module is imported as Python's
// `-m` would find it: the working folder first, then PYTHONPATH and VERL_PYTHON_SITE_PACKAGES.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace verl::trainer {

class CheckpointCallback {
 public:
  // Imports the class and constructs it; throws one line naming trainer.checkpoint_callback_class and the cause
  // (module not found, no such class, the constructor raised, no on_save method). The config checks the name's
  // form (module.ClassName).
  CheckpointCallback(const std::string& class_name, const nlohmann::ordered_json& config, double timeout_s);
  ~CheckpointCallback();
  CheckpointCallback(const CheckpointCallback&) = delete;
  CheckpointCallback& operator=(const CheckpointCallback&) = delete;

  // Calls on_save; throws when it raises or outlives the time limit.
  void on_save(int64_t global_step, const std::string& checkpoint_dir) const;

 private:
  struct Python;  // the callback and trainer objects (released with the GIL held)
  std::string class_name_;
  double timeout_s_;
  std::unique_ptr<Python> python_;
};

}  // namespace verl::trainer
