#include <gtest/gtest.h>

#include <cmath>

#include "verl/config/yaml_io.h"

namespace verl::config {
namespace {

TEST(ConfigYaml, PlainScalarTyping) {
  EXPECT_EQ(parse_plain_scalar("12"), Node::integer(12));
  EXPECT_EQ(parse_plain_scalar("-3"), Node::integer(-3));
  EXPECT_EQ(parse_plain_scalar("1e-6"), Node::floating(1e-6));
  EXPECT_EQ(parse_plain_scalar("3E+2"), Node::floating(300.0));
  EXPECT_EQ(parse_plain_scalar(".5"), Node::floating(0.5));
  EXPECT_EQ(parse_plain_scalar("true"), Node::boolean(true));
  EXPECT_EQ(parse_plain_scalar("FALSE"), Node::boolean(false));
  EXPECT_TRUE(parse_plain_scalar("null").is_null());
  EXPECT_TRUE(parse_plain_scalar("~").is_null());
  EXPECT_EQ(parse_plain_scalar("~/models/x"), Node::string("~/models/x"));
  EXPECT_EQ(parse_plain_scalar("token-mean"), Node::string("token-mean"));
  EXPECT_TRUE(std::isinf(parse_plain_scalar(".inf").as_double()));
}

TEST(ConfigYaml, QuotedScalarsAreStrings) {
  Node root = parse_yaml("a: '12'\nb: \"true\"\nc: 12\n", "test");
  EXPECT_EQ(*root.find("a"), Node::string("12"));
  EXPECT_EQ(*root.find("b"), Node::string("true"));
  EXPECT_EQ(*root.find("c"), Node::integer(12));
}

TEST(ConfigYaml, EmitThenParseRoundTripsEveryKind) {
  Node root = Node::map();
  root.set("i", Node::integer(-7));
  root.set("f", Node::floating(3e-6));
  root.set("whole_float", Node::floating(2.0));
  root.set("b", Node::boolean(true));
  root.set("n", Node::null());
  root.set("s_numeric", Node::string("123"));
  root.set("s_bool", Node::string("false"));
  root.set("s_null", Node::string("null"));
  root.set("s_empty", Node::string(""));
  root.set("s_colon", Node::string("a: b"));
  root.set("s_hash", Node::string("x #y"));
  root.set("s_dash", Node::string("-x"));
  root.set("s_path", Node::string("~/data/x.parquet"));
  root.set("list", Node::list({Node::string("a"), Node::integer(1), Node::floating(0.5)}));
  Node nested = Node::map();
  nested.set("deep", Node::list({Node::map()}));
  root.set("nested", nested);
  root.set("empty_map", Node::map());
  const std::string text = to_yaml(root);
  EXPECT_EQ(parse_yaml(text, "emitted"), root) << text;
  EXPECT_NE(text.find("f: 3.0e-06"), std::string::npos) << text;
  EXPECT_NE(text.find("n: null"), std::string::npos) << text;
}

TEST(ConfigYaml, DuplicateAndDottedKeysAreErrors) {
  EXPECT_ANY_THROW(parse_yaml("a: 1\na: 2\n", "dup.yaml"));
  EXPECT_ANY_THROW(parse_yaml("a.b: 1\n", "dot.yaml"));
}

}  // namespace
}  // namespace verl::config
