#include "verl/trainer/checkpoint_paths.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

// A step number of decimal digits; std::stoll would throw std::out_of_range (no file named) beyond int64.
int64_t parse_step(const std::string& digits, const std::string& source) {
  int64_t step = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  VERL_CHECK(ec == std::errc() && end == digits.data() + digits.size(), "checkpoint", "'", source,
             "' names step '", digits, "', which is not a step number (limit ", INT64_MAX, ")");
  return step;
}

}  // namespace

std::string global_step_dir(const std::string& default_local_dir, int64_t step) {
  return (fs::path(default_local_dir) / ("global_step_" + std::to_string(step))).string();
}

std::string latest_tracker_path(const std::string& default_local_dir) {
  return (fs::path(default_local_dir) / "latest_checkpointed_iteration.txt").string();
}

int64_t global_step_from_path(const std::string& path) {
  static const std::regex pattern(R"(global_step_([0-9]+)/*$)");
  std::smatch match;
  VERL_CHECK(std::regex_search(path, match, pattern), "checkpoint", "'", path,
             "' is not a checkpoint folder; expected a path ending in global_step_<N>");
  return parse_step(match[1].str(), path);
}

std::optional<std::string> find_latest_checkpoint(const std::string& default_local_dir) {
  const std::string tracker = latest_tracker_path(default_local_dir);
  if (!fs::exists(tracker)) return std::nullopt;
  std::ifstream in(tracker);
  std::stringstream text;
  text << in.rdbuf();
  const std::string value = trim(text.str());
  VERL_CHECK(!value.empty() && std::all_of(value.begin(), value.end(), ::isdigit), "checkpoint", "'", tracker,
             "' should hold a step number, it holds '", value, "'");
  const std::string dir = global_step_dir(default_local_dir, parse_step(value, tracker));
  VERL_CHECK(fs::is_directory(dir), "checkpoint", "'", tracker, "' names step ", value, " but '", dir,
             "' does not exist");
  return dir;
}

std::optional<std::string> resolve_resume_path(const std::string& resume_mode, const std::string& default_local_dir,
                                               const std::optional<std::string>& resume_from_path) {
  if (resume_mode == "disable") return std::nullopt;
  if (resume_mode == "auto") return find_latest_checkpoint(default_local_dir);
  VERL_CHECK(resume_mode == "resume_path", "checkpoint", "trainer.resume_mode is '", resume_mode,
             "'; expected auto, disable or resume_path");
  VERL_CHECK(resume_from_path.has_value(), "checkpoint",
             "trainer.resume_mode=resume_path needs trainer.resume_from_path");
  global_step_from_path(*resume_from_path);  // must name a global_step_N folder
  VERL_CHECK(fs::is_directory(*resume_from_path), "checkpoint", "trainer.resume_from_path '", *resume_from_path,
             "' does not exist");
  return *resume_from_path;
}

void write_latest_tracker(const std::string& default_local_dir, int64_t step) {
  write_file_atomic(latest_tracker_path(default_local_dir), std::to_string(step));
}

std::vector<std::string> rotate_checkpoints(const std::string& default_local_dir, const std::string& role,
                                            std::optional<int64_t> keep) {
  std::vector<std::string> deleted;
  if (!keep || *keep <= 0 || !fs::is_directory(default_local_dir)) return deleted;
  std::vector<std::pair<int64_t, fs::path>> steps;
  static const std::regex name(R"(global_step_([0-9]+))");
  for (const auto& entry : fs::directory_iterator(default_local_dir)) {
    std::smatch match;
    const std::string base = entry.path().filename().string();
    if (entry.is_directory() && std::regex_match(base, match, name) && fs::is_directory(entry.path() / role)) {
      steps.emplace_back(parse_step(match[1].str(), entry.path().string()), entry.path());
    }
  }
  std::sort(steps.begin(), steps.end());
  const int64_t excess = static_cast<int64_t>(steps.size()) - *keep;
  for (int64_t i = 0; i < excess; ++i) {
    const fs::path role_dir = steps[static_cast<size_t>(i)].second / role;
    fs::remove_all(role_dir);
    deleted.push_back(role_dir.string());
    std::error_code ec;
    if (fs::is_empty(steps[static_cast<size_t>(i)].second, ec)) fs::remove(steps[static_cast<size_t>(i)].second, ec);
  }
  return deleted;
}

}  // namespace verl::trainer
