// `verl demo --tools` against verl 0.9.1 (tests/oracle/calculator_tool_oracle.py): the calculator tool file and
// config load and run through verl's own tool registry, with the schema the demo renders and the values the demo's
// C++ evaluation gives; and the SFT warm-start rows are token for token what verl's Continuous Token builder
// makes of the same conversation (prompt with tools, tool call, tool response, answer) with the demo tokenizer.
#include <gtest/gtest.h>

#include <sstream>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/data/sft_dataset.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_builder.h"
#include "verl/trainer/demo_tools.h"

namespace verl::test {
namespace {

using nlohmann::ordered_json;

const std::string kOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/calculator_tool_oracle.py";

std::vector<ordered_json> oracle(const std::string& args, const std::string& out) {
  CommandResult r = run_command(test_python() + "'" + kOracle + "' " + args);
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err << "\n" << test_python_missing_hint();
  std::vector<ordered_json> rows;
  std::istringstream lines(read_file(out));
  for (std::string line; std::getline(lines, line);) rows.push_back(ordered_json::parse(line));
  return rows;
}

TEST(CalculatorToolOracle, VerlRunsTheToolAsTheDemoEvaluatesIt) {
  const std::string dir = make_temp_dir("calculator_oracle");
  const std::vector<std::string> expressions = {"12*34+5", "99*99+999", "(1-3)*-4", " 7 ", "--3", "2**10", "1/2",
                                                "", "12*", "x+1", "(((1)))", "3-10*2", "1000000000000*1000000000"};
  std::string lines;
  for (const auto& e : expressions) lines += ordered_json{{"expression", e}}.dump() + "\n";
  write_file(dir + "/expressions.jsonl", lines);
  const std::vector<ordered_json> rows =
      oracle("tool '" + std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/examples/multi_turn/calculator_tool_config.yaml' '" +
                 dir + "/expressions.jsonl' '" + dir + "/out.jsonl'",
             dir + "/out.jsonl");
  ASSERT_EQ(rows.size(), expressions.size() + 1);
  // The schema verl dumps for the template is the one the demo's SFT prompts list, key order included.
  EXPECT_EQ(tokenizer::python_json_dumps(rows[0]["schema"]), tokenizer::python_json_dumps(data::calculator_tool_schema()));
  for (size_t i = 0; i < expressions.size(); ++i) {
    const ordered_json& r = rows[i + 1];
    EXPECT_EQ(r["reward"].get<double>(), 0.0);
    std::optional<int64_t> ours = trainer::evaluate_calculator_expression(expressions[i]);
    const std::string text = r["text"].get<std::string>();
    if (ours) {
      EXPECT_EQ(text, std::to_string(*ours)) << expressions[i];
    } else {
      EXPECT_EQ(text.rfind("Error: ", 0), 0u) << expressions[i] << " -> " << text;
    }
  }
  EXPECT_EQ(rows[1]["text"], "413");
}

TEST(CalculatorToolOracle, SftRowsAreVerlsContinuousTokens) {
  const std::string dir = make_temp_dir("calculator_tokens_oracle");
  tokenizer::write_byte_level_bpe_folder(dir + "/tokenizer", trainer::demo_tools_tokenizer_spec());
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(dir + "/tokenizer");
  data::ArithmeticToolOptions options;
  options.train_size = 8;
  options.test_size = 8;
  options.sft_train_size = 24;
  options.sft_val_size = 4;
  options.tool_fraction = 0.5;  // both kinds of response among 24 rows
  const data::ArithmeticToolSplits splits = data::arithmetic_tool_splits(options);
  const ordered_json tools = ordered_json::array({data::calculator_tool_schema()});
  std::string cases;
  std::vector<const io::Value*> rows;
  for (const auto& row : splits.sft_train.rows) {
    const std::string question = row.find("extra_info")->find("question")->as_string();
    const std::string truth = row.find("reward_model")->find("ground_truth")->as_string();
    ordered_json messages = ordered_json::array(
        {{{"role", "system"}, {"content", data::arithmetic_tool_system_prompt()}},
         {{"role", "user"}, {"content", question + "\n" + data::arithmetic_instruction()}}});
    ordered_json turns = ordered_json::array();
    if (row.find("extra_info")->find("uses_tool")->as_bool()) {
      turns.push_back("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" +
                      question.substr(0, question.size() - 1) + "\"}}\n</tool_call><|im_end|>");
      turns.push_back(truth);
    }
    turns.push_back("#### " + truth + "<|im_end|>");
    cases += ordered_json{{"messages", messages}, {"tools", tools}, {"turns", turns}}.dump() + "\n";
    rows.push_back(&row);
  }
  write_file(dir + "/cases.jsonl", cases);
  const std::vector<ordered_json> verls =
      oracle("tokens '" + dir + "/tokenizer' '" + dir + "/cases.jsonl' '" + dir + "/out.jsonl'", dir + "/out.jsonl");
  ASSERT_EQ(verls.size(), rows.size());
  int with_tool = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<int32_t> prompt = data::sft_prompt_ids(tok, *rows[i]->find("prompt"));
    const std::vector<int32_t> response = data::sft_response_ids(tok, rows[i]->find("response")->as_string());
    EXPECT_EQ(prompt, verls[i]["prompt"].get<std::vector<int32_t>>()) << "row " << i;
    EXPECT_EQ(response, verls[i]["response"].get<std::vector<int32_t>>()) << "row " << i << ": "
                                                                           << rows[i]->find("response")->as_string();
    with_tool += rows[i]->find("extra_info")->find("uses_tool")->as_bool();
  }
  EXPECT_GT(with_tool, 0);
  EXPECT_LT(with_tool, static_cast<int>(rows.size()));
}

}  // namespace
}  // namespace verl::test
