// wandb, mlflow and swanlab backends: verl's own calls (verl/utils/tracking.py) made through the embedded Python
// interpreter, with the user's installed package. The package is imported when the run starts; a missing one is
// a one-line error. The interpreter sees the packages of the Python verl.cpp was built against, PYTHONPATH, and
// the site-packages folders in VERL_PYTHON_SITE_PACKAGES (python/interpreter.h).
#include <pybind11/stl.h>

#include <optional>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/python/interpreter.h"
#include "verl/python/mlflow_store.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace py = pybind11;

namespace {

// verl's adapters, with verl's arguments. `config_text` is the run's resolved config as YAML (verl passes the
// resolved OmegaConf container).
constexpr const char* kLoggers = R"PY(
import os
import re


def _config(config_text):
    if not config_text:
        return {}
    import yaml
    return yaml.safe_load(config_text) or {}


def _wandb_reachable():
    # verl.cpp: with no WANDB_MODE set, a run without credentials or without a route to the server goes offline
    # (verl would stop at wandb's login prompt); WANDB_MODE=online keeps wandb's own behaviour.
    import netrc
    import socket
    from urllib.parse import urlparse
    base = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai"))
    host = base.hostname or ""
    has_key = bool(os.environ.get("WANDB_API_KEY"))
    if not has_key:
        try:
            has_key = netrc.netrc().authenticators(host) is not None
        except (OSError, netrc.NetrcParseError):
            has_key = False
    if not has_key:
        return False, "no API key (WANDB_API_KEY or ~/.netrc)"
    try:
        socket.create_connection((host, base.port or 443), timeout=3).close()
    except OSError as e:
        return False, f"{host} unreachable ({e})"
    return True, ""


class WandbLogger:
    def __init__(self, project_name, experiment_name, config_text):
        import wandb
        self.note = ""
        if not os.environ.get("WANDB_MODE"):
            ok, why = _wandb_reachable()
            if not ok:
                os.environ["WANDB_MODE"] = "offline"
                self.note = f"wandb runs offline: {why}; upload later with `wandb sync`"
        entity = os.environ.get("WANDB_ENTITY", None)
        self.run = wandb.init(project=project_name, name=experiment_name, entity=entity, config=_config(config_text))
        self.where = self.run.dir

    def log(self, data, step):
        self.run.log(data=data, step=step)

    def finish(self, exit_code=0):
        self.run.finish(exit_code=exit_code)


def _mlflow_params(x):
    # verl's _compute_mlflow_params_from_objects: lists become {"list_len": n, "0": ..., ...}, then
    # pandas.json_normalize(sep="/") flattens the nested dicts.
    def transform(v):
        if isinstance(v, dict):
            return {k: transform(w) for k, w in v.items()}
        if isinstance(v, list):
            return {"list_len": len(v)} | {f"{i}": transform(w) for i, w in enumerate(v)}
        return v

    out = {}

    def flatten(v, prefix):
        if isinstance(v, dict) and v:
            for k, w in v.items():
                flatten(w, f"{prefix}/{k}" if prefix else str(k))
        else:
            out[prefix] = v

    flatten(transform(x), "")
    return out


class MlflowLogger:
    _invalid = re.compile(r"[^/\w.\- :]")
    _slashes = re.compile(r"/+")

    def __init__(self, project_name, experiment_name, config_text):
        import mlflow
        self.mlflow = mlflow
        uri, self.note = verl_mlflow_tracking_uri(mlflow, "MLflow writes to")
        run_id = os.environ.get("MLFLOW_RUN_ID")
        if run_id:
            self.run = mlflow.start_run(run_id=run_id)
        else:
            experiment = mlflow.set_experiment(project_name)
            self.run = mlflow.start_run(experiment_id=experiment.experiment_id, run_name=experiment_name)
        mlflow.log_params(_mlflow_params(_config(config_text)))
        self.where = f"{uri} (run {self.run.info.run_id})"

    def _key(self, key):
        # verl's _MlflowLoggingAdapter._sanitize_key
        key = key.replace("@", "_at_")
        key = self._slashes.sub("/", key)
        return self._invalid.sub("_", key)

    def log(self, data, step):
        self.mlflow.log_metrics(metrics={self._key(k): v for k, v in data.items()}, step=step, synchronous=True)

    def finish(self, exit_code=0):
        self.mlflow.end_run()


class SwanlabLogger:
    def __init__(self, project_name, experiment_name, config_text):
        import swanlab
        self.swanlab = swanlab
        self.note = ""
        api_key = os.environ.get("SWANLAB_API_KEY", None)
        if api_key:
            swanlab.login(api_key)
        logdir = os.environ.get("SWANLAB_LOG_DIR", "swanlog")
        swanlab.init(project=project_name, experiment_name=experiment_name,
                     config={"FRAMEWORK": "verl", **_config(config_text)}, logdir=logdir,
                     mode=os.environ.get("SWANLAB_MODE", "cloud"))
        self.where = logdir

    def log(self, data, step):
        self.swanlab.log(data=data, step=step)

    def finish(self, exit_code=0):
        self.swanlab.finish()
)PY";

class PythonLoggerBackend : public TrackingBackend {
 public:
  PythonLoggerBackend(const std::string& name, const std::string& class_name, const std::string& project_name,
                      const std::string& experiment_name, const std::string& config_yaml)
      : name_(name) {
    python::with_gil("tracking", [&] {
      // The package first, so that its absence is one clear line.
      try {
        py::module_::import(name.c_str());
      } catch (py::error_already_set& error) {
        const std::string why = python::describe_python_error(error);
        VERL_FAIL("tracking", "trainer.logger lists '", name, "', but the embedded Python (",
                  python::embedded_python_description(), ") cannot import the ", name, " package (", why,
                  "): install it there (pip install ", name,
                  ") or name its site-packages in VERL_PYTHON_SITE_PACKAGES");
      }
      py::dict scope;
      py::exec(python::kMlflowTrackingUriSource, scope);
      py::exec(kLoggers, scope);
      logger_ = scope[class_name.c_str()](project_name, experiment_name, config_yaml);
      const std::string note = py::str(logger_->attr("note")).cast<std::string>();
      if (!note.empty()) {
        VERL_LOG(Warn, "tracking") << note;
      }
      VERL_LOG(Info, "tracking") << name << " run at " << py::str(logger_->attr("where")).cast<std::string>();
    });
  }

  ~PythonLoggerBackend() override {
    try {
      finish();
    } catch (const std::exception& e) {
      VERL_LOG(Error, "tracking") << name_ << ": finishing failed: " << e.what();
    }
    if (logger_) python::with_gil("tracking", [&] { logger_.reset(); });
  }

  void log(const Metrics& metrics, int64_t step) override {
    python::with_gil("tracking", [&] {
      py::dict data;
      for (const auto& [key, value] : metrics) data[py::str(key)] = value;
      logger_->attr("log")(data, step);
    });
  }

  void finish() override {
    if (finished_ || !logger_) return;
    finished_ = true;
    python::with_gil("tracking", [&] { logger_->attr("finish")(); });
  }

 private:
  std::string name_;
  std::optional<py::object> logger_;  // created and released with the GIL held
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<TrackingBackend> make_python_logger_backend(const std::string& name, const std::string& project_name,
                                                            const std::string& experiment_name,
                                                            const std::string& config_yaml) {
  const std::string class_name = name == "wandb" ? "WandbLogger" : name == "mlflow" ? "MlflowLogger" : "SwanlabLogger";
  VERL_ASSERT(name == "wandb" || name == "mlflow" || name == "swanlab", "tracking", "no Python logger named ", name);
  return std::make_unique<PythonLoggerBackend>(name, class_name, project_name, experiment_name, config_yaml);
}

}  // namespace verl::trainer
