// chatml_tools_template(): tools listed in the system turn, assistant tool calls and grouped tool responses in
// Qwen 2.5's hermes layout, verl's synthetic messages tolerated; the expected texts are written out by hand.
// Also the non-special added tokens of the tokenizer builder (<tool_call> kept by decode(skip_special_tokens)).
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace verl::test {
namespace {

using nlohmann::ordered_json;

const char* const kSchema =
    R"({"type": "function", "function": {"name": "add", "description": "Adds.", "parameters": {"type": "object", )"
    R"("properties": {"a": {"type": "integer"}}, "required": ["a"]}}})";

std::string chatml_tools_template_render(const ordered_json& messages, const ordered_json& tools,
                                         bool add_generation_prompt) {
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  return tokenizer::render_chat_template(tokenizer::chatml_tools_template(), inputs, ordered_json::object());
}

ordered_json tools() { return ordered_json::array({ordered_json::parse(kSchema)}); }

const std::string kListing =
    std::string("Tools you can call:\n<tools>\n") + kSchema +
    "\n</tools>\nTo call one, reply with:\n<tool_call>\n{\"name\": <name>, \"arguments\": <args-json>}\n</tool_call>";

TEST(ChatMLToolsTemplate, ListsToolsInTheSystemTurn) {
  const ordered_json messages = ordered_json::parse(R"([{"role": "system", "content": "Be brief."},
                                                        {"role": "user", "content": "1+2?"}])");
  EXPECT_EQ(chatml_tools_template_render(messages, tools(), true),
            "<|im_start|>system\nBe brief.\n\n" + kListing +
                "<|im_end|>\n<|im_start|>user\n1+2?<|im_end|>\n<|im_start|>assistant\n");
  // No system message: a system turn of the listing alone.
  EXPECT_EQ(chatml_tools_template_render(ordered_json::array({messages[1]}), tools(), false),
            "<|im_start|>system\n" + kListing + "<|im_end|>\n<|im_start|>user\n1+2?<|im_end|>\n");
  EXPECT_EQ(tokenizer::chatml_tools_listing(tools()), kListing);
  // Without tools it is chatml_template().
  for (bool gen : {false, true}) {
    tokenizer::ChatTemplateInputs inputs;
    inputs.messages = messages;
    inputs.add_generation_prompt = gen;
    EXPECT_EQ(chatml_tools_template_render(messages, nullptr, gen),
              tokenizer::render_chat_template(tokenizer::chatml_template(), inputs, ordered_json::object()));
  }
}

TEST(ChatMLToolsTemplate, ToolCallsAndGroupedToolResponses) {
  const ordered_json messages = ordered_json::parse(R"([
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": "x"}}},
      {"type": "function", "function": {"name": "add", "arguments": "{\"a\":2}"}}]},
    {"role": "tool", "content": "3"},
    {"role": "tool", "content": "4"},
    {"role": "assistant", "content": "Sum.", "tool_calls": [{"name": "add", "arguments": {}}]},
    {"role": "tool", "content": "0"},
    {"role": "assistant", "content": "#### 7"}])");
  const std::string expected =
      "<|im_start|>system\n" + kListing +
      "<|im_end|>\n"
      "<|im_start|>user\nq<|im_end|>\n"
      "<|im_start|>assistant\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": \"x\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\":2}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n3\n</tool_response>\n<tool_response>\n4\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\nSum.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n0\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n#### 7<|im_end|>\n";
  EXPECT_EQ(chatml_tools_template_render(messages, tools(), false), expected);
}

// verl's Continuous Token builder renders a tool group after a synthetic system / user / assistant prefix (the
// assistant with content "", reasoning_content and tool calls with arguments {}): the full render must extend
// the prefix render, and the suffix is the tool turn plus the generation prompt.
TEST(ChatMLToolsTemplate, VerlsSyntheticPrefixRendersAppendOnly) {
  const ordered_json prefix = ordered_json::parse(R"([
    {"role": "system", "content": "continuous token synthetic system"},
    {"role": "user", "content": "continuous token synthetic user"},
    {"role": "assistant", "content": "", "reasoning_content": "r", "tool_calls": [
      {"id": "call_0", "type": "function", "function": {"name": "add", "arguments": {}}}]}])");
  ordered_json full = prefix;
  full.push_back({{"role", "tool"}, {"content", "413"}});
  const std::string head = chatml_tools_template_render(prefix, tools(), false);
  const std::string whole = chatml_tools_template_render(full, tools(), true);
  ASSERT_EQ(whole.compare(0, head.size(), head), 0) << head << "\n---\n" << whole;
  EXPECT_EQ(whole.substr(head.size()),
            "<|im_start|>user\n<tool_response>\n413\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(head.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"
                      "<|im_end|>\n"),
            std::string::npos)
      << head;
}

TEST(ChatMLToolsTemplate, PythonJsonDumps) {
  EXPECT_EQ(tokenizer::python_json_dumps(ordered_json::parse(R"({"b": [1, -2.5, true, null], "a": {"x": "q\"\n"}})")),
            "{\"b\": [1, -2.5, true, null], \"a\": {\"x\": \"q\\\"\\n\"}}");
  EXPECT_EQ(tokenizer::python_json_dumps(ordered_json::parse(R"({"k": "caf\u00e9", "e": [], "o": {}})")),
            "{\"k\": \"caf\xc3\xa9\", \"e\": [], \"o\": {}}");
}

// The arithmetic_tool SFT rows: the prompt (tool listing inside the system message) renders without tools as the
// RL prompt renders with tools, and prompt + transcript + "<|im_end|>\n" is the template over the conversation
// with the tool call and the tool's answer.
TEST(ChatMLToolsTemplate, ArithmeticToolSftRowsAreTheTemplatesConversation) {
  data::ArithmeticToolOptions options;
  options.train_size = 2;
  options.test_size = 2;
  options.sft_train_size = 40;
  options.sft_val_size = 2;
  options.tool_fraction = 0.5;  // both kinds of response among 40 rows
  data::ArithmeticToolSplits splits = data::arithmetic_tool_splits(options);
  const ordered_json schemas = ordered_json::array({data::calculator_tool_schema()});
  int with_tool = 0;
  for (const auto& row : splits.sft_train.rows) {
    ordered_json sft_messages = ordered_json::array();
    for (const auto& m : row.find("prompt")->as_list()) {
      sft_messages.push_back({{"role", m.find("role")->as_string()}, {"content", m.find("content")->as_string()}});
    }
    const std::string question = row.find("extra_info")->find("question")->as_string();
    const std::string expression = question.substr(0, question.size() - 1);
    ordered_json rl_messages = ordered_json::array(
        {{{"role", "system"}, {"content", "Use the calculator for arithmetic."}},
         {{"role", "user"}, {"content", question + "\nAnswer after ####."}}});
    const std::string prompt = chatml_tools_template_render(sft_messages, nullptr, true);
    ASSERT_EQ(prompt, chatml_tools_template_render(rl_messages, schemas, true));
    const std::string response = row.find("response")->as_string();
    const std::string truth = row.find("reward_model")->find("ground_truth")->as_string();
    if (!row.find("extra_info")->find("uses_tool")->as_bool()) {
      EXPECT_EQ(response, "#### " + truth);
      continue;
    }
    ++with_tool;
    ordered_json conversation = rl_messages;
    conversation.push_back({{"role", "assistant"},
                            {"content", ""},
                            {"tool_calls", ordered_json::array({{{"type", "function"},
                                                                 {"function",
                                                                  {{"name", "calculator"},
                                                                   {"arguments", {{"expression", expression}}}}}}})}});
    conversation.push_back({{"role", "tool"}, {"content", truth}});
    conversation.push_back({{"role", "assistant"}, {"content", "#### " + truth}});
    EXPECT_EQ(prompt + response + "<|im_end|>\n", chatml_tools_template_render(conversation, schemas, false));
  }
  EXPECT_GT(with_tool, 5);
  EXPECT_LT(with_tool, 30);
}

TEST(TokenizerBuilder, NonSpecialAddedTokensSitBelowTheSpecialOnes) {
  const std::string dir = make_temp_dir("tokenizer_builder_added");
  tokenizer::ByteLevelBPESpec spec = demo_like_tokenizer_spec();
  spec.added_tokens = {"<tool_call>", "</tool_call>"};
  spec.chat_template = tokenizer::chatml_tools_template();
  const int64_t vocab = tokenizer::write_byte_level_bpe_folder(dir, spec);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(dir);
  EXPECT_EQ(*tok.token_to_id("<tool_call>"), vocab - 5);
  EXPECT_EQ(*tok.token_to_id("</tool_call>"), vocab - 4);
  EXPECT_EQ(*tok.token_to_id("<|im_start|>"), vocab - 3);
  EXPECT_EQ(*tok.pad_token_id(), vocab - 1);
  const std::string text = "<tool_call>\n{}\n</tool_call><|im_end|>";
  const std::vector<int32_t> ids = tok.encode(text, false);
  ASSERT_EQ(ids.size(), 7u);  // <tool_call> \n { } \n </tool_call> <|im_end|>
  EXPECT_EQ(ids.front(), vocab - 5);
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "<tool_call>\n{}\n</tool_call>");
  spec.added_tokens.push_back("<|im_end|>");
  EXPECT_THROW(tokenizer::write_byte_level_bpe_folder(make_temp_dir("tokenizer_builder_added_bad"), spec), Error);
}

}  // namespace
}  // namespace verl::test
