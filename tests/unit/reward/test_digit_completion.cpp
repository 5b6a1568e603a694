// The digit-completion toy task's reward (verl tests/special_e2e/envs/digit_completion/task.py and the
// arithmetic_sequence trainer's reward function), with values worked by hand.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/digit_completion.h"

namespace verl::reward {
namespace {

TEST(DigitCompletionScorer, GroundTruthFromPrompt) {
  EXPECT_EQ(digit_completion_ground_truth("9,10:20,2"), "11,12");      // verl's own example
  EXPECT_EQ(digit_completion_ground_truth("7,8:20,0"), "");
  EXPECT_EQ(digit_completion_ground_truth("7,7:9,4"), "7,7,7,7");      // diff 0
  EXPECT_EQ(digit_completion_ground_truth("2,5:9,2"), "8,2");          // 5+3=8, (8+3)%9=2
  // diff = (6-9) % 9 = 6 with Python's modulo; then 12%9=3, 9%9=0, 6, 3, 0, 6, 3, 0.
  EXPECT_EQ(digit_completion_ground_truth("9,6:9,8"), "3,0,6,3,0,6,3,0");
  EXPECT_THROW(digit_completion_ground_truth("9,10"), Error);
  EXPECT_THROW(digit_completion_ground_truth("9,x:20,2"), Error);
  EXPECT_THROW(digit_completion_ground_truth("9,10:0,2"), Error);  // max_number 0 divides by zero in Python
}

TEST(DigitCompletionScorer, DenseRewardMatchesPrefixUntilFirstMismatch) {
  const float p = static_cast<float>(1.0 / 6.0);  // 1/(len("11,12")+1), float64 stored as float32
  EXPECT_EQ(digit_completion_dense_reward("11,12,13", "11,12"), (std::vector<float>{p, p, p, p, p, 0, 0, 0}));
  EXPECT_EQ(digit_completion_dense_reward("11,13", "11,12"), (std::vector<float>{p, p, p, p, 0}));
  EXPECT_EQ(digit_completion_dense_reward("21,12", "11,12"), (std::vector<float>{0, 0, 0, 0, 0}));  // no restart
  // verl's example: prompt "7,8:20,0" (empty truth), response "E000" -> all zero.
  EXPECT_EQ(digit_completion_dense_reward("E000", ""), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_TRUE(digit_completion_dense_reward("", "11,12").empty());
  EXPECT_EQ(digit_completion_dense_reward("1", "1", 2.0f), (std::vector<float>{1.0f}));  // 2.0 / (1+1)
}

TEST(DigitCompletionScorer, TokenRewardsRepeatTheLastValue) {
  const float p = static_cast<float>(1.0 / 6.0);
  EXPECT_EQ(digit_completion_token_rewards("11,12", "11,12", 8), (std::vector<float>{p, p, p, p, p, p, p, p}));
  EXPECT_EQ(digit_completion_token_rewards("11,13", "11,12", 7), (std::vector<float>{p, p, p, p, 0, 0, 0}));
  EXPECT_EQ(digit_completion_token_rewards("", "", 3), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(digit_completion_token_rewards("", "11,12", 3), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(digit_completion_token_rewards("11,12", "11,12", 2), (std::vector<float>{p, p}));
}

TEST(DigitCompletionScorer, ScalarScoreSumsResponseAndEosShares) {
  EXPECT_EQ(digit_completion_compute_score("11,12", "11,12"), 1.0);      // 5 characters + EOS = 6/6
  EXPECT_DOUBLE_EQ(digit_completion_compute_score("11,13", "11,12"), 4.0 / 6.0);
  EXPECT_DOUBLE_EQ(digit_completion_compute_score("11", "11,12"), 3.0 / 6.0);  // EOS inherits the last share
  EXPECT_DOUBLE_EQ(digit_completion_compute_score("11,12,13", "11,12"), 5.0 / 6.0);
  EXPECT_EQ(digit_completion_compute_score("", "11,12"), 0.0);
  EXPECT_EQ(digit_completion_compute_score("", ""), 1.0);
  EXPECT_EQ(digit_completion_compute_score("5", ""), 0.0);
  EXPECT_EQ(digit_completion_compute_score("x", "11,12"), 0.0);
  for (const char* response : {"11,12", "11,13", "11", "11,12,13", "", "5", "1"}) {
    const std::vector<float> tokens =
        digit_completion_token_rewards(response, "11,12", std::string(response).size() + 1);
    EXPECT_NEAR(digit_completion_compute_score(response, "11,12"),
                std::accumulate(tokens.begin(), tokens.end(), 0.0), 1e-6)
        << response;
  }
  // The prompt itself may stand in for the ground truth ("9,10:20,2" asks for "11,12").
  EXPECT_EQ(digit_completion_compute_score("11,12", "9,10:20,2"), 1.0);
  EXPECT_DOUBLE_EQ(digit_completion_compute_score("11", "9,10:20,2"), 0.5);
  EXPECT_EQ(digit_completion_compute_score("", "7,8:20,0"), 1.0);
  EXPECT_THROW(digit_completion_compute_score("1", "9:10"), Error);
  const ScoreResult result = default_compute_score("digit_completion", "11,12", "11,12");
  EXPECT_EQ(result.score, 1.0);
  EXPECT_FALSE(result.is_dict);
}

}  // namespace
}  // namespace verl::reward
