// verl 0.9.1 reads a reward model's switch and folder from reward.reward_model.{enable, model_path} and the reward
// workers from reward.num_workers; its migration copies the legacy reward_model.* keys over them when they are set.
// For each set of command-line keys, verl.cpp's config must give what verl's own migrate_legacy_reward_impl gives
// (run live by tests/oracle/reward_key_migration_oracle.py on verl's generated trainer config).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/config/config_loader.h"

namespace verl::test {
namespace {

const std::string kRewardKeyMigrationOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/reward_key_migration_oracle.py";
const std::string kVerlTrainerYaml = VERL_SOURCE_DIR_FOR_TESTS "/tests/data/verl/_generated_ppo_trainer.yaml";

TEST(RewardKeyMigrationOracle, ReadsTheRewardModelWhereVerlsMigrationLeavesIt) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"reward.reward_model.enable=true", "reward.reward_model.model_path=/rm/new"},  // verl 0.9.1's keys
      {"reward_model.enable=true", "reward_model.model.path=/rm/legacy"},             // verl <= 0.8's keys
      {"reward.reward_model.enable=true", "reward_model.model.path=/rm/legacy"},      // one of each
      // both given: the legacy key wins, an explicit false included
      {"reward.reward_model.enable=true", "reward_model.enable=false", "reward.reward_model.model_path=/rm/new",
       "reward_model.model.path=/rm/legacy"},
      {"reward_model.enable=true", "reward.reward_model.enable=false", "reward.reward_model.model_path=/rm/new"},
      {"reward.num_workers=3"},
      {"reward.num_workers=3", "reward_model.num_workers=5"},
  };
  for (const auto& overrides : cases) {
    std::string command = test_python() + kRewardKeyMigrationOracle + " " + kVerlTrainerYaml;
    for (const auto& o : overrides) command += " " + o;
    const CommandResult r = run_command(command);
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
    const nlohmann::json verl = nlohmann::json::parse(r.out);

    config::ConfigArgs args;
    args.overrides = overrides;
    const config::RewardModelConfig ours = config::load_config(args).ppo.reward_model;
    std::string joined;
    for (const auto& o : overrides) joined += o + " ";
    EXPECT_EQ(ours.enable, verl.at("enable").get<bool>()) << joined;
    if (ours.enable) EXPECT_EQ(ours.path, verl.at("model_path").get<std::string>()) << joined;
    EXPECT_EQ(ours.num_workers, verl.at("num_workers").get<int64_t>()) << joined;
  }
}

}  // namespace
}  // namespace verl::test
