// Test helper: compare two JSON Lines texts row by row as parsed JSON (key order included; 1 and 1.0 equal).
#pragma once

#include <string>

namespace verl::test {

// Empty when equal; otherwise a message naming the first differing row and both lines.
std::string compare_json_lines(const std::string& actual, const std::string& expected);

}  // namespace verl::test
