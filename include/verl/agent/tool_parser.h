// Tool calls in the policy's text, as verl's agent loop reads them (verl/experimental/agent_loop/tool_parser.py):
// `actor_rollout_ref.rollout.multi_turn.format`. Only "hermes" is implemented: `<tool_call>{"name": ...,
// "arguments": {...}}</tool_call>` blocks, anywhere in the turn, each a JSON object; the content is the text with
// the blocks removed. A block that is not such JSON is skipped (counted in `malformed`), as verl logs and skips it.
// Any other format is a one-line error naming the key and the formats implemented.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::agent {

struct FunctionCall {
  std::string name;
  // The "arguments" value as the model wrote it (an object normally; verl passes any JSON value on).
  nlohmann::ordered_json arguments;
};

struct ParsedTurn {
  std::string content;              // the turn's text without the tool-call blocks
  std::vector<FunctionCall> calls;  // in order of appearance
  int64_t malformed = 0;            // blocks that were not {"name": str, "arguments": ...} JSON
};

class ToolParser {
 public:
  virtual ~ToolParser() = default;
  // `format`: multi_turn.format. An error naming the key for formats not implemented.
  static std::unique_ptr<ToolParser> create(const std::string& format);
  // `text`: the decoded turn (special tokens kept, as verl decodes it).
  virtual ParsedTurn parse(const std::string& text) const = 0;
};

}  // namespace verl::agent
