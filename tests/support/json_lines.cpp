#include "support/json_lines.h"

#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "support/run_command.h"

namespace verl::test {

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}
}  // namespace

std::string compare_json_lines(const std::string& actual, const std::string& expected) {
  std::vector<std::string> a = lines_of(actual), e = lines_of(expected);
  if (a.size() != e.size()) {
    return "row counts differ: " + std::to_string(a.size()) + " vs expected " + std::to_string(e.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    nlohmann::ordered_json ja, je;
    try {
      ja = nlohmann::ordered_json::parse(a[i]);
      je = nlohmann::ordered_json::parse(e[i]);
    } catch (const std::exception& ex) {
      return "row " + std::to_string(i) + ": unparsable JSON: " + ex.what();
    }
    if (ja != je) {
      // Point at the first differing field (JSON Patch paths of the difference).
      nlohmann::json patch = nlohmann::json::diff(nlohmann::json::parse(a[i]), nlohmann::json::parse(e[i]));
      std::string where = patch.empty() ? "(key order)" : patch.dump().substr(0, 600);
      return "row " + std::to_string(i) + " differs at " + where + "\n  actual:   " + a[i].substr(0, 600) +
             "\n  expected: " + e[i].substr(0, 600);
    }
  }
  return "";
}

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

}  // namespace verl::test
