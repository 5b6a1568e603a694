#include "verl/trainer/checkpoint_callback.h"

#include <pybind11/embed.h>

#include <nlohmann/json.hpp>

#include "verl/agent/verl_python_shim.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/python/interpreter.h"
#include "verl/python/user_code.h"

namespace verl::trainer {

namespace py = pybind11;

namespace {

constexpr const char* kCheckpointCallbackComponent = "checkpoint";
constexpr const char* kKey = "trainer.checkpoint_callback_class";
constexpr const char* kCallbackTimeoutKey = "trainer.checkpoint_callback_timeout";

// Loading and the config object. The calls of user code (import, constructor, on_save) run under
// python::UserCallLimit, the time limit and exit guards of every user call.
constexpr const char* kLoader = R"PY(
import collections.abc
import importlib
import json
import os
import sys


class ConfigView(collections.abc.Mapping):
    """The resolved config, read-only: config.trainer.save_freq, config["trainer"]["save_freq"], .get()."""

    def __init__(self, data):
        object.__setattr__(self, "_data", data)

    def __getitem__(self, key):
        return _view(self._data[key])

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __getattr__(self, key):
        # Dunders and _data are never keys: copy / pickle probe them on an instance before its __init__ ran.
        if key == "_data" or (key.startswith("__") and key.endswith("__")):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"the config has no key '{key}'") from None

    def __setattr__(self, key, value):
        raise TypeError("the config given to a checkpoint callback is read-only")

    def __repr__(self):
        return f"ConfigView({self._data!r})"


def _view(value):
    if isinstance(value, dict):
        return ConfigView(value)
    if isinstance(value, list):
        return tuple(_view(item) for item in value)
    return value


def make_config(config_json):
    data = json.loads(config_json)
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return ConfigView(data)
    return OmegaConf.create(data)


class TrainerView:
    """The `trainer` argument of on_save (verl passes its trainer object): the run's config and global step."""

    def __init__(self, config):
        self.config = config
        self.global_steps = 0


def load(name, config_json):
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # where `python -m verl.trainer.main_ppo` finds the user's modules
    module_name, _, class_name = name.rpartition(".")
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise AttributeError(f"module '{module_name}' ({getattr(module, '__file__', '?')}) has no '{class_name}'")
    config = make_config(config_json)
    callback = cls(config=config)
    if not callable(getattr(callback, "on_save", None)):
        raise TypeError(f"{type(callback).__name__} has no on_save method (subclass "
                        "verl.trainer.ppo.checkpoint_callback.CheckpointCallback)")
    return callback, TrainerView(config)
)PY";

// The loader's scope, the callback and the trainer object; released with the GIL held.
struct PythonObjects {
  py::object scope;  // a dict (py::object, unlike py::dict, can be left empty after the GIL is given back)
  py::object callback;
  py::object trainer;

  PythonObjects() = default;
  PythonObjects(const PythonObjects&) = delete;
  PythonObjects& operator=(const PythonObjects&) = delete;
  ~PythonObjects() {
    py::gil_scoped_acquire gil;
    trainer = py::object();
    callback = py::object();
    scope = py::object();
  }
};

}  // namespace

struct CheckpointCallback::Python {
  std::unique_ptr<PythonObjects> objects;  // pybind11's types are hidden: kept out of the exported class's layout
};

CheckpointCallback::CheckpointCallback(const std::string& class_name, const nlohmann::ordered_json& config,
                                       double timeout_s)
    : class_name_(class_name), timeout_s_(timeout_s) {
  const std::string config_json = config.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::unique_ptr<PythonObjects> objects;
  python::with_gil(kCheckpointCallbackComponent, [&] {
    objects = std::make_unique<PythonObjects>();
    objects->scope = py::dict();
    agent::install_verl_python_shim();  // verl.trainer.ppo.checkpoint_callback when no verl is installed
    objects->scope["__builtins__"] = py::module_::import("builtins");
    objects->scope["__name__"] = py::str("verl_cpp_checkpoint_callback");
    py::exec(kLoader, objects->scope);
    const std::string what = str_cat(kKey, " '", class_name, "' (import and construction)");
    python::UserCallLimit limit(timeout_s_, what, kCallbackTimeoutKey);
    std::string why;
    try {
      const py::tuple loaded = objects->scope["load"](class_name, config_json);
      objects->callback = loaded[0];
      objects->trainer = loaded[1];
    } catch (py::error_already_set& error) {
      why = python::describe_python_error(error);
    }
    if (limit.expired()) VERL_FAIL("config", limit.timeout_message());
    if (!why.empty()) {
      VERL_FAIL("config", kKey, " '", class_name, "' cannot be loaded: ", why, " (embedded Python ",
                python::embedded_python_description(), ")");
    }
  });
  python_ = std::make_unique<Python>(Python{std::move(objects)});
  VERL_LOG(Info, kCheckpointCallbackComponent) << "checkpoint callback " << class_name_;
}

CheckpointCallback::~CheckpointCallback() = default;

void CheckpointCallback::on_save(int64_t global_step, const std::string& checkpoint_dir) const {
  python::with_gil(kCheckpointCallbackComponent, [&] {
    const PythonObjects& o = *python_->objects;
    o.trainer.attr("global_steps") = global_step;
    const std::string what = str_cat(kKey, " '", class_name_, "': on_save at global step ", global_step);
    python::UserCallLimit limit(timeout_s_, what, kCallbackTimeoutKey);
    std::string why;
    try {
      o.callback.attr("on_save")(py::arg("trainer") = o.trainer, py::arg("global_step") = global_step,
                                 py::arg("checkpoint_dir") = checkpoint_dir, py::arg("async_save") = false);
    } catch (py::error_already_set& error) {
      why = python::describe_python_error(error);
    }
    // A callback that caught the TimeoutError and returned anyway still ran past the limit.
    if (limit.expired())
      VERL_FAIL(kCheckpointCallbackComponent, limit.timeout_message(), " (the checkpoint ", checkpoint_dir,
                " is complete)");
    if (!why.empty()) {
      VERL_FAIL(kCheckpointCallbackComponent, kKey, " '", class_name_, "': on_save failed at global step ", global_step,
                ": ", why, " (the checkpoint ", checkpoint_dir, " is complete)");
    }
  });
}

}  // namespace verl::trainer
