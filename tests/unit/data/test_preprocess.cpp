// `verl data preprocess`: gsm8k equals verl's own gsm8k_test.parquet row for row (and schema); the MATH
// helpers behave like verl's last_boxed_only_string / remove_boxed on hand-written cases.
#include <gtest/gtest.h>

#include <set>

#include "support/fixtures.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"

namespace verl::test {
namespace {

const std::string kFixtures = fixtures_dir();

TEST(DataPreprocess, Gsm8kEqualsVerlsParquet) {
  const std::string dir = make_temp_dir("preprocess_gsm8k");
  const std::string out = dir + "/test.parquet";
  CommandResult r = run_command(verl_binary() + " data preprocess gsm8k --input '" + kFixtures +
                                "/gsm8k/test.jsonl' --split test --output '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  io::parquet::Reader ours(out), verls(kFixtures + "/verl_parquet/gsm8k_test.parquet");
  EXPECT_EQ(ours.schema().to_text(), verls.schema().to_text());
  std::vector<io::Value> a = ours.read_all(), b = verls.read_all();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 1319u);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "row " << i << "\n" << io::to_json(a[i]) << "\n" << io::to_json(b[i]);
}

TEST(DataPreprocess, Gsm8kExtractSolution) {
  EXPECT_EQ(data::gsm8k_extract_solution("so 3+4=7\n#### 7"), "7");
  EXPECT_EQ(data::gsm8k_extract_solution("#### 1,234.5 dollars"), "1234.5");
  EXPECT_EQ(data::gsm8k_extract_solution("#### -12\n#### 99"), "-12");
  EXPECT_THROW(data::gsm8k_extract_solution("no answer"), Error);
}

TEST(DataPreprocess, MathBoxedHelpers) {
  std::string boxed;
  ASSERT_TRUE(data::math_last_boxed_only_string("a \\boxed{1} then \\boxed{\\frac{1}{2}} end", boxed));
  EXPECT_EQ(boxed, "\\boxed{\\frac{1}{2}}");
  EXPECT_EQ(data::math_remove_boxed(boxed), "\\frac{1}{2}");
  ASSERT_TRUE(data::math_last_boxed_only_string("so $\\boxed 5$.", boxed));
  EXPECT_EQ(boxed, "\\boxed 5");
  EXPECT_EQ(data::math_remove_boxed(boxed), "5");
  ASSERT_TRUE(data::math_last_boxed_only_string("x \\fbox{3}", boxed));
  EXPECT_EQ(boxed, "\\fbox{3}");
  EXPECT_THROW(data::math_remove_boxed(boxed), Error);
  EXPECT_FALSE(data::math_last_boxed_only_string("\\boxed{unclosed", boxed));
  EXPECT_FALSE(data::math_last_boxed_only_string("nothing", boxed));
}

TEST(DataPreprocess, MathRowsKeepSourceColumnsFirst) {
  const std::string dir = make_temp_dir("preprocess_math");
  write_file(dir + "/in.jsonl",
             "{\"problem\":\"What is $1+1$?\",\"level\":\"Level 1\",\"type\":\"Algebra\",\"solution\":\"It is "
             "$\\\\boxed{2}$.\"}\n");
  CommandResult r = run_command(verl_binary() + " data preprocess math --input '" + dir + "/in.jsonl' --split train --output '" +
                                dir + "/out.parquet'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult show = run_command(verl_binary() + " data show '" + dir + "/out.parquet'");
  EXPECT_EQ(show.out,
            "{\"level\":\"Level 1\",\"type\":\"Algebra\",\"data_source\":\"DigitalLearningGmbH/MATH-lighteval\","
            "\"prompt\":[{\"content\":\"What is $1+1$? Let's think step by step and output the final answer within "
            "\\\\boxed{}.\",\"role\":\"user\"}],\"ability\":\"math\",\"reward_model\":{\"ground_truth\":\"2\",\"style\":"
            "\"rule\"},\"extra_info\":{\"index\":0,\"split\":\"train\"}}\n");
  // Same column layout as verl's math_test.parquet.
  io::parquet::Reader ours(dir + "/out.parquet"), verls(kFixtures + "/verl_parquet/math_test.parquet");
  EXPECT_EQ(ours.schema().to_text(), verls.schema().to_text());
}

TEST(DataPreprocess, UnknownDatasetAndMissingOptions) {
  CommandResult r = run_command(verl_binary() + " data preprocess nope --input a --split b --output c");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown dataset 'nope'; valid: gsm8k, math, digit_completion"), std::string::npos) << r.err;
  CommandResult m = run_command(verl_binary() + " data preprocess gsm8k --input a");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.err.find("needs --split"), std::string::npos) << m.err;
}

}  // namespace
}  // namespace verl::test

namespace verl::test {
namespace {

TEST(DataPreprocess, DigitCompletionCoversVerlsTestSplit) {
  const std::string dir = make_temp_dir("preprocess_digit_completion");
  CommandResult r = run_command(verl_binary() + " data preprocess digit_completion --output-dir '" + dir + "' --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<io::Value> train = io::parquet::read_parquet(dir + "/train.parquet");
  std::vector<io::Value> test = io::parquet::read_parquet(dir + "/test.parquet");
  EXPECT_EQ(train.size(), 800u);
  EXPECT_EQ(test.size(), 200u);
  std::multiset<std::string> ours;
  for (const auto* split : {&train, &test}) {
    for (const auto& row : *split) ours.insert(row.find("prompt")->as_list()[0].find("content")->as_string());
  }
  // 10 values of a, 10 diffs, 10 counts; "7,7:9,4" arises from diff 0 and diff 9 alike.
  EXPECT_EQ(ours.size(), 1000u);
  EXPECT_EQ(ours.count("7,7:9,4"), 2u);
  EXPECT_EQ(ours.count("9,0:9,9"), 2u);  // a=9: diff 0 and diff 9 both give (9+diff)%9 = 0
  EXPECT_EQ(ours.count("0,1:9,5"), 1u);  // a=0: only diff 1 gives 1
  // Every row of verl's own test split is one of our prompts, and the layout is the same.
  io::parquet::Reader verls(fixtures_dir() + "/verl_parquet/arithmetic_sequence_test.parquet");
  io::parquet::Reader mine(dir + "/test.parquet");
  EXPECT_EQ(mine.schema().to_text(), verls.schema().to_text());
  for (const auto& row : verls.read_all()) {
    const std::string& content = row.find("prompt")->as_list()[0].find("content")->as_string();
    EXPECT_EQ(ours.count(content) > 0, true) << content;
  }
  // The seed decides the split.
  const std::string other = make_temp_dir("preprocess_digit_completion_other");
  ASSERT_EQ(run_command(verl_binary() + " data preprocess digit_completion --output-dir '" + other + "' --seed 3").exit_code, 0);
  EXPECT_EQ(read_file(other + "/test.parquet"), read_file(dir + "/test.parquet"));
  ASSERT_EQ(run_command(verl_binary() + " data preprocess digit_completion --output-dir '" + other + "' --seed 4").exit_code, 0);
  EXPECT_NE(read_file(other + "/test.parquet"), read_file(dir + "/test.parquet"));
}

TEST(DataPreprocess, DigitCompletionRewardColumnsScoreWithTheDigitCompletionRule) {
  const std::string plain = make_temp_dir("preprocess_digit_plain");
  const std::string dir = make_temp_dir("preprocess_digit_reward_columns");
  ASSERT_EQ(run_command(verl_binary() + " data preprocess digit_completion --output-dir '" + plain + "' --seed 3").exit_code, 0);
  CommandResult r = run_command(verl_binary() + " data preprocess digit_completion --output-dir '" + dir +
                                "' --seed 3 --reward-columns");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* split : {"train", "test"}) {
    std::vector<io::Value> rows = io::parquet::read_parquet(dir + "/" + split + ".parquet");
    std::vector<io::Value> prompts = io::parquet::read_parquet(plain + "/" + split + ".parquet");
    ASSERT_EQ(rows.size(), prompts.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::string& content = prompts[i].find("prompt")->as_list()[0].find("content")->as_string();
      EXPECT_EQ(rows[i].find("prompt")->as_list()[0].find("content")->as_string(), content);
      EXPECT_EQ(rows[i].find("data_source")->as_string(), "digit_completion");
      EXPECT_EQ(rows[i].find("reward_model")->find("ground_truth")->as_string(), content);
    }
  }
  // verl score reads them: "1,2:9,3" continues 3,4,5 (step 1 mod 9).
  write_file(dir + "/samples.jsonl",
             "{\"data_source\": \"digit_completion\", \"solution_str\": \"3,4,5\", \"ground_truth\": \"1,2:9,3\"}\n");
  CommandResult scored = run_command(verl_binary() + " score --input '" + dir + "/samples.jsonl'");
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_EQ(scored.out, "{\"score\":1.0}\n");
  CommandResult wrong = run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + dir +
                                    "/a' --reward-columns");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("--reward-columns is an option of digit_completion only"), std::string::npos) << wrong.err;
}

}  // namespace
}  // namespace verl::test
