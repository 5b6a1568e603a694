// Tool calls in the policy's text, as verl 0.9.1's agent loop reads them (verl/experimental/agent_loop/
// tool_parser.py), picked by `actor_rollout_ref.rollout.multi_turn.format`; every parser of verl's registry:
//   hermes       <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen 2.5 / Qwen3, many others)
//   gpt-oss      harmony: <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
//                ARGS<|call|>; analysis (reasoning) messages are dropped first; ARGS are passed on unchecked
//   qwen3_coder  <tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call> (Qwen3-Coder,
//                Qwen3.5): values typed by the tool's schema (integer, number, boolean, object, ...)
//   glm          <tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call> (GLM-4.5+); stops at
//                <|observation|>
//   seed         <seed:tool_call><function=NAME><parameter=K>V</parameter></function></seed:tool_call>
//   minimax      <minimax:tool_call><invoke name="NAME"><parameter name="K">V</parameter></invoke>...
//   kimi         <|tool_calls_section_begin|><|tool_call_begin|>ID<|tool_call_argument_begin|>{...}
//                <|tool_call_end|>...; the id is kept as the call's tool_call_id; stops at <|im_end|>
//   deepseek_v4  <｜DSML｜tool_calls><｜DSML｜invoke name="NAME"><｜DSML｜parameter name="K" string="true|false">
//                V</｜DSML｜parameter>...; reasoning before </think> is not content
//   gemma4       <|tool_call>call:NAME{key:<|"|>text<|"|>,n:5}<tool_call|>; stops at <tool_call|>
// Each follows verl's regexes and conversions (Python's json.loads, str.strip, the `regex` package's \s and \w,
// int(), float() and, for qwen3_coder, ast.literal_eval: the last three through the embedded interpreter); checked
// against verl's own parsers (tests/oracle/test_tool_parsers_oracle.cpp). Known differences: integers past 64 bits
// become doubles, and a JSON string with a lone surrogate escape is refused. A call verl logs and skips is skipped
// here and counted in `malformed`. Any other format is a one-line error naming the key.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::agent {

struct FunctionCall {
  std::string name;
  // The arguments: the JSON value verl's `arguments` string holds (an object normally). Where that string is not
  // JSON (gpt-oss passes the model's text on unchecked), the text itself, as a JSON string, with
  // `arguments_not_json` set.
  nlohmann::ordered_json arguments;
  bool arguments_not_json = false;
  std::optional<std::string> raw_arguments;  // gpt-oss: the model's text, which verl hands on as is
  std::optional<std::string> tool_call_id;   // kimi: the id the model wrote (verl puts it in both messages)
};

struct ParsedTurn {
  std::string content;              // the text the assistant message keeps (the calls removed or cut off)
  std::vector<FunctionCall> calls;  // in order of appearance
  int64_t malformed = 0;            // calls verl logs and skips (hermes: blocks that are not {"name", "arguments"})
};

// verl's FunctionCall.arguments string: gpt-oss's raw text, else json.dumps(arguments, ensure_ascii=False) (through
// the embedded interpreter: Python's separators and float repr, NaN kept). The tool step json.loads this text.
std::string verl_arguments_text(const FunctionCall& call);

class ToolParser {
 public:
  virtual ~ToolParser() = default;
  // `format`: multi_turn.format. `pad_token`: the tokenizer's pad token text (verl's tokenizer falls back to the
  // eos token), which gpt-oss, deepseek_v4 and gemma4 remove from the text first. An error naming the key for an
  // unknown format.
  static std::unique_ptr<ToolParser> create(const std::string& format, const std::string& pad_token = "");
  // The formats, as verl's registry names them, and the same as "hermes, gpt-oss, ..." for messages.
  static const std::vector<std::string>& formats();
  static std::string formats_text();

  // `text`: the decoded turn, special tokens kept and its closing eos included, as verl decodes it. `tools`: the
  // OpenAI function schemas the sample sees (null or a list): qwen3_coder types values by them, kimi resolves a
  // call's name with them.
  virtual ParsedTurn parse(const std::string& text, const nlohmann::ordered_json& tools = nullptr) const = 0;
  // Tokens that end a turn besides eos (verl's stop_token_ids): the turn stops there so the calls can run.
  virtual std::vector<std::string> stop_tokens() const { return {}; }
  // verl's class name (the rollout trace's "<class>.extract_tool_calls" span).
  virtual std::string class_name() const = 0;
};

}  // namespace verl::agent
