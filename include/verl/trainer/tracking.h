// Metrics tracking, verl's `Tracking`: one call per step fans the metrics out to the backends named in
// `trainer.logger` (names: config::supported_logger_backends()).
//
//   Tracking tracking(project, experiment, {"console", "jsonl"}, run_dir, config_yaml);
//   tracking.log({{"critic/score/mean", 0.5}}, /*step=*/1);
//   tracking.finish();
//
// Backends (one source file each under src/trainer/tracking/):
//   console     `step:N - key:value - ...` on stdout, verl's LocalLogger line (values `:.3f`)
//   jsonl       RUN_DIR/metrics.jsonl, one object per step {"step": N, "<key>": value, ...}, flushed per step
//   tensorboard RUN_DIR/events.out.tfevents.<unix time>.<host>: TFRecords of Event protobufs
//   html        RUN_DIR/report.html, a self-contained report with inline SVG charts (rewritten atomically)
//   file        verl's FileLogger: $VERL_FILE_LOGGER_PATH or ${VERL_FILE_LOGGER_ROOT:-.}/PROJECT/EXPERIMENT.jsonl,
//               {"step":N,"data":{...}} per line
//   wandb, mlflow, swanlab   verl's calls to the user's package in the embedded Python (tracking/python_loggers.cpp):
//               wandb.init(project, name, entity=$WANDB_ENTITY, config) (offline without credentials or network),
//               mlflow at $MLFLOW_TRACKING_URI (experiment = project, run = experiment, params = the config)
// The run folder also receives the resolved config as RUN_DIR/config.yaml (atomic write).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace verl::trainer {

using Metrics = std::map<std::string, double>;

class TrackingBackend {
 public:
  virtual ~TrackingBackend() = default;
  virtual void log(const Metrics& metrics, int64_t step) = 0;
  // Flushes and closes; called once by Tracking::finish.
  virtual void finish() {}
};

class Tracking {
 public:
  // Creates run_dir, writes run_dir/config.yaml when config_yaml is not empty, opens every backend.
  // An unknown or repeated backend name is an error listing the valid ones. console_out: where the console
  // backend prints (stdout by default).
  Tracking(const std::string& project_name, const std::string& experiment_name,
           const std::vector<std::string>& backends, const std::string& run_dir, const std::string& config_yaml,
           std::ostream* console_out = nullptr);
  ~Tracking();
  Tracking(const Tracking&) = delete;
  Tracking& operator=(const Tracking&) = delete;

  void log(const Metrics& metrics, int64_t step);
  // Flushes every backend (html: final rewrite). Idempotent; logging after finish is an error.
  void finish();

  const std::string& run_dir() const { return run_dir_; }

 private:
  std::string run_dir_;
  std::vector<std::unique_ptr<TrackingBackend>> backends_;
  bool finished_ = false;
};

// ---- helpers shared by the backends, `verl report` and the tests ----

// verl's concat_dict_to_str: "step:N" then "key:value" per metric joined by " - ", each value formatted
// like Python's f"{v:.3f}" (so "nan", "inf", "-inf", "-0.000"). verl prints keys in the dict's insertion
// order; Metrics is a std::map, so keys come out sorted (byte order).
std::string format_console_line(const Metrics& metrics, int64_t step);

// Shortest decimal text that reads back to exactly `value` ("0.1", "3", "1e-06"); NaN / Infinity /
// -Infinity as Python's json module writes them.
std::string format_json_number(double value);
// Appends `text` as a JSON string: quote and backslash escaped, control characters as \b \f \n \r \t or \u00XX
// (as orjson and Python's json write them), other bytes as they are (UTF-8 passes through).
void append_json_string(std::string& out, const std::string& text);
// One metrics.jsonl line (without the newline): {"step":N,"key":value,...}, keys sorted.
std::string format_jsonl_record(const Metrics& metrics, int64_t step);

// Metric name -> step -> value (a later record for the same step replaces the earlier one, as after a resume).
using MetricHistory = std::map<std::string, std::map<int64_t, double>>;
void add_to_history(MetricHistory& history, const Metrics& metrics, int64_t step);
// Reads RUN_DIR/metrics.jsonl; a malformed line is an error naming file and line, except a truncated last
// line (a crash mid-write), which is skipped with a warning.
MetricHistory read_metrics_jsonl(const std::string& path);

// The self-contained HTML report: sections by metric prefix (text before the first '/'), one SVG line chart
// per metric; no external resources.
std::string render_html_report(const std::string& title, const MetricHistory& history);
// Renders and writes atomically (temp file + rename).
void write_html_report(const std::string& path, const std::string& title, const MetricHistory& history);

// Writes `text` to `path` through `path.tmp.<pid>` + rename, so readers see the old or the new file.
void write_text_atomic(const std::string& path, const std::string& text);

// TensorBoard wire format: the protobuf bytes of one Event, and its TFRecord frame
// (uint64 length, masked crc32c of the length, data, masked crc32c of the data; little-endian).
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag, float value);
std::string tfrecord_frame(const std::string& data);

// Backend factories (Tracking picks them by name).
std::unique_ptr<TrackingBackend> make_console_backend(std::ostream& out);
std::unique_ptr<TrackingBackend> make_jsonl_backend(const std::string& run_dir);
std::unique_ptr<TrackingBackend> make_tensorboard_backend(const std::string& run_dir);
std::unique_ptr<TrackingBackend> make_html_backend(const std::string& run_dir, const std::string& title);
std::unique_ptr<TrackingBackend> make_file_backend(const std::string& project_name, const std::string& experiment_name);
// name: wandb | mlflow | swanlab; config_yaml: the resolved config they record.
std::unique_ptr<TrackingBackend> make_python_logger_backend(const std::string& name, const std::string& project_name,
                                                            const std::string& experiment_name,
                                                            const std::string& config_yaml);

}  // namespace verl::trainer
