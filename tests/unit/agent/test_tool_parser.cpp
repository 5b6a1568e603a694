// verl's tool parsers (verl/experimental/agent_loop/tool_parser.py) on hand-written turns, the expected results read
// off verl's code; every format is compared with verl's own parsers in tests/oracle/test_tool_parsers_oracle.cpp.
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
              std::string::npos)
        << what;
  }
}

const ordered_json kWeatherTools = ordered_json::parse(R"json([{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
  "temp": {"type": "number"}, "metric": {"type": "boolean"}, "tags": {"type": "array"}},
  "required": ["city"]}}}])json");

ParsedTurn parse_as(const std::string& format, const std::string& text, const std::string& pad = "") {
  return ToolParser::create(format, pad)->parse(text, kWeatherTools);
}

TEST(ToolParserFormats, Qwen3CoderTypesValuesByTheToolSchema) {
  const ParsedTurn turn =
      parse_as("qwen3_coder",
               "Checking.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
               "<parameter=days>\n3\n</parameter>\n<parameter=temp>\n2.0\n</parameter>\n"
               "<parameter=metric>\nTrue\n</parameter>\n<parameter=tags>\n('a', 1)\n</parameter>\n"
               "<parameter=note>\nnull\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(turn.content, "Checking.\n");
  ASSERT_EQ(turn.calls.size(), 1u);
  EXPECT_EQ(turn.calls[0].name, "get_weather");
  // int("3"); float("2.0") is integral, so int; "True".lower() == "true"; ast.literal_eval of a tuple; null.
  EXPECT_EQ(turn.calls[0].arguments.dump(),
            R"({"city":"Paris","days":3,"temp":2,"metric":true,"tags":["a",1],"note":null})");
  // A set is not JSON: verl's json.dumps raises and the turn has no calls.
  const ParsedTurn set = parse_as("qwen3_coder", "<tool_call><function=get_weather><parameter=tags>{1}</parameter>");
  EXPECT_TRUE(set.calls.empty());
  EXPECT_EQ(set.content, "<tool_call><function=get_weather><parameter=tags>{1}</parameter>");
}

TEST(ToolParserFormats, GptOssDropsReasoningAndKeepsArgumentsUnchecked) {
  const ParsedTurn turn = parse_as(
      "gpt-oss",
      "<|channel|>analysis<|message|>Use the <|start|>assistant tool.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|><|start|>assistant"
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{oops<|call|>done<|pad|>",
      "<|pad|>");
  EXPECT_EQ(turn.content, "done");
  ASSERT_EQ(turn.calls.size(), 2u);
  EXPECT_EQ(turn.calls[0].arguments, (ordered_json{{"city", "Paris"}}));
  EXPECT_FALSE(turn.calls[0].arguments_not_json);
  EXPECT_EQ(turn.calls[1].arguments, "{oops");
  EXPECT_TRUE(turn.calls[1].arguments_not_json);
}

TEST(ToolParserFormats, GlmSeedAndMiniMaxReadJsonOrText) {
  const ParsedTurn glm = parse_as("glm",
                                  "<think>x</think>\nOk.<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                                  "<arg_value>Paris</arg_value>\n<arg_key>days</arg_key><arg_value> 3 "
                                  "</arg_value></tool_call>");
  EXPECT_EQ(glm.content, "\nOk.");
  ASSERT_EQ(glm.calls.size(), 1u);
  EXPECT_EQ(glm.calls[0].arguments.dump(), R"({"city":"Paris","days":3})");
  EXPECT_EQ(ToolParser::create("glm")->stop_tokens(), std::vector<std::string>{"<|observation|>"});

  const ParsedTurn seed = parse_as("seed",
                                   "<seed:tool_call>\n<function=get_weather>\n<parameter=city>[1]</parameter>"
                                   "</function></seed:tool_call>");
  ASSERT_EQ(seed.calls.size(), 1u);
  EXPECT_EQ(seed.calls[0].arguments.dump(), R"({"city":[1]})");

  const ParsedTurn minimax = parse_as("minimax",
                                      "A<minimax:tool_call><invoke name=\"get_weather\"><parameter name=\""
                                      "city\">Paris</parameter></invoke><invoke name=\"b\"></invoke>"
                                      "</minimax:tool_call>");
  EXPECT_EQ(minimax.content, "A");
  ASSERT_EQ(minimax.calls.size(), 2u);
  EXPECT_EQ(minimax.calls[1].name, "b");
  EXPECT_EQ(minimax.calls[1].arguments, ordered_json::object());
}

TEST(ToolParserFormats, KimiResolvesTheNameFromTheIdAndKeepsTheId) {
  const ParsedTurn turn = parse_as("kimi",
                                   "Hi<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
                                   "<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
                                   "<|tool_call_begin|>lookup:1<|tool_call_argument_begin|>{\"city\": 1}"
                                   "<|tool_call_end|><|tool_call_begin|>x:2<|tool_call_argument_begin|>[1]"
                                   "<|tool_call_end|><|tool_calls_section_end|>");
  EXPECT_EQ(turn.content, "Hi");
  ASSERT_EQ(turn.calls.size(), 3u);
  EXPECT_EQ(turn.calls[0].name, "get_weather");  // the only tool named inside the id
  EXPECT_EQ(turn.calls[0].tool_call_id, "functions.get_weather:0");
  EXPECT_EQ(turn.calls[1].name, "get_weather");                // the only tool whose required keys the arguments hold
  EXPECT_EQ(turn.calls[2].name, "x:2");                        // neither: the id
  EXPECT_EQ(turn.calls[2].arguments, ordered_json::object());  // not an object: {}
}

TEST(ToolParserFormats, DeepSeekV4AndGemma4) {
  const ParsedTurn ds = parse_as("deepseek_v4",
                                 "Think.</think>Look.\n\n<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
                                 "<｜DSML｜parameter name=\"city\" string=\"true\"> 3 </｜DSML｜parameter>\n"
                                 "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n"
                                 "</｜DSML｜invoke>\n</｜DSML｜tool_calls><｜end▁of▁sentence｜>");
  EXPECT_EQ(ds.content, "Look.");
  ASSERT_EQ(ds.calls.size(), 1u);
  EXPECT_EQ(ds.calls[0].arguments.dump(), R"({"city":" 3 ","days":3})");
  EXPECT_EQ(parse_as("deepseek_v4", "a</think>b</think>answer").content, "answer");

  const ParsedTurn gemma = parse_as("gemma4",
                                    "Sure.<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,temp:2.5,"
                                    "metric:TRUE,big:1e3,note:null,word: x }<tool_call|>");
  EXPECT_EQ(gemma.content, "Sure.");
  ASSERT_EQ(gemma.calls.size(), 1u);
  EXPECT_EQ(gemma.calls[0].arguments.dump(),
            R"({"city":"Paris, FR","days":3,"temp":2.5,"metric":true,"big":1000.0,"note":null,"word":"x"})");
  EXPECT_EQ(ToolParser::create("gemma4")->stop_tokens(), std::vector<std::string>{"<tool_call|>"});
}

}  // namespace
}  // namespace verl::test
