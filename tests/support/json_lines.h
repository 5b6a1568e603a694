// Test helpers for JSON Lines: compare two texts row by row as parsed JSON (key order included; 1 and 1.0
// equal), and read a file's rows.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace verl::test {

// Empty when equal; otherwise a message naming the first differing row and both lines.
std::string compare_json_lines(const std::string& actual, const std::string& expected);

// The rows of a JSON Lines file (empty lines skipped).
std::vector<nlohmann::json> read_json_lines(const std::string& path);

}  // namespace verl::test
