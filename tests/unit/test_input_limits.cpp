// check_json_limits: the nesting and number-length limits every JSON reader applies before parsing.
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl {
namespace {

std::string input_limits_error_of(const std::string& text) {
  try {
    check_json_limits(text, "f.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string input_limits_nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(InputLimits, NestingUpTo256LevelsPassesAndOneMoreFailsNamingThePlace) {
  EXPECT_EQ(input_limits_error_of(input_limits_nested(256)), "");
  EXPECT_EQ(input_limits_error_of("{\"a\":\n  " + input_limits_nested(255) + "}"), "");
  const std::string e = input_limits_error_of("{\"a\":\n  " + input_limits_nested(256) + "}");
  // The 257th open bracket: line 2, after two spaces and 255 brackets.
  EXPECT_NE(e.find("[json] f.json: arrays/objects nested deeper than 256 levels at line 2, column 258 (limit 256)"),
            std::string::npos) << e;
}

TEST(InputLimits, SiblingsDoNotAddUp) {
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += (i ? "," : "") + input_limits_nested(200);
  EXPECT_EQ(input_limits_error_of(wide + "]"), "");
}

TEST(InputLimits, BracketsInsideStringsAreText) {
  const std::string brackets(10000, '[');
  EXPECT_EQ(input_limits_error_of("{\"a\": \"" + brackets + "\"}"), "");
  // An escaped quote does not end the string; an escaped backslash before the quote does.
  EXPECT_EQ(input_limits_error_of("[\"\\\"" + brackets + "\"]"), "");
  EXPECT_NE(input_limits_error_of("[\"\\\\\"" + input_limits_nested(300) + "]"), "");
}

TEST(InputLimits, NumbersUpTo256CharactersPassAndLongerFail) {
  EXPECT_EQ(input_limits_error_of("[" + std::string(256, '7') + "]"), "");
  EXPECT_EQ(
      input_limits_error_of("[-1.5e-300, 0.1000000000000000055511151231257827021181583404541015625, true, false]"), "");
  const std::string e = input_limits_error_of("{\"x\": 1,\n \"y\": " + std::string(50000, '9') + "}");
  EXPECT_NE(e.find("f.json: a number longer than 256 characters at line 2, column 7 (limit 256)"), std::string::npos)
      << e;
  EXPECT_EQ(input_limits_error_of("[\"" + std::string(50000, '9') + "\"]"), "");  // a string of digits is not a number
}

}  // namespace
}  // namespace verl
