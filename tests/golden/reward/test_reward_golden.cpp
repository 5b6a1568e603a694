// The rule scorers against goldens computed by real Python (tests/golden/reward/gen_reward_golden.py, an
// independent re-implementation using Python's own `re` and `str`): 3000 generated texts mixing LaTeX,
// "####" / "Answer:" markers, Unicode digits and spaces, long texts for the 300-character clip.
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "verl/reward/scorers/gsm8k.h"
#include "verl/reward/scorers/math_dapo.h"
#include "verl/reward/scorers/math_reward.h"

namespace verl::reward {
namespace {

const std::string kDir = VERL_SOURCE_DIR_FOR_TESTS "/tests/golden/reward";

std::optional<std::string> reward_optional_string(const nlohmann::json& value) {
  if (value.is_null()) return std::nullopt;
  return value.get<std::string>();
}

std::string show(const std::optional<std::string>& value) { return value ? "'" + *value + "'" : "None"; }

TEST(RewardGolden, ScorersMatchPython) {
  std::ifstream in(kDir + "/reward_cases.jsonl");
  ASSERT_TRUE(in.is_open()) << kDir;
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  ASSERT_EQ(nlohmann::json::parse(line).at("format_version").get<int>(), 1);
  size_t cases = 0;
  size_t failures = 0;
  while (std::getline(in, line) && failures < 20) {
    const nlohmann::json c = nlohmann::json::parse(line);
    const std::string text = c.at("text").get<std::string>();
    const std::string truth = c.at("truth").get<std::string>();
    const std::string where = "case " + std::to_string(cases) + " text " + nlohmann::json(text).dump() +
                              " truth " + nlohmann::json(truth).dump();
    ++cases;
    auto number = [](double v) { return nlohmann::json(v).dump(); };
    auto flag = [](bool v) { return std::string(v ? "True" : "False"); };
    const ScoreResult dapo = math_dapo_compute_score(text, truth);
    // (what, C++ value, Python value)
    const std::vector<std::array<std::string, 3>> checks = {
        {"gsm8k strict", show(gsm8k_extract_solution(text, Gsm8kMethod::kStrict)),
         show(reward_optional_string(c["gsm8k_strict"]))},
        {"gsm8k flexible", show(gsm8k_extract_solution(text, Gsm8kMethod::kFlexible)),
         show(reward_optional_string(c["gsm8k_flexible"]))},
        {"gsm8k score", number(gsm8k_compute_score(text, truth)), number(c["gsm8k_score"].get<double>())},
        {"math last_boxed", show(math_last_boxed_only_string(text)),
         show(reward_optional_string(c["math_last_boxed"]))},
        {"math strip_string", show(math_strip_string(text)), show(reward_optional_string(c["math_strip"]))},
        {"math is_equiv", flag(math_is_equiv(text, truth)), flag(c["math_equiv"].get<bool>())},
        {"math score", number(math_compute_score(text, truth)), number(c["math_score"].get<double>())},
        {"dapo normalize", math_dapo_normalize_final_answer(text), c["dapo_normalize"].get<std::string>()},
        {"dapo score", number(dapo.score), number(c["dapo"]["score"].get<double>())},
        {"dapo acc", flag(std::get<bool>(dapo.extra.at(0).second)), flag(c["dapo"]["acc"].get<bool>())},
        {"dapo pred", std::get<std::string>(dapo.extra.at(1).second), c["dapo"]["pred"].get<std::string>()},
    };
    bool case_ok = true;
    for (const auto& [what, ours, python] : checks) {
      if (ours == python) continue;
      ADD_FAILURE() << what << ": C++ " << nlohmann::json(ours).dump() << " Python " << nlohmann::json(python).dump()
                    << " for " << where;
      case_ok = false;
    }
    failures += !case_ok;
  }
  EXPECT_EQ(failures, 0u) << "stopped after 20 failing cases";
  if (failures == 0) EXPECT_EQ(cases, 3000u);
}

TEST(RewardGolden, CommittedCasesAreTheGeneratorsOutput) {
  // Goldens are never hand-edited: regenerating them must give the committed file byte for byte.
  if (test::run_command("/usr/bin/python3 --version").exit_code != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const test::CommandResult r = test::run_command("/usr/bin/python3 '" + kDir + "/gen_reward_golden.py'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out == test::read_file(kDir + "/reward_cases.jsonl"))
      << "regenerate with: /usr/bin/python3 gen_reward_golden.py > reward_cases.jsonl";
}

}  // namespace
}  // namespace verl::reward
