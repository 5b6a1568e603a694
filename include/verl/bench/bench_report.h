// Output of the `verl bench` commands: aligned text tables for people, JSON for tools. A JSON file given
// with --json gets one record per run appended (JSON Lines), the file rewritten atomically so an
// interrupted run never leaves a half-written line.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::bench {

// Columns padded to their widest cell; the first row is the header, followed by a rule.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

// "12.3", "0.456", "1.23e+04": three significant digits, fixed notation where it is short.
std::string format_number(double value);
// "12.3 GFLOP/s", "4.56 GB/s": SI prefix (k, M, G, T) and unit.
std::string format_si(double value, const std::string& unit);

// Appends `record` as one line to the JSON Lines file `path` (created when missing), atomically.
void append_json_record(const std::string& path, const nlohmann::json& record);

// Seconds since the epoch as an ISO-8601 UTC timestamp, for records.
std::string utc_timestamp();

}  // namespace verl::bench
