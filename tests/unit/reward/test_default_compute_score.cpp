// default_compute_score's dispatch on data_source (verl/utils/reward_score/__init__.py) and its errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "verl/common/error.h"
#include "verl/reward/scorers/default_compute_score.h"

namespace verl::reward {
namespace {

std::string default_compute_score_error_of(const std::string& data_source) {
  try {
    default_compute_score(data_source, "#### 1", "1");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DefaultComputeScore, Gsm8kAndArithmeticUseStrictGsm8k) {
  for (const char* source : {"openai/gsm8k", "arithmetic"}) {
    const ScoreResult right = default_compute_score(source, "2+3 = 5\n#### 5", "5");
    EXPECT_EQ(right.score, 1.0) << source;
    EXPECT_FALSE(right.is_dict);
    EXPECT_TRUE(right.extra.empty());
    EXPECT_EQ(default_compute_score(source, "2+3 = 5\nThe answer is 5", "5").score, 0.0) << source;
  }
}

TEST(DefaultComputeScore, SameTextDifferentScorers) {
  // One response, three families: the boxed answer counts for MATH, not for gsm8k (no "####") nor for
  // math_dapo (no "Answer:"), which also scores a miss as -1.
  const std::string response = "so the answer is $\\boxed{12}$";
  EXPECT_EQ(default_compute_score("HuggingFaceH4/MATH-500", response, "12").score, 1.0);
  EXPECT_EQ(default_compute_score("openai/gsm8k", response, "12").score, 0.0);
  EXPECT_EQ(default_compute_score("math", response, "12").score, -1.0);
  EXPECT_EQ(default_compute_score("aime2025", "Answer: 12", "12").score, 1.0);
}

TEST(DefaultComputeScore, ExtraInfoIsAccepted) {
  const nlohmann::json extra_info = {{"split", "test"}, {"index", 3}};
  EXPECT_EQ(default_compute_score("openai/gsm8k", "#### 3", "3", extra_info).score, 1.0);
}

TEST(DefaultComputeScore, UnknownSourceNamesItAndListsKnownOnes) {
  const std::string message = default_compute_score_error_of("my_dataset");
  EXPECT_NE(message.find("'my_dataset'"), std::string::npos) << message;
  for (const char* known : {"openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval",
                            "HuggingFaceH4/MATH-500", "math_dapo", "math_dapo_reasoning", "aime*", "arithmetic",
                            "digit_completion", "codecontests", "apps", "codeforces", "taco"}) {
    EXPECT_NE(message.find(known), std::string::npos) << known << " missing from: " << message;
  }
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  // Names are exact and case-sensitive, as in verl ("aime" is a prefix).
  EXPECT_NE(default_compute_score_error_of("OpenAI/gsm8k"), "");
  EXPECT_NE(default_compute_score_error_of("AIME2024"), "");
  EXPECT_NE(default_compute_score_error_of("aim"), "");
  EXPECT_NE(default_compute_score_error_of(""), "");
  EXPECT_TRUE(has_rule_scorer("aime_2024"));
  EXPECT_FALSE(has_rule_scorer("gsm8k"));
}

TEST(DefaultComputeScore, VerlSourcesWithoutAPortSayWhich) {
  EXPECT_NE(default_compute_score_error_of("numina_olympiads").find("prime_math"), std::string::npos);
  EXPECT_NE(default_compute_score_error_of("hiyouga/geometry3k").find("geo3k"), std::string::npos);
}

// verl's search_r1_like_qa_em; tests/oracle/test_search_r1_oracle.cpp compares it with verl's module.
TEST(DefaultComputeScore, SearchR1IsExactMatchOfTheLastAnswerTag) {
  const nlohmann::json truth = {{"target", {"Paris", "the city of light"}}};
  const auto score = [&](const std::string& response) {
    return default_compute_score_json("searchR1_hotpotqa", response, truth, nullptr).score;
  };
  EXPECT_EQ(score("<search>capital of France</search><answer>paris!</answer>"), 1.0);
  EXPECT_EQ(score("<answer>London</answer> no, <answer>\n The City of Light. </answer>"), 1.0);
  EXPECT_EQ(score("<answer>Paris, France</answer>"), 0.0);
  EXPECT_EQ(score("Paris"), 0.0);  // no answer tags
  std::string spam;
  for (int i = 0; i < 11; ++i) spam += "<answer>Paris</answer>";
  EXPECT_EQ(score(spam), 0.25);  // more than 10 tags
  EXPECT_EQ(
      default_compute_score_json("searchR1_nq", "<answer>an Apple</answer>", {{"target", "apple"}}, nullptr).score,
      1.0);
  EXPECT_TRUE(has_rule_scorer("searchR1_bamboogle"));
  EXPECT_FALSE(has_rule_scorer("searchR1"));
}

TEST(DefaultComputeScore, SearchR1GroundTruthOfAnotherShapeIsOneError) {
  for (const nlohmann::json& truth :
       {nlohmann::json("Paris"), nlohmann::json{{"answer", "Paris"}}, nlohmann::json{{"target", {"Paris", 3}}}}) {
    try {
      default_compute_score_json("searchR1_nq", "<answer>Paris</answer>", truth, nullptr);
      ADD_FAILURE() << "no error for " << truth.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"target\" is a string or a list of strings"), std::string::npos)
          << e.what();
    }
  }
  // The other scorers take a string.
  try {
    default_compute_score_json("openai/gsm8k", "#### 1", nlohmann::json{{"target", "1"}}, nullptr);
    ADD_FAILURE() << "no error for an object ground truth";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be a string for the built-in scorer of data_source 'openai/gsm8k'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace verl::reward
