// The YAML reader's limits: nesting depth, alias cycles, nodes after alias expansion, number length; and the
// interpolation resolver's (reference chains, string growth). Each is one verl::Error naming the source,
// the key and the limit.
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"

namespace verl::config {
namespace {

template <typename F>
std::string yaml_limits_error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(YamlLimits, AliasOfANodeThatContainsItIsACycle) {
  EXPECT_NE(yaml_limits_error_of([] {
              parse_yaml("a: &x [1, *x]\n", "c.yaml");
            }).find("c.yaml: 'a[1]' is an alias of a node that contains it (a cycle)"),
            std::string::npos);
  EXPECT_NE(yaml_limits_error_of([] { parse_yaml("a: &x\n  b:\n    c: *x\n", "c.yaml"); }).find("'a.b.c'"),
            std::string::npos);
  // An alias of a finished anchor is fine, also twice.
  Node root = parse_yaml("a: &x {k: 1}\nb: *x\nc: [*x, *x]\n", "c.yaml");
  EXPECT_EQ(root.find("b")->find("k")->as_int(), 1);
  EXPECT_EQ(root.find("c")->items().size(), 2u);
}

TEST(YamlLimits, ExpandedNodesAreBounded) {
  // 4 + 4^2 + ... nodes: a3 alone expands to 4^4 = 256 leaves; a9 to 4^10 ~ 1M, beyond 100000.
  std::string text = "a0: &a0 [x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev + ", " + prev + ", " + prev + ", " +
            prev + "]\n";
  }
  const std::string e = yaml_limits_error_of([&] { parse_yaml(text, "laughs.yaml"); });
  EXPECT_NE(e.find("laughs.yaml: more than 100000 nodes after expanding aliases"), std::string::npos) << e;
  EXPECT_NE(e.find("limit 100000"), std::string::npos) << e;
  // The first six levels expand to 4 + 16 + ... + 4^7 nodes (< 30000): accepted.
  const std::string small = text.substr(0, text.find("a7:"));
  EXPECT_EQ(yaml_limits_error_of([&] { parse_yaml(small, "ok.yaml"); }), "");
}

TEST(YamlLimits, NestingDepth) {
  auto nested = [](int depth) { return "a: " + std::string(depth, '[') + std::string(depth, ']') + "\n"; };
  EXPECT_EQ(yaml_limits_error_of([&] { parse_yaml(nested(255), "d.yaml"); }), "");
  std::string e = yaml_limits_error_of([&] { parse_yaml(nested(256), "d.yaml"); });
  EXPECT_NE(e.find("d.yaml: 'a[0][0]"), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("nested deeper than 256 levels (limit 256)"), std::string::npos) << e.substr(0, 300);
  // Deeper than yaml-cpp's own recursion guard: its exception, reworded with the position.
  e = yaml_limits_error_of([&] { parse_yaml(nested(5000), "d.yaml"); });
  EXPECT_NE(e.find("d.yaml: nested deeper than 256 levels at line 1"), std::string::npos) << e;
}

TEST(YamlLimits, NumberLength) {
  const std::string digits(300, '1');
  std::string e = yaml_limits_error_of([&] { parse_yaml("x:\n  y: " + digits + "\n", "n.yaml"); });
  EXPECT_NE(e.find("n.yaml at 'x.y': a number of 300 characters, '1111111111111111111111111111111111111111..."),
            std::string::npos) << e;
  EXPECT_NE(e.find("(limit 256)"), std::string::npos) << e;
  EXPECT_NE(yaml_limits_error_of([&] { parse_plain_scalar("-." + digits + "e5"); }).find("a number of 304 characters"),
            std::string::npos);
  // Up to the limit a number is read (beyond int64 as text, as before); quoted digits stay a string.
  EXPECT_EQ(parse_plain_scalar(std::string(256, '1')), Node::string(std::string(256, '1')));
  EXPECT_EQ(parse_yaml("x: '" + digits + "'\n", "q.yaml").find("x")->as_string(), digits);
  // The hand-written matcher types what the old regular expressions typed.
  EXPECT_EQ(parse_plain_scalar("+7"), Node::integer(7));
  EXPECT_EQ(parse_plain_scalar("1."), Node::floating(1.0));
  EXPECT_EQ(parse_plain_scalar("-.5E-1"), Node::floating(-0.05));
  EXPECT_EQ(parse_plain_scalar("1e5"), Node::floating(1e5));
  for (const char* text : {".", "-", "e5", "1e", "1e+", "1.2.3", "0x10", "1_000", "+-1"})
    EXPECT_EQ(parse_plain_scalar(text), Node::string(text)) << text;
}

TEST(YamlLimits, LongNumberInAnOverrideNamesTheKey) {
  const std::string e =
      yaml_limits_error_of([&] { parse_override("trainer.total_epochs=" + std::string(20000, '5')); });
  EXPECT_NE(e.find("override trainer.total_epochs: a number of 20000 characters"), std::string::npos) << e;
  EXPECT_LT(e.size(), 300u);  // the value is shown as an excerpt
}

TEST(YamlLimits, InterpolationChainsAndGrowthAreBounded) {
  // k0 -> k1 -> ... -> k299: deeper than 256 references.
  std::string chain;
  for (int i = 0; i < 299; ++i) chain += "k" + std::to_string(i) + ": ${k" + std::to_string(i + 1) + "}\n";
  chain += "k299: 1\n";
  std::string e = yaml_limits_error_of([&] { resolve_interpolations(parse_yaml(chain, "chain.yaml")); });
  EXPECT_NE(e.find("interpolations refer through more than 256 keys (limit 256)"), std::string::npos) << e;
  // Each level doubles: 2^30 characters unless stopped.
  std::string doubling = "s0: xxxxxxxx\n";
  for (int i = 1; i <= 30; ++i)
    doubling += "s" + std::to_string(i) + ": ${s" + std::to_string(i - 1) + "}${s" + std::to_string(i - 1) + "}\n";
  e = yaml_limits_error_of([&] { resolve_interpolations(parse_yaml(doubling, "double.yaml")); });
  EXPECT_NE(e.find("interpolation makes a string longer than 1048576 characters (limit 1048576)"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace verl::config
