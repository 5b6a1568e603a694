// The `arithmetic` synthetic task: deterministic by seed, held-out problems never in training splits, ground
// truths recomputed here from the question text and accepted by verl's GSM8K scorer, and the CLI's files.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "support/run_command.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/io/parquet/reader.h"
#include "verl/reward/scorers/default_compute_score.h"

namespace verl::test {
namespace {

data::ArithmeticOptions small(uint64_t seed) {
  data::ArithmeticOptions o;
  o.seed = seed;
  o.train_size = 3000;
  o.test_size = 300;
  o.sft_train_size = 3000;
  o.sft_val_size = 200;
  return o;
}

std::string question_of(const io::Value& row) { return row.find("extra_info")->find("question")->as_string(); }
std::string truth_of(const io::Value& row) { return row.find("reward_model")->find("ground_truth")->as_string(); }

// a op b from "a op b=" and its value, computed independently of the generator.
long long evaluate(const std::string& question) {
  long long a = 0, b = 0;
  char op = 0, eq = 0;
  EXPECT_EQ(std::sscanf(question.c_str(), "%lld%c%lld%c", &a, &op, &b, &eq), 4) << question;
  EXPECT_EQ(eq, '=') << question;
  EXPECT_TRUE(a >= 0 && a <= 99) << question;
  if (op == '*') {
    EXPECT_TRUE(b >= 0 && b <= 9) << question;
    return a * b;
  }
  EXPECT_TRUE(b >= 0 && b <= 99) << question;
  EXPECT_TRUE(op == '+' || op == '-') << question;
  return op == '+' ? a + b : a - b;
}

TEST(Arithmetic, SameSeedSameRowsOtherSeedOtherRows) {
  data::ArithmeticSplits a = data::arithmetic_splits(small(7)), b = data::arithmetic_splits(small(7));
  data::ArithmeticSplits c = data::arithmetic_splits(small(8));
  EXPECT_EQ(a.train.rows, b.train.rows);
  EXPECT_EQ(a.test.rows, b.test.rows);
  EXPECT_EQ(a.sft_train.rows, b.sft_train.rows);
  EXPECT_EQ(a.sft_val.rows, b.sft_val.rows);
  EXPECT_NE(a.test.rows, c.test.rows);
  EXPECT_NE(a.sft_train.rows, c.sft_train.rows);
  ASSERT_EQ(a.test.rows.size(), 300u);
  EXPECT_EQ(evaluate(question_of(a.test.rows[0])), std::stoll(truth_of(a.test.rows[0])));
}

TEST(Arithmetic, HeldOutProblemsAppearNowhereElse) {
  data::ArithmeticSplits s = data::arithmetic_splits(small(3));
  std::set<std::string> test, val, training;
  for (const auto& row : s.test.rows) EXPECT_TRUE(test.insert(question_of(row)).second) << "repeated test problem";
  for (const auto& row : s.sft_val.rows) EXPECT_TRUE(val.insert(question_of(row)).second) << "repeated val problem";
  for (const auto& row : s.train.rows) training.insert(question_of(row));
  for (const auto& row : s.sft_train.rows) training.insert(question_of(row));
  for (const auto& q : test) {
    EXPECT_EQ(val.count(q), 0u) << q;
    EXPECT_EQ(training.count(q), 0u) << q;
  }
  for (const auto& q : val) EXPECT_EQ(training.count(q), 0u) << q;
  // All three operations occur, roughly a third each.
  int mul = 0;
  for (const auto& row : s.train.rows) mul += question_of(row).find('*') != std::string::npos;
  EXPECT_GT(mul, 800);
  EXPECT_LT(mul, 1200);
}

TEST(Arithmetic, GroundTruthsAreRightAndScoredByGsm8k) {
  data::ArithmeticSplits s = data::arithmetic_splits(small(11));
  int negative = 0;
  for (const auto* split : {&s.train, &s.test}) {
    for (const auto& row : split->rows) {
      const std::string q = question_of(row);
      const std::string truth = truth_of(row);
      EXPECT_EQ(std::to_string(evaluate(q)), truth);
      negative += truth[0] == '-';
      EXPECT_EQ(row.find("data_source")->as_string(), "arithmetic");
      EXPECT_EQ(row.find("reward_model")->find("style")->as_string(), "rule");
      const auto& prompt = row.find("prompt")->as_list();
      ASSERT_EQ(prompt.size(), 1u);
      EXPECT_EQ(prompt[0].find("role")->as_string(), "user");
      EXPECT_EQ(prompt[0].find("content")->as_string(), q + "\n" + data::arithmetic_instruction());
      const std::string answer = row.find("extra_info")->find("answer")->as_string();
      EXPECT_EQ(reward::default_compute_score("arithmetic", answer, truth).score, 1.0) << answer;
      EXPECT_EQ(reward::default_compute_score("arithmetic", "#### " + std::to_string(evaluate(q) + 1), truth).score,
                0.0);
    }
  }
  EXPECT_GT(negative, 100);
  for (const auto* split : {&s.sft_train, &s.sft_val}) {
    for (const auto& row : split->rows) {
      const std::string truth = truth_of(row);
      const std::string prompt = row.find("prompt")->as_string();
      EXPECT_EQ(std::to_string(evaluate(prompt.substr(0, prompt.find('\n')))), truth);
      EXPECT_EQ(row.find("response")->as_string(), "#### " + truth);
      EXPECT_EQ(reward::default_compute_score("arithmetic", row.find("response")->as_string(), truth).score, 1.0);
    }
  }
}

TEST(Arithmetic, CliWritesFourParquetFiles) {
  const std::string dir = make_temp_dir("arithmetic_cli");
  CommandResult r = run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + dir +
                                "' --seed 2 --size 40 --test-size 10 --sft-size 30 --sft-val-size 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(io::parquet::read_parquet(dir + "/train.parquet").size(), 40u);
  EXPECT_EQ(io::parquet::read_parquet(dir + "/test.parquet").size(), 10u);
  EXPECT_EQ(io::parquet::read_parquet(dir + "/sft_train.parquet").size(), 30u);
  std::vector<io::Value> val = io::parquet::read_parquet(dir + "/sft_val.parquet");
  ASSERT_EQ(val.size(), 5u);
  std::vector<std::string> keys;
  for (const auto& field : val[0].as_struct()) keys.push_back(field.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"data_source", "prompt", "response", "reward_model", "extra_info"}));
  io::Value first = io::parquet::read_parquet(dir + "/train.parquet")[0];
  keys.clear();
  for (const auto& field : first.as_struct()) keys.push_back(field.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"data_source", "prompt", "ability", "reward_model", "extra_info"}));
  // Same seed, same files' rows.
  const std::string again = make_temp_dir("arithmetic_cli_again");
  r = run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + again +
                  "' --seed 2 --size 40 --test-size 10 --sft-size 30 --sft-val-size 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(io::parquet::read_parquet(again + "/train.parquet"), io::parquet::read_parquet(dir + "/train.parquet"));
  r = run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + dir + "' --test-size 9000 --sft-val-size 2000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("test size"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
