// A step's metrics line kept in its checkpoint's data.json ("step_metrics": each value as the exact decimal text
// of format_json_number), so that a run killed between the checkpoint commit and that line's write logs it at
// resume: metrics.jsonl then has every step once, no hole and no repeat. Shared by the PPO and SFT trainers:
//
//   state["step_metrics"] = step_metrics_record(line);                        // at save, before the commit
//   if (auto line = unlogged_step_metrics(state, path, loggers, run_dir, step)) tracking.log(*line, step);
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace verl::trainer {

nlohmann::json step_metrics_record(const std::map<std::string, double>& line);

// The line `state` (data.json, read from `state_path`) keeps for `step` when `run_dir`/metrics.jsonl lacks that
// step; nullopt when the state keeps none, the line was written, or `loggers` has no jsonl backend (metrics.jsonl
// is the record this is checked against). A malformed "step_metrics" is an error naming state_path and the key.
std::optional<std::map<std::string, double>> unlogged_step_metrics(const nlohmann::json& state,
                                                                   const std::string& state_path,
                                                                   const std::vector<std::string>& loggers,
                                                                   const std::string& run_dir, int64_t step);

}  // namespace verl::trainer
