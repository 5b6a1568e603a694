// Overrides and file merging: each value type, lists, +key, unknown keys, type errors, precedence.
#include <gtest/gtest.h>

#include <cmath>

#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"

namespace verl::config {
namespace {

using verl::test::error_of;

Node compose(std::vector<std::string> overrides, std::optional<std::string> file = std::nullopt) {
  ConfigArgs args;
  args.overrides = std::move(overrides);
  args.config_file = std::move(file);
  return resolve_interpolations(compose_config(args));
}

const Node& at(const Node& root, const std::string& path) {
  const Node* node = find_path(root, path);
  if (node == nullptr) throw std::runtime_error("missing " + path);
  return *node;
}

TEST(ConfigOverrides, IntValue) {
  Node root = compose({"data.train_batch_size=64"});
  EXPECT_EQ(at(root, "data.train_batch_size"), Node::integer(64));
}

TEST(ConfigOverrides, FloatValuesIncludingExponentWithoutDot) {
  Node root = compose({"actor_rollout_ref.actor.optim.lr=1e-6", "actor_rollout_ref.actor.clip_ratio=0.28"});
  EXPECT_EQ(at(root, "actor_rollout_ref.actor.optim.lr").kind(), Kind::Float);
  EXPECT_DOUBLE_EQ(at(root, "actor_rollout_ref.actor.optim.lr").as_double(), 1e-6);
  EXPECT_DOUBLE_EQ(at(root, "actor_rollout_ref.actor.clip_ratio").as_double(), 0.28);
}

TEST(ConfigOverrides, IntGivenForFloatKeyBecomesFloat) {
  Node root = compose({"algorithm.gamma=1"});
  EXPECT_EQ(at(root, "algorithm.gamma"), Node::floating(1.0));
}

TEST(ConfigOverrides, BoolValueInHydraSpellings) {
  EXPECT_EQ(at(compose({"data.shuffle=false"}), "data.shuffle"), Node::boolean(false));
  EXPECT_EQ(at(compose({"data.shuffle=False"}), "data.shuffle"), Node::boolean(false));
  EXPECT_EQ(at(compose({"trainer.val_only=True"}), "trainer.val_only"), Node::boolean(true));
}

TEST(ConfigOverrides, StringValueKeepsItsSpellingEvenWhenNumeric) {
  EXPECT_EQ(at(compose({"trainer.experiment_name=run_7"}), "trainer.experiment_name"), Node::string("run_7"));
  EXPECT_EQ(at(compose({"trainer.experiment_name=007"}), "trainer.experiment_name"), Node::string("007"));
  EXPECT_EQ(at(compose({"trainer.experiment_name='a b'"}), "trainer.experiment_name"), Node::string("a b"));
}

TEST(ConfigOverrides, NullValue) {
  Node root = compose({"data.seed=7"});
  EXPECT_EQ(at(root, "data.seed"), Node::integer(7));
  root = compose({"data.seed=7", "data.seed=null"});
  EXPECT_TRUE(at(root, "data.seed").is_null());
}

TEST(ConfigOverrides, ListValues) {
  Node root = compose({"trainer.logger=[console,jsonl]", "actor_rollout_ref.actor.optim.betas=[0.8, 0.95]"});
  EXPECT_EQ(at(root, "trainer.logger"), Node::list({Node::string("console"), Node::string("jsonl")}));
  EXPECT_EQ(at(root, "actor_rollout_ref.actor.optim.betas"), Node::list({Node::floating(0.8), Node::floating(0.95)}));
  // A single value for a list key is the one-element list, as verl's trainer.logger=console is.
  EXPECT_EQ(at(compose({"trainer.logger=html"}), "trainer.logger"), Node::list({Node::string("html")}));
}

TEST(ConfigOverrides, MapValueMergesIntoDefaults) {
  Node root = compose({"algorithm.kl_ctrl={type: adaptive, target_kl: 0.2}"});
  EXPECT_EQ(at(root, "algorithm.kl_ctrl.type"), Node::string("adaptive"));
  EXPECT_DOUBLE_EQ(at(root, "algorithm.kl_ctrl.target_kl").as_double(), 0.2);
  EXPECT_EQ(at(root, "algorithm.kl_ctrl.horizon"), Node::integer(10000));
}

TEST(ConfigOverrides, PlusAddsNewKeyAndRefusesExistingOne) {
  Node root = compose({"+data.custom_flag=3"});
  EXPECT_EQ(at(root, "data.custom_flag"), Node::integer(3));
  std::string message = error_of([] { compose({"+data.seed=1"}); });
  EXPECT_NE(message.find("already exists"), std::string::npos) << message;
  Node forced = compose({"++data.seed=5"});
  EXPECT_EQ(at(forced, "data.seed"), Node::integer(5));
}

TEST(ConfigOverrides, AddedKeyThatNothingReadsIsAnErrorWhenTyped) {
  ConfigArgs args;
  args.overrides = {"+data.custom_flag=3"};
  std::string message = error_of([&] { load_config(args); });
  EXPECT_NE(message.find("'data.custom_flag' is not used"), std::string::npos) << message;
}

TEST(ConfigOverrides, TildeRemovesKey) {
  Node root = compose({"~trainer.num_cpu_threads"});
  EXPECT_EQ(find_path(root, "trainer.num_cpu_threads"), nullptr);
}

TEST(ConfigOverrides, UnknownKeySuggestsClosest) {
  std::string message = error_of([] { compose({"actor_rollout_ref.actor.optim.lrr=1"}); });
  EXPECT_NE(message.find("unknown config key 'actor_rollout_ref.actor.optim.lrr'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'actor_rollout_ref.actor.optim.lr'"), std::string::npos) << message;

  message = error_of([] { compose({"trainr.total_epochs=3"}); });
  EXPECT_NE(message.find("did you mean 'trainer.total_epochs'"), std::string::npos) << message;
}

TEST(ConfigOverrides, TypeErrorNamesKeyExpectedTypeAndValue) {
  std::string message = error_of([] { compose({"data.train_batch_size=abc"}); });
  EXPECT_NE(message.find("config key 'data.train_batch_size' expects int, got string 'abc'"), std::string::npos)
      << message;
  message = error_of([] { compose({"trainer.total_epochs=2.5"}); });
  EXPECT_NE(message.find("expects int, got float '2.5'"), std::string::npos) << message;
  message = error_of([] { compose({"data.shuffle=1"}); });
  EXPECT_NE(message.find("expects bool, got int '1'"), std::string::npos) << message;
  message = error_of([] { compose({"algorithm.kl_ctrl=3"}); });
  EXPECT_NE(message.find("expects map"), std::string::npos) << message;
}

TEST(ConfigOverrides, InterpolatedDefaultIsTypedByItsTarget) {
  // critic.ppo_epochs defaults to ${actor_rollout_ref.actor.ppo_epochs}, an int.
  std::string message = error_of([] { compose({"critic.ppo_epochs=x"}); });
  EXPECT_NE(message.find("expects int"), std::string::npos) << message;
  EXPECT_EQ(at(compose({"critic.ppo_epochs=3"}), "critic.ppo_epochs"), Node::integer(3));
}

TEST(ConfigOverrides, MalformedOverrideIsAnError) {
  EXPECT_NE(error_of([] { parse_override("a..b=1"); }).find("not a key path"), std::string::npos);
  EXPECT_NE(error_of([] { parse_override("+novalue"); }).find("has no '='"), std::string::npos);
}

TEST(ConfigFile, FileThenOverridePrecedence) {
  const std::string dir = test::make_temp_dir("config_file");
  const std::string file = dir + "/run.yaml";
  test::write_file(file,
                   "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-5\n"
                   "trainer:\n  total_epochs: 4\n  project_name: from_file\n");
  Node from_file = compose({}, file);
  EXPECT_DOUBLE_EQ(at(from_file, "actor_rollout_ref.actor.optim.lr").as_double(), 1e-5);
  EXPECT_EQ(at(from_file, "trainer.total_epochs"), Node::integer(4));
  // Keys the file does not mention keep their defaults.
  EXPECT_DOUBLE_EQ(at(from_file, "actor_rollout_ref.actor.optim.weight_decay").as_double(), 0.01);

  Node both = compose({"actor_rollout_ref.actor.optim.lr=2e-5"}, file);
  EXPECT_DOUBLE_EQ(at(both, "actor_rollout_ref.actor.optim.lr").as_double(), 2e-5);
  EXPECT_EQ(at(both, "trainer.total_epochs"), Node::integer(4));
  // Interpolations see the merged values.
  EXPECT_EQ(at(both, "trainer.default_local_dir"), Node::string("checkpoints/from_file/gsm8k"));
}

TEST(ConfigFile, UnknownKeyInFileNamesTheFile) {
  const std::string dir = test::make_temp_dir("config_file_bad");
  const std::string file = dir + "/bad.yaml";
  test::write_file(file, "trainer:\n  total_epoch: 4\n");
  std::string message = error_of([&] { compose({}, file); });
  EXPECT_NE(message.find("bad.yaml"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'trainer.total_epochs'"), std::string::npos) << message;
}

TEST(ConfigFile, MissingOrCorruptFileIsAnError) {
  EXPECT_NE(error_of([] { compose({}, std::string("/nonexistent/x.yaml")); }).find("cannot open config file"),
            std::string::npos);
  const std::string dir = test::make_temp_dir("config_file_corrupt");
  test::write_file(dir + "/c.yaml", "trainer: [unclosed\n");
  EXPECT_NE(error_of([&] { compose({}, dir + "/c.yaml"); }).find("not valid YAML"), std::string::npos);
  test::write_file(dir + "/l.yaml", "- a\n- b\n");
  EXPECT_NE(error_of([&] { compose({}, dir + "/l.yaml"); }).find("expected a YAML mapping"), std::string::npos);
}

// Fuzz finding (fuzz/findings/overrides): '+' keys of hundreds of parts add one path per prefix, and a missing
// key of kilobytes was compared with every one of them (length^2 cells each); such a key gets no suggestion.
TEST(ConfigOverrides, KilobyteMissingKeyAfterLongAddedPathsGetsNoSuggestion) {
  std::string added = "x0";
  for (int i = 1; i < 600; ++i) added += ".x" + std::to_string(i);
  Node root = parse_yaml("trainer:\n  project_name: p\n", "base.yaml");
  apply_override(root, parse_override("+" + added + "=1"));
  std::string missing = added + ".y=2";
  std::string message = error_of([&] { apply_override(root, parse_override(missing)); });
  EXPECT_NE(message.find("unknown config key"), std::string::npos) << message;
  EXPECT_EQ(message.find("did you mean"), std::string::npos) << message.substr(0, 200);
}

}  // namespace
}  // namespace verl::config
