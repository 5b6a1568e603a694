#include <gtest/gtest.h>

#include <cstdlib>

#include "verl/common/error.h"
#include "verl/config/interpolation.h"
#include "verl/config/yaml_io.h"

namespace verl::config {
namespace {

Node resolve_text(const std::string& yaml) { return resolve_interpolations(parse_yaml(yaml, "test")); }

TEST(ConfigInterpolation, AbsoluteReferenceInsideText) {
  Node root = resolve_text(
      "trainer:\n  project_name: p\n  experiment_name: e\n"
      "  default_local_dir: checkpoints/${trainer.project_name}/${trainer.experiment_name}\n");
  EXPECT_EQ(*find_path(root, "trainer.default_local_dir"), Node::string("checkpoints/p/e"));
}

TEST(ConfigInterpolation, WholeValueReferenceKeepsType) {
  Node root = resolve_text("a:\n  n: 4\n  xs: [1, 2]\nb:\n  n: ${a.n}\n  xs: ${a.xs}\n  text: n=${a.n}\n");
  EXPECT_EQ(*find_path(root, "b.n"), Node::integer(4));
  EXPECT_EQ(*find_path(root, "b.xs"), Node::list({Node::integer(1), Node::integer(2)}));
  EXPECT_EQ(*find_path(root, "b.text"), Node::string("n=4"));
}

TEST(ConfigInterpolation, ChainsAndRelativeReferences) {
  Node root = resolve_text("a:\n  x: 1\n  y: ${.x}\n  z: ${..c}\nc: ${a.x}\n");
  EXPECT_EQ(*find_path(root, "a.y"), Node::integer(1));
  EXPECT_EQ(*find_path(root, "a.z"), Node::integer(1));
  EXPECT_EQ(*find_path(root, "c"), Node::integer(1));
}

TEST(ConfigInterpolation, EnvironmentWithFallback) {
  ::setenv("VERL_TEST_INTERP", "hello", 1);
  Node root = resolve_text("a: ${oc.env:VERL_TEST_INTERP}\nb: ${oc.env:VERL_TEST_UNSET_VAR,fallback}\n");
  EXPECT_EQ(*find_path(root, "a"), Node::string("hello"));
  EXPECT_EQ(*find_path(root, "b"), Node::string("fallback"));
  EXPECT_THROW(resolve_text("a: ${oc.env:VERL_TEST_UNSET_VAR}\n"), Error);
}

TEST(ConfigInterpolation, EscapedReferenceStaysLiteral) {
  Node root = resolve_text("a: 'cost \\${x}'\n");
  EXPECT_EQ(*find_path(root, "a"), Node::string("cost ${x}"));
}

TEST(ConfigInterpolation, MissingTargetAndCyclesAreErrors) {
  try {
    resolve_text("a: ${b.c}\n");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'b.c' does not exist"), std::string::npos) << e.what();
  }
  try {
    resolve_text("a: ${b}\nb: ${a}\n");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(ConfigInterpolation, ExpectedKindFollowsReferences) {
  Node root = parse_yaml("a: 1\nb: ${a}\nc: x${a}\nd: ${b}\n", "test");
  EXPECT_EQ(expected_kind(root, "b"), Kind::Int);
  EXPECT_EQ(expected_kind(root, "d"), Kind::Int);
  EXPECT_EQ(expected_kind(root, "c"), Kind::String);
}

}  // namespace
}  // namespace verl::config
