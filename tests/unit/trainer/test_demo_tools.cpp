// `verl demo --tools` pieces: the built-in calculator files are examples/multi_turn's, the C++ calculator gives the
// tool's values, the demo tokenizer makes the hermes tags, the tool listing and numbers below 1000 compact, and
// the RL keys the demo sets resolve through verl's config.
#include <gtest/gtest.h>

#include <iostream>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/config/config_loader.h"
#include "verl/config/config_node.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/data/sft_dataset.h"
#include "verl/io/value.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/trainer/demo.h"
#include "verl/trainer/demo_tools.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::test {
namespace {

const std::string kExamples = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/examples/multi_turn";

TEST(DemoTools, BuiltInToolFilesAreTheExamples) {
  EXPECT_EQ(trainer::demo_calculator_tool_py(), read_file(kExamples + "/calculator_tool.py"));
  EXPECT_EQ(trainer::demo_calculator_tool_yaml(), read_file(kExamples + "/calculator_tool_config.yaml"));
}

TEST(DemoTools, CalculatorExpressions) {
  EXPECT_EQ(trainer::evaluate_calculator_expression("12*34+5"), 413);
  EXPECT_EQ(trainer::evaluate_calculator_expression(" (1 - 3) * -4 "), 8);
  EXPECT_EQ(trainer::evaluate_calculator_expression("2+3*4"), 14);
  EXPECT_EQ(trainer::evaluate_calculator_expression("10-2-3"), 5);
  EXPECT_EQ(trainer::evaluate_calculator_expression("--3"), 3);
  for (const char* bad : {"", "2**10", "1/2", "12*", "(1", "1)", "x", "1e3", "1000000000000*1000000000"}) {
    EXPECT_FALSE(trainer::evaluate_calculator_expression(bad).has_value()) << bad;
  }
  EXPECT_FALSE(trainer::evaluate_calculator_expression(std::string(201, '1')).has_value());
}

TEST(DemoTools, TokenizerMakesToolTextCompact) {
  const std::string dir = make_temp_dir("demo_tools_tokenizer");
  const int64_t vocab = tokenizer::write_byte_level_bpe_folder(dir + "/tools", trainer::demo_tools_tokenizer_spec());
  tokenizer::write_byte_level_bpe_folder(dir + "/plain", demo_like_tokenizer_spec());
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(dir + "/tools");
  tokenizer::Tokenizer plain = tokenizer::Tokenizer::from_folder(dir + "/plain");
  EXPECT_EQ(*tok.token_to_id("<|im_start|>"), vocab - 3);  // bos / eos / pad on top, as `verl model init` expects
  EXPECT_EQ(*tok.eos_token_id(), vocab - 2);
  for (const char* tag : {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", " calculator",
                          "expression", "\":", " {\"", "Answer"}) {
    EXPECT_EQ(tok.encode(tag, false).size(), 1u) << tag;
  }
  EXPECT_EQ(tok.encode("29*29+99", false).size(), 5u);  // numbers below 1000 are single tokens
  // The answer's number is the tool response's token: "####", " ", "940".
  const std::vector<int32_t> answer = tok.encode("#### 940", false);
  ASSERT_EQ(answer.size(), 3u);
  EXPECT_EQ(answer[2], tok.encode("940", false).at(0));
  EXPECT_EQ(tok.encode("1000", false).size(), 2u);
  // The longest problem: prompt and the whole tool transcript fit the demo's RL lengths (160 / 64), the listing's
  // words merged (one token per pre-tokenizer chunk, about 3.5 characters, instead of one per character).
  data::ArithmeticToolProblem p;
  p.a = 29;
  p.b = 29;
  p.c = 99;
  io::Value prompt(io::List{
      io::Value(io::Struct{{"role", io::Value("system")},
                           {"content", io::Value(data::arithmetic_tool_system_prompt() + "\n\n" +
                                                 tokenizer::chatml_tools_listing(nlohmann::ordered_json::array(
                                                     {data::calculator_tool_schema()})))}}),
      io::Value(io::Struct{{"role", io::Value("user")}, {"content", io::Value(data::arithmetic_tool_user_text(p))}})});
  const size_t prompt_tokens = data::sft_prompt_ids(tok, prompt).size();
  const size_t plain_tokens = data::sft_prompt_ids(plain, prompt).size();
  const size_t response_tokens = data::sft_response_ids(tok, data::arithmetic_tool_transcript(p)).size();
  std::cout << "[demo tools] prompt " << prompt_tokens << " tokens (" << plain_tokens
            << " with the arithmetic demo's tokenizer), tool transcript " << response_tokens << " tokens, vocabulary "
            << vocab << "\n";
  EXPECT_LE(prompt_tokens, 160u);
  EXPECT_LE(response_tokens, 64u);
  EXPECT_LT(prompt_tokens * 3, plain_tokens);
}

TEST(DemoTools, RlOverridesResolve) {
  config::Node root = config::default_config_tree();
  config::merge_config_file(root, config::parse_yaml(trainer::demo_rl_config_yaml("grpo"), "grpo"), "grpo");
  for (const auto& text : trainer::demo_tools_rl_overrides("/tmp/tools/calculator_tool_config.yaml")) {
    config::apply_override(root, config::parse_override(text));
  }
  const config::Node resolved = config::resolve_interpolations(root);
  EXPECT_NO_THROW(config::parse_ppo_config(resolved));
  const std::string mt = "actor_rollout_ref.rollout.multi_turn.";
  EXPECT_TRUE(config::find_path(resolved, mt + "enable")->as_bool());
  EXPECT_EQ(config::find_path(resolved, mt + "tool_config_path")->as_string(), "/tmp/tools/calculator_tool_config.yaml");
  EXPECT_EQ(config::find_path(resolved, mt + "format")->as_string(), "hermes");
  EXPECT_EQ(config::find_path(resolved, mt + "max_assistant_turns")->as_int(), 2);
  EXPECT_TRUE(config::find_path(resolved, "data.return_raw_chat")->as_bool());
}

}  // namespace
}  // namespace verl::test
