// verl's HermesToolParser (verl/experimental/agent_loop/tool_parser.py) on hand-written turns; the same parser is
// compared with verl's own on shared texts in tests/oracle/test_conversation_tokens_oracle.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "verl/agent/tool_parser.h"
#include "verl/common/error.h"

namespace verl::test {
namespace {

using agent::ParsedTurn;
using agent::ToolParser;
using nlohmann::ordered_json;

ParsedTurn hermes(const std::string& text) { return ToolParser::create("hermes")->parse(text); }

TEST(HermesToolParser, NoCallKeepsTheText) {
  const ParsedTurn turn = hermes("The answer is 4.<|im_end|>");
  EXPECT_EQ(turn.content, "The answer is 4.<|im_end|>");
  EXPECT_TRUE(turn.calls.empty());
  EXPECT_EQ(turn.malformed, 0);
}

TEST(HermesToolParser, OneCall) {
  const ParsedTurn turn =
      hermes("<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"4\"}}\n</tool_call>");
  ASSERT_EQ(turn.calls.size(), 1u);
  EXPECT_EQ(turn.calls[0].name, "calc_gsm8k_reward");
  EXPECT_EQ(turn.calls[0].arguments, ordered_json({{"answer", "4"}}));
  EXPECT_EQ(turn.content, "");
  EXPECT_EQ(turn.malformed, 0);
}

TEST(HermesToolParser, TwoCallsWithTextAroundKeepOrderAndKeyOrder) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"z\": 1, \"a\": [1, 2]}}\n</tool_call>\n"
      "and\n<tool_call>{\"arguments\": {}, \"name\": \"a\"}</tool_call> done<|im_end|>";
  const ParsedTurn turn = hermes(text);
  ASSERT_EQ(turn.calls.size(), 2u);
  EXPECT_EQ(turn.calls[0].name, "b");
  EXPECT_EQ(turn.calls[0].arguments.dump(), "{\"z\":1,\"a\":[1,2]}");  // the model's key order
  EXPECT_EQ(turn.calls[1].name, "a");
  EXPECT_EQ(turn.calls[1].arguments, ordered_json::object());
  EXPECT_EQ(turn.content, "Let me check.\n\nand\n done<|im_end|>");
}

TEST(HermesToolParser, MalformedBlocksAreSkippedAndCounted) {
  const std::string text =
      "<tool_call>{\"name\": \"x\", \"arguments\": {</tool_call>"           // not JSON
      "<tool_call>{\"name\": \"y\"}</tool_call>"                             // no arguments
      "<tool_call>{\"arguments\": {}}</tool_call>"                           // no name
      "<tool_call>[\"name\", \"arguments\"]</tool_call>"                     // not an object
      "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>"              // name not a string
      "<tool_call>{\"name\": \"ok\", \"arguments\": \"raw\"}</tool_call>";   // any arguments value
  const ParsedTurn turn = hermes(text);
  EXPECT_EQ(turn.malformed, 5);
  ASSERT_EQ(turn.calls.size(), 1u);
  EXPECT_EQ(turn.calls[0].name, "ok");
  EXPECT_EQ(turn.calls[0].arguments, "raw");
  EXPECT_EQ(turn.content, "");  // malformed blocks are removed from the content too
}

TEST(HermesToolParser, BracesAndTagsInsideStrings) {
  // The regex is non-greedy: the first </tool_call> closes the block, even inside a JSON string.
  const ParsedTurn nested = hermes("<tool_call>{\"name\": \"f\", \"arguments\": {\"code\": \"if (a) { b(); }\"}}"
                                   "</tool_call>");
  ASSERT_EQ(nested.calls.size(), 1u);
  EXPECT_EQ(nested.calls[0].arguments["code"], "if (a) { b(); }");
  const ParsedTurn cut = hermes("<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>\"}}</tool_call>");
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(cut.malformed, 1);
  EXPECT_EQ(cut.content, "\"}}</tool_call>");
}

TEST(HermesToolParser, UnicodeAndEscapes) {
  const ParsedTurn turn =
      hermes("Résumé ✓ <tool_call>{\"name\": \"翻译\", \"arguments\": {\"text\": \"\\u00e9t\\u00e9 \U0001F600\"}}"
             "</tool_call> 終わり");
  ASSERT_EQ(turn.calls.size(), 1u);
  EXPECT_EQ(turn.calls[0].name, "翻译");
  EXPECT_EQ(turn.calls[0].arguments["text"], "été \U0001F600");
  EXPECT_EQ(turn.content, "Résumé ✓  終わり");
}

TEST(HermesToolParser, StartTagWithoutEndTagIsText) {
  const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}";
  const ParsedTurn turn = hermes(text);
  EXPECT_EQ(turn.content, text);
  EXPECT_TRUE(turn.calls.empty());
  EXPECT_EQ(turn.malformed, 0);
  // Both tags present but no start before an end: nothing matches, nothing is removed.
  EXPECT_EQ(hermes("</tool_call> x <tool_call>").content, "</tool_call> x <tool_call>");
  // An unclosed block after a closed one stays in the content.
  const ParsedTurn tail = hermes("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{");
  EXPECT_EQ(tail.calls.size(), 1u);
  EXPECT_EQ(tail.content, "<tool_call>{");
}

TEST(HermesToolParser, PythonJsonExtras) {
  // json.loads reads NaN / Infinity / -Infinity and ignores whitespace around the value.
  const ParsedTurn turn =
      hermes("<tool_call> \n\t{\"name\": \"f\", \"arguments\": {\"a\": NaN, \"b\": -Infinity, \"c\": \"NaN\"}}\r\n"
             "</tool_call>");
  ASSERT_EQ(turn.calls.size(), 1u);
  EXPECT_TRUE(std::isnan(turn.calls[0].arguments["a"].get<double>()));
  EXPECT_EQ(turn.calls[0].arguments["b"].get<double>(), -INFINITY);
  EXPECT_EQ(turn.calls[0].arguments["c"], "NaN");
  // Trailing text after the value is a decode error.
  EXPECT_EQ(hermes("<tool_call>{\"name\": \"f\", \"arguments\": {}} x</tool_call>").malformed, 1);
}

TEST(HermesToolParser, UnknownFormatsAreAnError) {
  try {
    ToolParser::create("qwen");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("actor_rollout_ref.rollout.multi_turn.format is 'qwen'"), std::string::npos) << what;
    EXPECT_NE(what.find("hermes, gpt-oss, qwen3_coder, glm, seed, minimax, kimi, deepseek_v4, gemma4"),
              std::string::npos) << what;
  }
}

}  // namespace
}  // namespace verl::test
