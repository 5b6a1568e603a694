// math_dapo reward against verl's math_dapo.py behaviour: "Answer: ..." on the last 300 characters,
// normalize_final_answer on both sides, {"score": +-1.0, "acc": bool, "pred": str}. Expected values are
// reasoned step by step from the Python (substitutions, removals, then the regex rewrites, in order).
#include <gtest/gtest.h>

#include <string>

#include "verl/common/error.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/math_dapo.h"

namespace verl::reward {
namespace {

std::string normalize(const std::string& text) { return math_dapo_normalize_final_answer(text); }

const ExtraValue& field(const ScoreResult& result, const std::string& key) {
  for (const auto& entry : result.extra) {
    if (entry.first == key) return entry.second;
  }
  ADD_FAILURE() << "no field " << key;
  static const ExtraValue none;
  return none;
}

void expect_result(const ScoreResult& result, bool correct, const std::string& pred) {
  EXPECT_EQ(result.score, correct ? 1.0 : -1.0);
  EXPECT_TRUE(result.is_dict);
  ASSERT_EQ(result.extra.size(), 2u);
  EXPECT_EQ(result.extra[0].first, "acc");
  EXPECT_EQ(result.extra[1].first, "pred");
  EXPECT_EQ(std::get<bool>(field(result, "acc")), correct);
  EXPECT_EQ(std::get<std::string>(field(result, "pred")), pred);
}

TEST(MathDapoScorer, NormalizeFinalAnswer) {
  EXPECT_EQ(normalize("\\boxed{5}"), "5");                 // (\\boxed\{)(.*)(\}) -> "5"
  EXPECT_EQ(normalize("1,000"), "1000");                   // digits once commas go: commas dropped
  EXPECT_EQ(normalize("1,000.5"), "1,000.5");              // "1000.5".isdigit() is False: kept
  EXPECT_EQ(normalize("10 dollars"), "10");                // " " removed, then "dollars"
  EXPECT_EQ(normalize("x = 5"), "5");                      // text after the last "="
  EXPECT_EQ(normalize("$\\frac{1}{2}$"), "\\frac{1}{2}");  // $...$ kept, then "$" removed
  EXPECT_EQ(normalize("\\frac12"), "\\frac{1}{2}");        // (frac)([^{])(.) -> frac{1}{2}
  EXPECT_EQ(normalize("\\dfrac12"), "\\dfrac{1}{2}");      // no dfrac -> frac step in this normaliser
  EXPECT_EQ(normalize("\\sqrt3"), "\\sqrt{3}");
  EXPECT_EQ(normalize("\\text{(A)}"), "(A)");
  EXPECT_EQ(normalize("\\textbf{B}"), "B");
  EXPECT_EQ(normalize("\\overline{12}"), "12");
  EXPECT_EQ(normalize("5 \\text{ m}"), "5");     // " " removed -> "5\text{m}" -> "5\text{}" -> "\text{}" removed
  EXPECT_EQ(normalize("90^\\circ"), "90");
  EXPECT_EQ(normalize("3 \\ldots"), "3");
  EXPECT_EQ(normalize("  7\t"), "7");            // spaces substituted away, the tab stripped at the end
  // "an " and "a " are removed anywhere, not only as words: "Jan 5" -> "J5".
  EXPECT_EQ(normalize("Jan 5"), "J5");
  EXPECT_EQ(normalize("a banana"), "banana");
  // Text around the first "$...$" pair of a line is dropped: "so$4$apples" (spaces already gone) -> "$4$" -> "4".
  EXPECT_EQ(normalize("so $4$ apples"), "4");
  EXPECT_EQ(normalize("[INVALID]"), "[INVALID]");
  // Unicode digits pass str.isdigit(): "١,٢" (Arabic-Indic 1, 2) loses its comma, "x,2" does not.
  EXPECT_EQ(normalize("\xD9\xA1,\xD9\xA2"), "\xD9\xA1\xD9\xA2");
  EXPECT_EQ(normalize("x,2"), "x,2");
}

TEST(MathDapoScorer, AnswerExtraction) {
  expect_result(math_dapo_compute_score("Let me think... Answer: 42", "42"), true, "42");
  expect_result(math_dapo_compute_score("answer: 42", "42"), true, "42");
  expect_result(math_dapo_compute_score("ANSWER :  42", "42"), true, "42");
  expect_result(math_dapo_compute_score("Answer: 41", "42"), false, "41");
  expect_result(math_dapo_compute_score("Answer: 1\nAnswer: 2", "2"), true, "2");   // the last match
  expect_result(math_dapo_compute_score("The result is 42.", "42"), false, "[INVALID]");
  // \s* after the colon crosses a line break: "Answer:\n42" captures "42".
  expect_result(math_dapo_compute_score("Answer:\n42", "42"), true, "42");
  // The capture runs to the end of the line: "42 is the final" -> spaces removed -> "42isthefinal".
  expect_result(math_dapo_compute_score("Answer: 42 is the final", "42"), false, "42isthefinal");
  expect_result(math_dapo_compute_score("Answer: $\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"), true, "\\frac{1}{2}");
  expect_result(math_dapo_compute_score("Answer: 1000", "1,000"), true, "1000");
  // A bare \boxed{} without "Answer:" is not read by the default (Minerva) check.
  expect_result(math_dapo_compute_score("so \\boxed{42}", "42"), false, "[INVALID]");
}

TEST(MathDapoScorer, PythonCaseFoldingAndWhitespace) {
  // re.IGNORECASE lets "s" match U+017F (long s); Python's \s includes U+00A0 and the separators \x1c-\x1f.
  expect_result(math_dapo_compute_score("An\xC5\xBFwer: 3", "3"), true, "3");
  expect_result(math_dapo_compute_score("Answer:\xC2\xA0" "5", "5"), true, "5");
  expect_result(math_dapo_compute_score("Answer:\x1c" "5", "5"), true, "5");
  // U+2028 is whitespace for \s but not a line break for [^\n]: it is captured, then strip() removes it.
  expect_result(math_dapo_compute_score("Answer: 6\xE2\x80\xA8", "6"), true, "6");
}

TEST(MathDapoScorer, OnlyTheLast300CharactersCount) {
  // "Answer: 7\n" is 10 characters; 290 more make 300, 291 more cut the "A".
  expect_result(math_dapo_compute_score("Answer: 7\n" + std::string(290, 'y'), "7"), true, "7");
  expect_result(math_dapo_compute_score("Answer: 7\n" + std::string(291, 'y'), "7"), false, "[INVALID]");
}

TEST(MathDapoScorer, StrictBoxVerify) {
  MathDapoOptions strict;
  strict.strict_box_verify = true;
  expect_result(math_dapo_compute_score("so \\boxed{42}", "42", strict), true, "42");
  expect_result(math_dapo_compute_score("so \\boxed{42.0}", "42", strict), false, "42.0");  // no normalisation
  const ScoreResult no_box = math_dapo_compute_score("no box", "42", strict);
  EXPECT_EQ(no_box.score, -1.0);
  EXPECT_FALSE(std::get<bool>(field(no_box, "acc")));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(field(no_box, "pred")));  // Python None
  // Only the last 100 characters are searched: 10 + 91 = 101 characters cut the box's backslash.
  const ScoreResult cut = math_dapo_compute_score("\\boxed{42}" + std::string(91, ' '), "42", strict);
  EXPECT_EQ(cut.score, -1.0);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(field(cut, "pred")));
  expect_result(math_dapo_compute_score("\\boxed{42}" + std::string(90, ' '), "42", strict), true, "42");
  // pause_tokens_index: the window is pred[index[-1] - 100:]. The box sits at characters 40..48 of 249:
  // outside the last 100, inside pred[30:].
  const std::string padded = std::string(40, ' ') + "\\boxed{9}" + std::string(200, ' ');
  EXPECT_TRUE(std::holds_alternative<std::monostate>(field(math_dapo_compute_score(padded, "9", strict), "pred")));
  strict.pause_tokens_index = std::vector<long long>{0, 0, 0, 130};
  expect_result(math_dapo_compute_score(padded, "9", strict), true, "9");
  strict.pause_tokens_index = std::vector<long long>{0, 0, 150};
  EXPECT_THROW(math_dapo_compute_score("x", "9", strict), Error);
}

TEST(MathDapoScorer, DispatchedSources) {
  for (const char* source : {"math_dapo", "math", "math_dapo_reasoning", "aime", "aime2024", "aime25"}) {
    expect_result(default_compute_score(source, "Answer: 17", "17"), true, "17");
    expect_result(default_compute_score(source, "\\boxed{17}", "17"), false, "[INVALID]");
  }
}

}  // namespace
}  // namespace verl::reward
