// Every tool-call format of verl 0.9.1's registry (agent/tool_parser.h) against verl's own parsers
// (tests/oracle/tool_parsers_oracle.py runs verl's ToolParser classes): hand-written turns in each format and 400
// generated texts per format that join its tags, whole and broken calls, values of every type its conversions meet
// and Unicode whitespace. The content, each call's name, arguments (types, key order, NaN / inf included) and
// tool_call_id, and the stop tokens must be verl's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include <fstream>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/agent/tool_parser.h"

namespace verl::test {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const std::string kToolParsersOracle = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/oracle/tool_parsers_oracle.py";

// The oracle's normalization: non-finite floats as {"$nonfinite": Python's repr}.
ordered_json normalized_arguments(const ordered_json& value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    const double v = value.get<double>();
    return {{"$nonfinite", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"}};
  }
  if (value.is_object()) {
    ordered_json out = ordered_json::object();
    for (const auto& item : value.items()) out[item.key()] = normalized_arguments(item.value());
    return out;
  }
  if (value.is_array()) {
    ordered_json out = ordered_json::array();
    for (const auto& item : value) out.push_back(normalized_arguments(item));
    return out;
  }
  return value;
}

TEST(ToolParsersOracle, EveryFormatEqualsVerl) {
  const std::string work = make_temp_dir("tool_parsers_oracle");
  CommandResult r = run_command(test_python() + "'" + kToolParsersOracle + "' cases '" + work + "/cases.jsonl' 7 400");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  std::vector<ordered_json> rows;  // ordered: the arguments' key order is compared
  std::ifstream lines(work + "/cases.jsonl");
  for (std::string line; std::getline(lines, line);) rows.push_back(ordered_json::parse(line));
  ASSERT_GT(rows.size(), 9u * 400);
  std::map<std::string, size_t> calls_seen, failures;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ordered_json& row = rows[i];
    const std::string format = row["format"].get<std::string>();
    const std::string text = row["text"].get<std::string>();
    const auto parser = agent::ToolParser::create(format, row["pad_token"].get<std::string>());
    const agent::ParsedTurn turn = parser->parse(text, row["tools"]);
    const std::string key = format + " case " + std::to_string(i) + ": " + json(text).dump();
    // Every difference of the case, reported together (one failure per case).
    std::string diff;
    if (turn.content != row["content"].get<std::string>()) diff += "\n content: ours " + json(turn.content).dump();
    if (parser->stop_tokens() != row["stop_tokens"].get<std::vector<std::string>>()) diff += "\n stop tokens differ";
    if (turn.calls.size() != row["calls"].size()) diff += "\n " + std::to_string(turn.calls.size()) + " calls";
    for (size_t c = 0; c < std::min(turn.calls.size(), row["calls"].size()); ++c) {
      const ordered_json& expected = row["calls"][c];
      const agent::FunctionCall& call = turn.calls[c];
      const std::string at = "\n call " + std::to_string(c) + ": ";
      if (call.name != expected["name"].get<std::string>()) diff += at + "name " + call.name;
      const std::string id =
          expected["tool_call_id"].is_null() ? "<none>" : expected["tool_call_id"].get<std::string>();
      if (call.tool_call_id.value_or("<none>") != id)
        diff += at + "tool_call_id " + call.tool_call_id.value_or("<none>");
      if (expected.contains("not_json")) {
        if (!call.arguments_not_json || call.arguments != expected["arguments"]) diff += at + call.arguments.dump();
      } else if (call.arguments_not_json || normalized_arguments(call.arguments).dump() != expected["value"].dump()) {
        // dump() tells 3 from 3.0 and keeps key order.
        diff += at + "arguments " + normalized_arguments(call.arguments).dump();
      }
      // The string verl hands on (its json.dumps, or gpt-oss's text): what the tool step reads.
      const std::string text = agent::verl_arguments_text(call);
      if (text != expected["arguments"].get<std::string>()) diff += at + "arguments text " + json(text).dump();
      ++calls_seen[format];
    }
    if (!diff.empty()) {
      ++failures[format];
      ADD_FAILURE() << key << diff << "\n verl: " << row["content"].dump() << " " << row["calls"].dump();
    }
  }
  for (const auto& format : agent::ToolParser::formats()) {
    EXPECT_GE(calls_seen[format], 40u) << format << ": too few calls among the cases to say much";
    EXPECT_EQ(failures[format], 0u) << format;
  }
}

}  // namespace
}  // namespace verl::test
