// MATH rule reward against verl's math_reward.py behaviour (hendrycks_math normalisation). Each expected value
// is reasoned from the Python steps of strip_string (spec §6.4); the step numbers are given where it matters.
#include <gtest/gtest.h>

#include <string>

#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/math_reward.h"

namespace verl::reward {
namespace {

bool equiv(const std::string& a, const std::string& b) { return math_is_equiv(a, b); }

TEST(MathScorer, Fractions) {
  EXPECT_TRUE(equiv("\\frac12", "\\frac{1}{2}"));           // 14: \frac12 -> \frac{1}{2}
  EXPECT_TRUE(equiv("\\dfrac{3}{4}", "\\frac{3}{4}"));      // 4: dfrac -> frac
  EXPECT_TRUE(equiv("\\tfrac34", "3/4"));                   // 4 + 14, and 16 turns 3/4 into \frac{3}{4}
  EXPECT_TRUE(equiv("\\frac1{72}", "\\frac{1}{72}"));       // 14: b == "{" keeps the braced denominator
  EXPECT_FALSE(equiv("\\frac{72}1", "\\frac{72}{1}"));      // 14 only rewrites a "\frac" not followed by "{"
  EXPECT_FALSE(equiv("\\frac{1}{3}", "\\frac{1}{2}"));
  EXPECT_EQ(math_fix_fracs("\\frac12+\\frac{a}{b}"), "\\frac{1}{2}+\\frac{a}{b}");
  EXPECT_EQ(math_fix_fracs("\\frac1"), "\\frac1");          // len < 2: the caught assert returns the input
  // Python indexes code points: a = "π", b = "2" (a byte-wise port would split the UTF-8 sequence).
  EXPECT_EQ(math_fix_fracs("\\frac\xCF\x80" "2"), "\\frac{\xCF\x80}{2}");
}

TEST(MathScorer, HalfAndDecimals) {
  EXPECT_TRUE(equiv("0.5", "\\frac{1}{2}"));   // 15
  EXPECT_TRUE(equiv(".5", "1/2"));             // 10 prefixes "0", 15, and 16 on the other side
  EXPECT_TRUE(equiv("0.25", ".25"));
  EXPECT_TRUE(equiv("k = .5", "0.5"));         // 10 " ." -> " 0.", 11 drops "k ", 13 drops the space, 15
  EXPECT_TRUE(equiv("\\frac{.5}{2}", "\\frac{0.5}{2}"));  // 10 "{." -> "{0."
  EXPECT_FALSE(equiv("1.5", "1.50"));          // no numeric normalisation
  EXPECT_FALSE(equiv("3.0", "3"));
  EXPECT_FALSE(equiv("0.50", "\\frac{1}{2}"));  // only the exact text "0.5" becomes \frac{1}{2}
}

TEST(MathScorer, SquareRoots) {
  EXPECT_TRUE(equiv("\\sqrt2", "\\sqrt{2}"));                          // 12
  EXPECT_TRUE(equiv("\\frac{\\sqrt3}{2}", "\\frac{\\sqrt{3}}{2}"));
  // Quirk: 12 runs before 13 removes spaces, so "\sqrt 5" becomes "\sqrt{ }5" and then "\sqrt{}5".
  EXPECT_EQ(math_strip_string("2\\sqrt 5"), "2\\sqrt{}5");
  EXPECT_FALSE(equiv("2\\sqrt 5", "2\\sqrt{5}"));
  EXPECT_FALSE(equiv("\\sqrt{8}", "2\\sqrt{2}"));
  EXPECT_EQ(math_fix_sqrt("\\sqrt3+\\sqrt{5}"), "\\sqrt{3}+\\sqrt{5}");
}

TEST(MathScorer, Units) {
  EXPECT_TRUE(equiv("10\\text{ cm}", "10"));          // 8 keeps what precedes "\text{ "
  EXPECT_TRUE(equiv("10 \\text{ inches}", "10"));     // ... then 13 removes the space
  EXPECT_FALSE(equiv("10\\text{cm}", "10"));          // without the space after "{" nothing is removed
  EXPECT_EQ(math_remove_right_units("5\\text{ m}"), "5");
  // Two "\text{ " fail verl's assert: strip_string raises and is_equiv compares the raw strings.
  EXPECT_EQ(math_remove_right_units("5\\text{ m}\\text{ s}"), std::nullopt);
  EXPECT_EQ(math_strip_string("5\\text{ m}\\text{ s}"), std::nullopt);
  EXPECT_FALSE(equiv("5\\text{ m}\\text{ s}", "5"));
  EXPECT_TRUE(equiv("5\\text{ m}\\text{ s}", "5\\text{ m}\\text{ s}"));
}

TEST(MathScorer, TextIsNotUnwrapped) {
  // hendrycks normalisation only strips "\text{ " units on the right; \text{...} elsewhere stays.
  EXPECT_FALSE(equiv("\\text{(A)}", "(A)"));
  EXPECT_TRUE(equiv("\\text{(A)}", "\\text{(A)}"));
  EXPECT_TRUE(equiv("\\text{Monday}", "\\text{Monday}"));
  EXPECT_TRUE(equiv("x\\text{ apples}", "x"));
}

TEST(MathScorer, PercentDollarsDegrees) {
  EXPECT_TRUE(equiv("50\\%", "50"));         // 9
  EXPECT_TRUE(equiv("50\\\\%", "50"));       // 3 turns "\\%" into "\%", 9 removes it
  EXPECT_FALSE(equiv("50%", "50"));          // a bare % is kept
  EXPECT_TRUE(equiv("\\$5", "5"));           // 7
  EXPECT_FALSE(equiv("$5", "5"));            // a bare $ is kept
  EXPECT_TRUE(equiv("90^\\circ", "90"));     // 6
  EXPECT_TRUE(equiv("90^{\\circ}", "90"));
  EXPECT_FALSE(equiv("90\\circ", "90"));
}

TEST(MathScorer, SlashFractions) {
  EXPECT_TRUE(equiv("3/4", "\\frac{3}{4}"));
  EXPECT_TRUE(equiv("-3/4", "\\frac{-3}{4}"));
  EXPECT_EQ(math_fix_a_slash_b("10/-2"), "\\frac{10}{-2}");
  // int("03") == 3 and "3/4" != "03/4": Python keeps the text. Likewise "+3", "-0", "1_0" and non-integers.
  EXPECT_EQ(math_fix_a_slash_b("03/4"), "03/4");
  EXPECT_EQ(math_fix_a_slash_b("+3/4"), "+3/4");
  EXPECT_EQ(math_fix_a_slash_b("-0/4"), "-0/4");
  EXPECT_EQ(math_fix_a_slash_b("1_0/4"), "1_0/4");
  EXPECT_EQ(math_fix_a_slash_b("0/4"), "\\frac{0}{4}");
  EXPECT_EQ(math_fix_a_slash_b("x/4"), "x/4");
  EXPECT_EQ(math_fix_a_slash_b("1/2/3"), "1/2/3");
  EXPECT_EQ(math_fix_a_slash_b("1.5/2"), "1.5/2");
  EXPECT_FALSE(equiv("03/4", "\\frac{3}{4}"));
}

TEST(MathScorer, LeftRightAndSpacing) {
  EXPECT_TRUE(equiv("\\left(1,2\\right)", "(1,2)"));            // 5, then 13
  EXPECT_TRUE(equiv("\\left[ 2, 5 \\right)", "[2,5)"));
  EXPECT_TRUE(equiv("1\\!000", "1000"));                         // 2
  EXPECT_TRUE(equiv("1\n2", "12"));                              // 1
  EXPECT_FALSE(equiv("1,000", "1000"));                          // commas are kept
  EXPECT_FALSE(equiv("\\pi", "3.14"));
}

TEST(MathScorer, ShortLeftSideOfEquals) {
  EXPECT_TRUE(equiv("x = 5", "5"));           // 11: "x " has 2 characters
  EXPECT_FALSE(equiv("xyz = 5", "5"));        // 4 characters: kept
  EXPECT_FALSE(equiv("a=b=5", "5"));          // three parts: kept
  // len() counts code points: "éé" is 2 characters (4 bytes), so the left side goes.
  EXPECT_EQ(math_strip_string("\xC3\xA9\xC3\xA9=5"), "5");
  EXPECT_EQ(math_strip_string("abc=5"), "abc=5");
}

TEST(MathScorer, StripStringRaisesLikePython) {
  // "\sqrt" or "\frac" at the very end: split(...)[k][0] raises IndexError in verl.
  EXPECT_EQ(math_strip_string("2\\sqrt"), std::nullopt);
  EXPECT_EQ(math_strip_string("1+\\frac"), std::nullopt);
  EXPECT_TRUE(equiv("2\\sqrt", "2\\sqrt"));    // falls back to raw equality
  EXPECT_FALSE(equiv("2\\sqrt", "2 \\sqrt"));  // raw strings differ
  EXPECT_EQ(math_strip_string(""), "");
  EXPECT_TRUE(math_is_equiv(std::nullopt, std::nullopt));
  EXPECT_FALSE(math_is_equiv(std::string("1"), std::nullopt));
}

TEST(MathScorer, LastBoxedOnlyString) {
  EXPECT_EQ(math_last_boxed_only_string("so $\\boxed{\\frac{1}{2}}$."), "\\boxed{\\frac{1}{2}}");
  EXPECT_EQ(math_last_boxed_only_string("\\boxed{1} then \\boxed{2}"), "\\boxed{2}");
  EXPECT_EQ(math_last_boxed_only_string("\\boxed{\\{1,2\\}}"), "\\boxed{\\{1,2\\}}");  // \{ counts as a brace
  EXPECT_EQ(math_last_boxed_only_string("\\boxed{5"), std::nullopt);                 // never closed
  EXPECT_EQ(math_last_boxed_only_string("no box"), std::nullopt);
  EXPECT_EQ(math_last_boxed_only_string("\\fbox{5}"), "\\fbox{5}");
  // The space form wins whenever "\boxed " appears: text after the last one, up to the next "$".
  EXPECT_EQ(math_last_boxed_only_string("so \\boxed 5$ and"), "\\boxed 5");
  EXPECT_EQ(math_last_boxed_only_string("\\boxed 3 and \\boxed{4}"), "\\boxed 3 and \\boxed{4}");
  EXPECT_EQ(math_remove_boxed("\\boxed{\\frac{1}{2}}"), "\\frac{1}{2}");
  EXPECT_EQ(math_remove_boxed("\\boxed 5"), "5");
  EXPECT_EQ(math_remove_boxed("\\fbox{5}"), std::nullopt);  // assert s.startswith("\boxed{") fails
}

TEST(MathScorer, ComputeScore) {
  EXPECT_EQ(math_compute_score("Thus $\\boxed{\\dfrac{1}{2}}$.", "\\frac{1}{2}"), 1.0);
  EXPECT_EQ(math_compute_score("Thus $\\boxed{0.5}$.", "\\frac{1}{2}"), 1.0);
  EXPECT_EQ(math_compute_score("\\boxed{1} then \\boxed{2}", "2"), 1.0);
  EXPECT_EQ(math_compute_score("\\boxed{1} then \\boxed{2}", "1"), 0.0);
  EXPECT_EQ(math_compute_score("The answer is 2.", "2"), 0.0);              // no box
  EXPECT_EQ(math_compute_score("\\fbox{5}", "5"), 0.0);                     // remove_boxed asserts -> 0
  EXPECT_EQ(math_compute_score("\\boxedx{5}", "5"), 0.0);                   // "\boxedx{5}" fails the assert
  EXPECT_EQ(math_compute_score("so \\boxed 5$ and", "5"), 1.0);
  EXPECT_EQ(math_compute_score("\\boxed 3 and \\boxed{4}", "4"), 0.0);      // answer "3 and \boxed{4}"
  EXPECT_EQ(math_compute_score("$\\boxed{10\\text{ cm}}$", "10"), 1.0);
  EXPECT_EQ(math_compute_score("$\\boxed{90^\\circ}$", "90"), 1.0);
  EXPECT_EQ(math_compute_score("$\\boxed{\\left(3, \\frac12\\right)}$", "(3,\\frac{1}{2})"), 1.0);
  // No clip in this scorer: a box 1000 characters back still counts.
  EXPECT_EQ(math_compute_score("\\boxed{7}" + std::string(1000, ' '), "7"), 1.0);
  for (const char* source : {"lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500"}) {
    const ScoreResult result = default_compute_score(source, "so \\boxed{\\frac34}", "3/4");
    EXPECT_EQ(result.score, 1.0) << source;
    EXPECT_FALSE(result.is_dict);
  }
}

}  // namespace
}  // namespace verl::reward
