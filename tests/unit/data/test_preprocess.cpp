// `verl data preprocess`: gsm8k equals verl's own gsm8k_test.parquet row for row (and schema); the MATH
// helpers behave like verl's last_boxed_only_string / remove_boxed on hand-written cases.
#include <gtest/gtest.h>

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
  EXPECT_NE(r.err.find("unknown dataset 'nope'; valid: gsm8k, math"), std::string::npos) << r.err;
  CommandResult m = run_command(verl_binary() + " data preprocess gsm8k --input a");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_NE(m.err.find("needs --split"), std::string::npos) << m.err;
}

}  // namespace
}  // namespace verl::test
