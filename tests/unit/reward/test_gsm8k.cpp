// GSM8K rule reward against verl's gsm8k.py behaviour. Expected values are reasoned from the Python:
//   strict:   re.findall("#### (\-?[0-9\.\,]+)", s[-300:])[-1] with "," removed, compared with == to the truth
//   flexible: the last re.findall("(\-?[0-9\.\,]+)", s[-300:]) that is not "" or "."
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fixtures.h"
#include "verl/common/error.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/gsm8k.h"

namespace verl::reward {
namespace {

std::string fixture_path() { return test::fixtures_dir() + "/gsm8k/test.jsonl"; }

struct GoldRow {
  std::string answer;        // the reference solution, ending in "#### N"
  std::string final_number;  // N as written (may hold commas)
  std::string ground_truth;  // N without commas, as verl's examples/data_preprocess/gsm8k.py stores it
};

std::vector<GoldRow> read_gold_rows() {
  const std::string path = fixture_path();
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << path << "";
  std::vector<GoldRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    GoldRow gold;
    gold.answer = row.at("answer").get<std::string>();
    const size_t marker = gold.answer.rfind("#### ");
    EXPECT_NE(marker, std::string::npos) << gold.answer;
    gold.final_number = gold.answer.substr(marker + 5);
    for (char c : gold.final_number) {
      if (c != ',') gold.ground_truth += c;
    }
    rows.push_back(gold);
  }
  return rows;
}

TEST(Gsm8kScorer, EveryGoldSolutionScoresOne) {
  const std::vector<GoldRow> rows = read_gold_rows();
  ASSERT_EQ(rows.size(), 1319u);
  size_t longer_than_clip = 0;
  for (const GoldRow& row : rows) {
    EXPECT_EQ(gsm8k_compute_score(row.answer, row.ground_truth), 1.0) << row.answer;
    EXPECT_EQ(default_compute_score("openai/gsm8k", row.answer, row.ground_truth).score, 1.0);
    if (row.answer.size() > kGsm8kSolutionClipChars) ++longer_than_clip;
  }
  EXPECT_GT(longer_than_clip, 100u) << "the fixture should exercise the 300-character clip";
}

TEST(Gsm8kScorer, AlteredGoldSolutionsScoreZero) {
  for (const GoldRow& row : read_gold_rows()) {
    const std::string without_final = row.answer.substr(0, row.answer.size() - row.final_number.size());
    // A different final number: "18" -> "187" (never equal to the truth).
    EXPECT_EQ(gsm8k_compute_score(without_final + row.final_number + "7", row.ground_truth), 0.0) << row.answer;
    // The number right, the "#### " marker gone: strict finds nothing.
    const std::string no_marker = without_final.substr(0, without_final.size() - 5) + "The answer is " +
                                  row.final_number;
    EXPECT_EQ(gsm8k_compute_score(no_marker, row.ground_truth), 0.0) << no_marker;
  }
}

TEST(Gsm8kScorer, FlexibleOnGoldSolutionsKeepsCommas) {
  // Flexible takes the last number as written: right unless it has a thousands separator, which only
  // strict mode removes (14 such answers in the test split).
  size_t with_commas = 0;
  for (const GoldRow& row : read_gold_rows()) {
    const bool has_comma = row.final_number.find(',') != std::string::npos;
    with_commas += has_comma;
    EXPECT_EQ(gsm8k_compute_score(row.answer, row.ground_truth, Gsm8kMethod::kFlexible), has_comma ? 0.0 : 1.0)
        << row.answer;
  }
  EXPECT_EQ(with_commas, 14u);
}

TEST(Gsm8kScorer, StrictExtraction) {
  EXPECT_EQ(gsm8k_extract_solution("so #### 42"), "42");
  EXPECT_EQ(gsm8k_extract_solution("#### 1,234"), "1234");       // commas removed
  EXPECT_EQ(gsm8k_extract_solution("#### 1,2,3"), "123");
  EXPECT_EQ(gsm8k_extract_solution("#### -3"), "-3");
  EXPECT_EQ(gsm8k_extract_solution("#### .5"), ".5");
  EXPECT_EQ(gsm8k_extract_solution("#### 18."), "18.");          // "." is in the class: a trailing period stays
  EXPECT_EQ(gsm8k_extract_solution("#### 5\nthen #### 7 ok"), "7");  // the last occurrence
  EXPECT_EQ(gsm8k_extract_solution("#### $18"), std::nullopt);  // "$" cannot follow "#### ": no match at all
  EXPECT_EQ(gsm8k_extract_solution("####42"), std::nullopt);    // the space is required
  EXPECT_EQ(gsm8k_extract_solution("#### -"), std::nullopt);    // "-" alone is not a number
  EXPECT_EQ(gsm8k_extract_solution("no marker 42"), std::nullopt);
}

TEST(Gsm8kScorer, ScoresAreExactStringEquality) {
  EXPECT_EQ(gsm8k_compute_score("#### 1,234", "1234"), 1.0);
  EXPECT_EQ(gsm8k_compute_score("#### 18.", "18"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 18.0", "18"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 018", "18"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### $18", "18"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 5 and later #### 7", "5"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 5 and later #### 7", "7"), 1.0);
}

TEST(Gsm8kScorer, FormatScoreAndScore) {
  // A wrong answer in the right format earns format_score; no answer earns 0 whatever format_score is.
  EXPECT_EQ(gsm8k_compute_score("#### 41", "42", Gsm8kMethod::kStrict, 0.1), 0.1);
  EXPECT_EQ(gsm8k_compute_score("the answer is 42", "42", Gsm8kMethod::kStrict, 0.1), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 42", "42", Gsm8kMethod::kStrict, 0.1, 2.5), 2.5);
}

TEST(Gsm8kScorer, FlexibleExtraction) {
  EXPECT_EQ(gsm8k_extract_solution("The answer is 42.", Gsm8kMethod::kFlexible), "42.");  // period captured
  EXPECT_EQ(gsm8k_extract_solution("first 12 then 42 .", Gsm8kMethod::kFlexible), "42");  // lone "." skipped
  EXPECT_EQ(gsm8k_extract_solution("costs $42", Gsm8kMethod::kFlexible), "42");
  EXPECT_EQ(gsm8k_extract_solution("1,000 apples", Gsm8kMethod::kFlexible), "1,000");  // no comma removal
  EXPECT_EQ(gsm8k_extract_solution("x - 5", Gsm8kMethod::kFlexible), "5");   // "- " is not a sign
  EXPECT_EQ(gsm8k_extract_solution("5-3", Gsm8kMethod::kFlexible), "-3");    // matches "5" and "-3"
  EXPECT_EQ(gsm8k_extract_solution("no digits here", Gsm8kMethod::kFlexible), std::nullopt);
  // Quirk: when every match is ".", verl's loop variable is left at "." and that is the answer.
  EXPECT_EQ(gsm8k_extract_solution("a . b .", Gsm8kMethod::kFlexible), ".");
  EXPECT_EQ(gsm8k_compute_score("a . b .", ".", Gsm8kMethod::kFlexible), 1.0);
  EXPECT_EQ(gsm8k_compute_score("first 12 then 42 .", "42", Gsm8kMethod::kFlexible), 1.0);
  EXPECT_EQ(gsm8k_compute_score("1,000 apples", "1000", Gsm8kMethod::kFlexible), 0.0);
  EXPECT_EQ(gsm8k_compute_score("1,000 apples", "1000"), 0.0);  // strict: no marker
  EXPECT_EQ(parse_gsm8k_method("flexible"), Gsm8kMethod::kFlexible);
  EXPECT_THROW(parse_gsm8k_method("loose"), Error);
}

TEST(Gsm8kScorer, OnlyTheLast300CharactersCount) {
  // "#### 42" is 7 characters; 293 more make 300 (not clipped), 294 make 301 and the clip drops the first "#".
  EXPECT_EQ(gsm8k_compute_score("#### 42" + std::string(293, 'x'), "42"), 1.0);
  EXPECT_EQ(gsm8k_compute_score("#### 42" + std::string(294, 'x'), "42"), 0.0);
  // The clipped text "### 42xxx..." still holds the number for flexible mode.
  EXPECT_EQ(gsm8k_compute_score("#### 42" + std::string(294, 'x'), "42", Gsm8kMethod::kFlexible), 1.0);
  // An earlier answer outside the window does not count; the later one does.
  EXPECT_EQ(gsm8k_compute_score("#### 1 " + std::string(300, 'y') + " #### 2", "2"), 1.0);
  EXPECT_EQ(gsm8k_compute_score("#### 1 " + std::string(300, 'y'), "1"), 0.0);
}

TEST(Gsm8kScorer, ClipCountsCodePointsNotBytes) {
  // Python's s[-300:] counts characters: "é" is 2 bytes and "😀" 4 bytes in UTF-8, one character each.
  std::string two_byte, four_byte;
  for (int i = 0; i < 293; ++i) two_byte += "\xC3\xA9", four_byte += "\xF0\x9F\x98\x80";
  EXPECT_EQ(gsm8k_compute_score("#### 42" + two_byte, "42"), 1.0);
  EXPECT_EQ(gsm8k_compute_score("#### 42" + four_byte, "42"), 1.0);
  EXPECT_EQ(gsm8k_compute_score("#### 42" + two_byte + "\xC3\xA9", "42"), 0.0);
  EXPECT_EQ(gsm8k_compute_score("#### 42" + four_byte + "\xF0\x9F\x98\x80", "42"), 0.0);
}

}  // namespace
}  // namespace verl::reward
