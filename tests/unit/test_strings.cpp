#include <gtest/gtest.h>

#include <cstdlib>

#include "verl/common/strings.h"

namespace verl {
namespace {

TEST(Strings, EditDistanceMatchesHandCounts) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("lr", "lrr"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(Strings, ClosestMatchPicksNearestWithinLimit) {
  EXPECT_EQ(closest_match("lrr", {"lr", "betas", "weight_decay"}), "lr");
  EXPECT_EQ(closest_match("zzzzzzzz", {"lr", "betas"}), "");
}

TEST(Strings, ContainsMatchesWholeItemsOnly) {
  const std::vector<std::string> items = {"model", "optimizer", ""};
  EXPECT_TRUE(contains(items, "optimizer"));
  EXPECT_TRUE(contains(items, ""));
  EXPECT_FALSE(contains(items, "optim"));
  EXPECT_FALSE(contains({}, "model"));
}

TEST(Strings, ShortestRoundTripTakesTheFewestDigitsThatReadBack) {
  EXPECT_EQ(shortest_round_trip(0.1), "0.1");
  EXPECT_EQ(shortest_round_trip(3.0), "3");
  EXPECT_EQ(shortest_round_trip(-2.5e-6), "-2.5e-06");
  EXPECT_EQ(shortest_round_trip(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(shortest_round_trip(5e-324), "5e-324");
  for (double v : {1.0 / 3.0, 1e300, -7.25, 123456789.0}) {
    EXPECT_EQ(std::strtod(shortest_round_trip(v).c_str(), nullptr), v);
  }
}

TEST(Strings, FormatDoubleYamlRoundTripsAndIsAFloatToYaml11) {
  EXPECT_EQ(format_double_yaml(3e-6), "3.0e-06");
  EXPECT_EQ(format_double_yaml(0.001), "0.001");
  EXPECT_EQ(format_double_yaml(1.0), "1.0");
  EXPECT_EQ(format_double_yaml(-2.5), "-2.5");
  EXPECT_EQ(format_double_yaml(1e20), "1.0e+20");
  const double samples[] = {0.1, 1.0 / 3.0, 2e-308, 123456789.125, 0.999};
  for (double value : samples) {
    EXPECT_EQ(std::strtod(format_double_yaml(value).c_str(), nullptr), value);
  }
}

TEST(Strings, SplitJoinTrim) {
  EXPECT_EQ(split("a.b.c", '.'), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split("", '.'), (std::vector<std::string>{""}));
  EXPECT_EQ(join({"a", "b"}, ", "), "a, b");
  EXPECT_EQ(trim("  x y \n"), "x y");
}

}  // namespace
}  // namespace verl
