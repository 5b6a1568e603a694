// Tracking: picks the backends named in trainer.logger and fans each step's metrics out to them.
#include "verl/trainer/tracking.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/config/ppo_config.h"

namespace verl::trainer {

namespace fs = std::filesystem;

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = str_cat(path, ".tmp.", ::getpid());
  bool written = false;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    VERL_CHECK(out.good(), "tracking", "cannot write '", tmp, "' (does the folder exist and is it writable?)");
    out << text;
    out.flush();
    written = out.good();
  }
  std::error_code ec;
  if (!written) {
    fs::remove(tmp, ec);
    VERL_FAIL("tracking", "writing '", tmp, "' failed (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    VERL_FAIL("tracking", "cannot rename '", tmp, "' to '", path, "': ", ec.message());
  }
}

Tracking::Tracking(const std::string& project_name, const std::string& experiment_name,
                   const std::vector<std::string>& backends, const std::string& run_dir,
                   const std::string& config_yaml, std::ostream* console_out)
    : run_dir_(run_dir) {
  const auto& valid = config::supported_logger_backends();
  // Validate every name before touching the disk, so a typo fails with nothing half-created.
  for (size_t i = 0; i < backends.size(); ++i) {
    const std::string& name = backends[i];
    if (std::find(valid.begin(), valid.end(), name) == valid.end()) {
      std::string near = closest_match(name, valid);
      VERL_FAIL("tracking", "unknown logger backend '", name, "' in trainer.logger",
                near.empty() ? "" : "; did you mean '" + near + "'?", " valid backends: ", join(valid, ", "));
    }
    VERL_CHECK(std::find(backends.begin(), backends.begin() + i, name) == backends.begin() + i, "tracking",
               "trainer.logger lists '", name, "' twice");
  }
  VERL_CHECK(!run_dir.empty(), "tracking", "the run folder must not be empty");
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  VERL_CHECK(!ec && fs::is_directory(run_dir), "tracking", "cannot create run folder '", run_dir, "': ",
             ec ? ec.message() : "not a directory");
  if (!config_yaml.empty()) write_text_atomic((fs::path(run_dir) / "config.yaml").string(), config_yaml);

  const std::string title = project_name + " / " + experiment_name;
  for (const std::string& name : backends) {
    if (name == "console") {
      backends_.push_back(make_console_backend(console_out ? *console_out : std::cout));
    } else if (name == "jsonl") {
      backends_.push_back(make_jsonl_backend(run_dir));
    } else if (name == "tensorboard") {
      backends_.push_back(make_tensorboard_backend(run_dir));
    } else if (name == "html") {
      backends_.push_back(make_html_backend(run_dir, title));
    } else if (name == "file") {
      backends_.push_back(make_file_backend(project_name, experiment_name));
    } else if (name == "wandb" || name == "mlflow" || name == "swanlab") {
      backends_.push_back(make_python_logger_backend(name, project_name, experiment_name, config_yaml));
    } else {
      VERL_ASSERT(false, "tracking", "backend '", name, "' is listed as supported but has no implementation");
    }
  }
}

Tracking::~Tracking() {
  try {
    finish();
  } catch (const std::exception& e) {
    VERL_LOG(Error, "tracking") << "finishing the trackers failed: " << e.what();
  }
}

void Tracking::log(const Metrics& metrics, int64_t step) {
  VERL_CHECK(!finished_, "tracking", "log(step ", step, ") called after finish()");
  for (auto& backend : backends_) backend->log(metrics, step);
}

void Tracking::finish() {
  if (finished_) return;
  finished_ = true;
  for (auto& backend : backends_) backend->finish();
}

}  // namespace verl::trainer
