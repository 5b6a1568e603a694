#include "verl/agent/rollout_trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/python/interpreter.h"
#include "verl/python/mlflow_store.h"

namespace verl::agent {

namespace py = pybind11;

namespace {

constexpr const char* kRolloutTraceComponent = "rollout_trace";

// Python's str() of a JSON scalar: what verl's mlflow.set_trace_tag(trace_id, key, str(value)) stores.
std::string python_str(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  return v.dump();
}

nlohmann::ordered_json span_json(const TraceSpan& s) {
  nlohmann::ordered_json j = {{"name", s.name}, {"inputs", s.inputs}, {"outputs", s.outputs},
                              {"start_ns", s.start_ns}, {"end_ns", std::max(s.end_ns, s.start_ns)}};
  j["children"] = nlohmann::ordered_json::array();
  for (const auto& c : s.children) j["children"].push_back(span_json(c));
  return j;
}

// verl's RolloutTraceConfig.init(backend="mlflow") and rollout_trace_attr / rollout_trace_op, replayed: each span
// opened with its recorded start time under its parent, its outputs set and closed at its end time.
constexpr const char* kMlflowTrace = R"PY(
import json


class MlflowRolloutTrace:
    def __init__(self, project_name):
        import mlflow
        self.mlflow = mlflow
        mlflow.config.enable_async_logging()
        uri, self.note = verl_mlflow_tracking_uri(mlflow, "rollout traces go to")
        self.experiment_id = mlflow.set_experiment(project_name).experiment_id
        self.where = uri

    def _span(self, s, parent, tags):
        span = self.mlflow.start_span_no_context(
            s["name"], parent_span=parent, inputs=s["inputs"], tags=tags, start_time_ns=s["start_ns"],
            experiment_id=self.experiment_id if parent is None else None)
        for child in s["children"]:
            self._span(child, span, None)
        span.end(outputs=s["outputs"], end_time_ns=s["end_ns"])

    def write(self, traces_json):
        for trace in json.loads(traces_json):
            self._span(trace["root"], None, trace["tags"])
        self.mlflow.flush_trace_async_logging()
)PY";

class MlflowTraceWriter : public RolloutTraceWriter {
 public:
  explicit MlflowTraceWriter(const std::string& project_name) {
    python::with_gil(kRolloutTraceComponent, [&] {
      try {
        py::module_::import("mlflow");
      } catch (py::error_already_set& error) {
        VERL_FAIL(kRolloutTraceComponent, "actor_rollout_ref.rollout.trace.backend=mlflow, but the embedded Python (",
                  python::embedded_python_description(), ") cannot import the mlflow package (",
                  python::describe_python_error(error),
                  "): install it there (pip install mlflow) or name its site-packages in VERL_PYTHON_SITE_PACKAGES");
      }
      py::dict scope;
      py::exec(python::kMlflowTrackingUriSource, scope);
      py::exec(kMlflowTrace, scope);
      tracer_ = scope["MlflowRolloutTrace"](project_name);
      const std::string note = py::str(tracer_->attr("note")).cast<std::string>();
      if (!note.empty()) {
        VERL_LOG(Warn, kRolloutTraceComponent) << note;
      }
      VERL_LOG(Info, kRolloutTraceComponent)
          << "rollout traces (mlflow) at " << py::str(tracer_->attr("where")).cast<std::string>() << ", experiment '"
          << project_name << "'";
    });
  }
  ~MlflowTraceWriter() override {
    if (tracer_) python::with_gil(kRolloutTraceComponent, [&] { tracer_.reset(); });
  }

  void write(const std::vector<SampleTrace>& traces) override {
    if (traces.empty()) return;
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& t : traces) {
      nlohmann::ordered_json tags = nlohmann::ordered_json::object();
      for (const auto& [k, v] : t.tags.items()) tags[k] = python_str(v);
      all.push_back({{"tags", tags}, {"root", span_json(t.root)}});
    }
    const std::string text = all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    python::with_gil(kRolloutTraceComponent, [&] { tracer_->attr("write")(py::str(text)); });
  }

 private:
  std::optional<py::object> tracer_;  // created and released with the GIL held
};

}  // namespace

int64_t trace_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string trace_request_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  char buffer[33];
  std::snprintf(buffer, sizeof(buffer), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buffer;
}

std::vector<nlohmann::ordered_json> trace_tags(const std::vector<nlohmann::json>& index, int64_t step, bool validate,
                                               const std::string& experiment_name) {
  std::vector<nlohmann::ordered_json> tags;
  int64_t rollout_n = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    const nlohmann::json sample = index[i].is_null() ? nlohmann::json(static_cast<int64_t>(i)) : index[i];
    const nlohmann::json previous = i == 0 ? nlohmann::json() : (index[i - 1].is_null() ? nlohmann::json(static_cast<int64_t>(i - 1)) : index[i - 1]);
    rollout_n = i > 0 && previous == sample ? rollout_n + 1 : 0;
    // verl's attribute order: sample_index, step, rollout_n, validate, experiment_name.
    tags.push_back({{"sample_index", sample},
                    {"step", step},
                    {"rollout_n", rollout_n},
                    {"validate", validate},
                    {"experiment_name", experiment_name.empty() ? nlohmann::json() : nlohmann::json(experiment_name)}});
  }
  return tags;
}

std::vector<bool> traced_rows(const std::vector<nlohmann::json>& index, std::optional<int64_t> max_samples,
                              uint64_t seed) {
  std::vector<bool> traced(index.size(), true);
  if (!max_samples) return traced;
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (size_t i = 0; i < index.size(); ++i) {
    const std::string key = index[i].is_null() ? std::to_string(i) : index[i].dump();
    if (seen.insert(key).second) unique.push_back(key);
  }
  if (*max_samples >= static_cast<int64_t>(unique.size())) return traced;
  std::mt19937_64 rng(seed);
  std::shuffle(unique.begin(), unique.end(), rng);
  const std::set<std::string> chosen(unique.begin(), unique.begin() + *max_samples);
  for (size_t i = 0; i < index.size(); ++i) {
    traced[i] = chosen.count(index[i].is_null() ? std::to_string(i) : index[i].dump()) > 0;
  }
  return traced;
}

std::unique_ptr<RolloutTraceWriter> make_rollout_trace_writer(const std::string& backend,
                                                              const std::string& project_name) {
  VERL_CHECK(backend == "mlflow", kRolloutTraceComponent, "actor_rollout_ref.rollout.trace.backend=", backend,
             ": verl.cpp writes rollout traces to mlflow only (weave: its package is not available here)");
  return std::make_unique<MlflowTraceWriter>(project_name);
}

}  // namespace verl::agent
