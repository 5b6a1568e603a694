// `verl data preprocess gsm8k_multiturn_w_tool|gsm8k_multiturn_w_interaction` on the GSM8K fixture: columns,
// nested fields and values as verl's scripts write them (the texts below are typed from the scripts); and the
// `arithmetic_tool` task: seeded, held-out splits, answers, tools_kwargs and the SFT mix.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "support/fixtures.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"

namespace verl::test {
namespace {

const char* const kInstruction = " Let's think step by step and output the final answer after `####`.";

std::vector<io::Value> preprocess_fixture(const std::string& dataset) {
  const std::string out = make_temp_dir("preprocess_" + dataset) + "/test.parquet";
  CommandResult r = run_command(verl_binary() + " data preprocess " + dataset + " --input '" + fixtures_dir() +
                                "/gsm8k/test.jsonl' --split test --output '" + out + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return io::parquet::read_parquet(out);
}

const std::string& str(const io::Value& row, std::initializer_list<const char*> path) {
  const io::Value* v = &row;
  for (const char* key : path) {
    v = v->find(key);
    if (v == nullptr) throw std::runtime_error(std::string("missing ") + key);
  }
  return v->as_string();
}

std::vector<std::string> keys(const io::Value& value) {
  std::vector<std::string> out;
  for (const auto& field : value.as_struct()) out.push_back(field.first);
  return out;
}

TEST(MultiturnPreprocess, Gsm8kWithToolHasVerlsColumnsAndValues) {
  const std::vector<io::Value> source = io::read_jsonl(fixtures_dir() + "/gsm8k/test.jsonl");
  const std::vector<io::Value> rows = preprocess_fixture("gsm8k_multiturn_w_tool");
  ASSERT_EQ(rows.size(), 1319u);
  const io::Value& row = rows[0];
  EXPECT_EQ(keys(row), (std::vector<std::string>{"data_source", "prompt", "ability", "reward_model", "extra_info"}));
  EXPECT_EQ(keys(*row.find("extra_info")),
            (std::vector<std::string>{"split", "index", "answer", "question", "need_tools_kwargs", "tools_kwargs",
                                      "interaction_kwargs"}));
  EXPECT_EQ(str(row, {"data_source"}), "openai/gsm8k");
  EXPECT_EQ(str(row, {"ability"}), "math");
  EXPECT_EQ(str(row, {"reward_model", "style"}), "rule");
  EXPECT_EQ(str(row, {"reward_model", "ground_truth"}), "18");
  const io::List& prompt = row.find("prompt")->as_list();
  ASSERT_EQ(prompt.size(), 2u);
  EXPECT_EQ(str(prompt[0], {"role"}), "system");
  EXPECT_EQ(str(prompt[0], {"content"}),
            "You are a math expert. You are given a question and you need to solve it step by step. Reasoning step "
            "by step before any tool call. You should use the `calc_gsm8k_reward` tool after step by step solving "
            "the question, before generate final answer at least once and refine your answer if necessary. Put your "
            "final answer in the format of `#### <answer>`.");
  EXPECT_EQ(str(prompt[1], {"role"}), "user");
  EXPECT_EQ(str(prompt[1], {"content"}), str(source[0], {"question"}) + kInstruction);
  EXPECT_EQ(str(row, {"extra_info", "tools_kwargs", "calc_gsm8k_reward", "create_kwargs", "ground_truth"}), "18");
  EXPECT_EQ(str(row, {"extra_info", "interaction_kwargs", "query"}), str(prompt[1], {"content"}));
  EXPECT_EQ(str(row, {"extra_info", "interaction_kwargs", "ground_truth"}), "18");
  EXPECT_TRUE(row.find("extra_info")->find("need_tools_kwargs")->as_bool());
  for (size_t i = 0; i < rows.size(); i += 97) {
    EXPECT_EQ(rows[i].find("extra_info")->find("index")->as_int(), static_cast<int64_t>(i));
    EXPECT_EQ(str(rows[i], {"extra_info", "split"}), "test");
    EXPECT_EQ(str(rows[i], {"extra_info", "answer"}), str(source[i], {"answer"}));
    EXPECT_EQ(str(rows[i], {"extra_info", "question"}), str(source[i], {"question"}));
    EXPECT_EQ(str(rows[i], {"reward_model", "ground_truth"}), data::gsm8k_extract_solution(str(source[i], {"answer"})));
  }
}

TEST(MultiturnPreprocess, Gsm8kWithInteractionNamesTheGsm8kInteraction) {
  const std::vector<io::Value> rows = preprocess_fixture("gsm8k_multiturn_w_interaction");
  ASSERT_EQ(rows.size(), 1319u);
  const io::Value& row = rows[1];
  EXPECT_EQ(keys(*row.find("extra_info")),
            (std::vector<std::string>{"split", "index", "answer", "question", "interaction_kwargs"}));
  EXPECT_EQ(keys(*row.find("extra_info")->find("interaction_kwargs")),
            (std::vector<std::string>{"name", "query", "ground_truth"}));
  EXPECT_EQ(str(row, {"extra_info", "interaction_kwargs", "name"}), "gsm8k");
  EXPECT_EQ(str(row, {"extra_info", "interaction_kwargs", "ground_truth"}), "3");
  const io::List& prompt = row.find("prompt")->as_list();
  EXPECT_EQ(str(prompt[0], {"content"}),
            "You are a math expert. You are given a question and you need to solve it step by step. You should "
            "rethinking carefully if user point out your answer is wrong. Put your final answer in the format of "
            "`#### <answer>`.");
  EXPECT_EQ(str(row, {"extra_info", "interaction_kwargs", "query"}), str(prompt[1], {"content"}));
}

// The a*b+c value recomputed from the question text.
int64_t evaluate_question(const std::string& question) {
  static const std::regex pattern(R"(^(\d+)\*(\d+)\+(\d+)=$)");
  std::smatch m;
  if (!std::regex_match(question, m, pattern)) throw std::runtime_error("bad question " + question);
  return std::stoll(m[1]) * std::stoll(m[2]) + std::stoll(m[3]);
}

TEST(ArithmeticTool, SplitsAreSeededHeldOutAndCorrect) {
  data::ArithmeticToolOptions options;
  options.train_size = 3000;
  options.test_size = 200;
  options.sft_train_size = 4000;
  options.sft_val_size = 100;
  const data::ArithmeticToolSplits a = data::arithmetic_tool_splits(options);
  const data::ArithmeticToolSplits b = data::arithmetic_tool_splits(options);
  options.seed = 1;
  const data::ArithmeticToolSplits c = data::arithmetic_tool_splits(options);
  ASSERT_EQ(a.train.rows.size(), 3000u);
  ASSERT_EQ(a.test.rows.size(), 200u);
  ASSERT_EQ(a.sft_train.rows.size(), 4000u);
  ASSERT_EQ(a.sft_val.rows.size(), 100u);
  EXPECT_EQ(a.train.rows, b.train.rows);
  EXPECT_EQ(a.sft_train.rows, b.sft_train.rows);
  EXPECT_NE(a.test.rows, c.test.rows);
  // The first test problem at seed 0 (the LCG restated in Python gives the same), pinned so that a change of the
  // generator shows.
  EXPECT_EQ(str(a.test.rows[0], {"extra_info", "question"}), "14*27+56=");

  std::set<std::string> held_out;
  for (const auto* split : {&a.test, &a.sft_val}) {
    for (const auto& row : split->rows) EXPECT_TRUE(held_out.insert(str(row, {"extra_info", "question"})).second);
  }
  for (const auto* split : {&a.train, &a.test}) {
    for (const auto& row : split->rows) {
      const std::string question = str(row, {"extra_info", "question"});
      const std::string truth = std::to_string(evaluate_question(question));
      EXPECT_EQ(str(row, {"reward_model", "ground_truth"}), truth);
      EXPECT_EQ(str(row, {"extra_info", "tools_kwargs", "calculator", "create_kwargs", "ground_truth"}), truth);
      EXPECT_TRUE(row.find("extra_info")->find("need_tools_kwargs")->as_bool());
      EXPECT_EQ(str(row, {"data_source"}), "arithmetic");
      const io::List& prompt = row.find("prompt")->as_list();
      ASSERT_EQ(prompt.size(), 2u);
      EXPECT_EQ(str(prompt[0], {"content"}), "Use the calculator for arithmetic.");
      EXPECT_EQ(str(prompt[1], {"content"}), question + "\nAnswer after ####.");
      if (split == &a.train) EXPECT_EQ(held_out.count(question), 0u) << question;
    }
  }
  int64_t with_tool = 0;
  for (const auto& row : a.sft_train.rows) {
    const std::string question = str(row, {"extra_info", "question"});
    EXPECT_EQ(held_out.count(question), 0u) << question;
    const std::string response = str(row, {"response"});
    const std::string truth = std::to_string(evaluate_question(question));
    if (row.find("extra_info")->find("uses_tool")->as_bool()) {
      ++with_tool;
      EXPECT_EQ(response.rfind("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" +
                                   question.substr(0, question.size() - 1) + "\"}}\n</tool_call>",
                               0),
                0u)
          << response;
      EXPECT_NE(response.find("<tool_response>\n" + truth + "\n</tool_response>"), std::string::npos) << response;
    }
    EXPECT_EQ(response.substr(response.size() - truth.size() - 5), "#### " + truth);
  }
  EXPECT_NEAR(static_cast<double>(with_tool) / 4000.0, data::ArithmeticToolOptions{}.tool_fraction, 0.03);
}

TEST(ArithmeticTool, TranscriptLayout) {
  data::ArithmeticToolProblem p;
  p.a = 12;
  p.b = 34;
  p.c = 5;
  EXPECT_EQ(data::arithmetic_tool_transcript(p),
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"12*34+5\"}}\n</tool_call>"
            "<|im_end|>\n<|im_start|>user\n<tool_response>\n413\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n#### 413");
  data::ArithmeticToolOptions bad;
  bad.tool_fraction = 1.5;
  EXPECT_THROW(data::arithmetic_tool_splits(bad), Error);
}

TEST(ArithmeticTool, CliWritesFourFiles) {
  const std::string dir = make_temp_dir("arithmetic_tool_cli");
  CommandResult r = run_command(verl_binary() + " data preprocess arithmetic_tool --output-dir '" + dir +
                                "' --size 50 --test-size 10 --sft-size 30 --sft-val-size 5 --tool-fraction 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(io::parquet::read_parquet(dir + "/train.parquet").size(), 50u);
  EXPECT_EQ(io::parquet::read_parquet(dir + "/test.parquet").size(), 10u);
  for (const auto& row : io::parquet::read_parquet(dir + "/sft_train.parquet")) {
    EXPECT_TRUE(row.find("extra_info")->find("uses_tool")->as_bool());
  }
  CommandResult wrong = run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + dir +
                                    "/x' --tool-fraction 0.5");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_NE(wrong.err.find("--tool-fraction"), std::string::npos) << wrong.err;
}

}  // namespace
}  // namespace verl::test
