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
                            "digit_completion"}) {
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
  EXPECT_NE(default_compute_score_error_of("codeforces").find("prime_code"), std::string::npos);
  EXPECT_NE(default_compute_score_error_of("hiyouga/geometry3k").find("geo3k"), std::string::npos);
  EXPECT_NE(default_compute_score_error_of("searchR1_nq").find("search_r1"), std::string::npos);
}

}  // namespace
}  // namespace verl::reward
