#include "verl/trainer/step_metrics_record.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "verl/common/error.h"
#include "verl/trainer/tracking.h"

namespace verl::trainer {

namespace fs = std::filesystem;

nlohmann::json step_metrics_record(const std::map<std::string, double>& line) {
  nlohmann::json record = nlohmann::json::object();
  for (const auto& [key, value] : line) record[key] = format_json_number(value);  // NaN kept, exact
  return record;
}

std::optional<std::map<std::string, double>> unlogged_step_metrics(const nlohmann::json& state,
                                                                   const std::string& state_path,
                                                                   const std::vector<std::string>& loggers,
                                                                   const std::string& run_dir, int64_t step) {
  if (!state.is_object() || !state.contains("step_metrics") ||
      std::find(loggers.begin(), loggers.end(), "jsonl") == loggers.end()) {
    return std::nullopt;
  }
  const fs::path jsonl = fs::path(run_dir) / "metrics.jsonl";
  if (fs::exists(jsonl)) {
    for (const auto& [key, by_step] : read_metrics_jsonl(jsonl.string())) {
      if (by_step.count(step) > 0) return std::nullopt;  // logged before the kill
    }
  }
  const nlohmann::json& line = state["step_metrics"];
  VERL_CHECK(line.is_object(), "checkpoint", "'", state_path, "': step_metrics must be an object");
  std::map<std::string, double> metrics;
  for (const auto& [key, value] : line.items()) {
    VERL_CHECK(value.is_string(), "checkpoint", "'", state_path, "': step_metrics.", key, " must be a string");
    const std::string& text = value.get_ref<const std::string&>();
    char* end = nullptr;
    metrics[key] = std::strtod(text.c_str(), &end);
    VERL_CHECK(end != text.c_str() && *end == '\0', "checkpoint", "'", state_path, "': step_metrics.", key,
               " is '", text, "', not a number");
  }
  return metrics;
}

}  // namespace verl::trainer
