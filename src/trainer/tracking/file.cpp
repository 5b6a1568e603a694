// file backend: verl's FileLogger (verl/utils/tracking.py). One JSON line per step, {"step":N,"data":{...}}, to
// $VERL_FILE_LOGGER_PATH, else ${VERL_FILE_LOGGER_ROOT:-.}/<project_name>/<experiment_name>.jsonl; the file is
// truncated at start as verl's open(..., "wb") does. Compact as orjson writes it, NaN and infinities null; a line
// parses to verl's values, not to its bytes (numbers are the shortest round-trip %g text, so an integral float is
// `3` where orjson writes `3.0`, `1e-05` where it writes `0.00001`).
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace {

std::string file_logger_path(const std::string& project_name, const std::string& experiment_name) {
  if (const char* path = std::getenv("VERL_FILE_LOGGER_PATH"); path != nullptr) return path;
  std::string root = ".";
  if (const char* env = std::getenv("VERL_FILE_LOGGER_ROOT"); env != nullptr) root = env;
  if (root.rfind("~", 0) == 0) {
    const char* home = std::getenv("HOME");
    root = std::string(home ? home : "") + root.substr(1);
  }
  const std::filesystem::path directory = std::filesystem::path(root) / project_name;
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  VERL_CHECK(!ec, "tracking", "file logger: cannot create '", directory.string(), "': ", ec.message());
  return (directory / (experiment_name + ".jsonl")).string();
}

class FileBackend : public TrackingBackend {
 public:
  FileBackend(const std::string& project_name, const std::string& experiment_name)
      : path_(file_logger_path(project_name, experiment_name)) {
    file_ = std::fopen(path_.c_str(), "wb");
    VERL_CHECK(file_ != nullptr, "tracking", "file logger: cannot open '", path_, "': ", std::strerror(errno));
    VERL_LOG(Info, "tracking") << "Creating file logger at " << std::filesystem::absolute(path_).string();
  }
  ~FileBackend() override { finish(); }

  void log(const Metrics& metrics, int64_t step) override {
    VERL_CHECK(file_ != nullptr, "tracking", "file logger: '", path_, "' is already closed");
    std::string line = "{\"step\":" + std::to_string(step) + ",\"data\":{";
    bool first = true;
    for (const auto& [key, value] : metrics) {
      if (!first) line += ",";
      first = false;
      append_json_string(line, key);
      line += ":";
      line += std::isfinite(value) ? format_json_number(value) : "null";
    }
    line += "}}\n";
    const size_t written = std::fwrite(line.data(), 1, line.size(), file_);
    VERL_CHECK(written == line.size() && std::fflush(file_) == 0, "tracking", "file logger: writing '", path_,
               "' failed: ", std::strerror(errno));
  }

  void finish() override {
    if (file_ != nullptr) std::fclose(file_);
    file_ = nullptr;
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace

std::unique_ptr<TrackingBackend> make_file_backend(const std::string& project_name, const std::string& experiment_name) {
  return std::make_unique<FileBackend>(project_name, experiment_name);
}

}  // namespace verl::trainer
