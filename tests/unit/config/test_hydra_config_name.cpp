// Hydra's --config-path / --config-name, as verl's scripts pass them: a user YAML whose `defaults:` list names
// ppo_trainer (verl's own config: the built-in defaults), other files of the folder and _self_.
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"

namespace verl::test {
namespace {

using config::find_path;
using config::Node;

config::LoadedConfig load_args(const std::vector<std::string>& args) {
  return config::load_config(config::parse_config_args(args));
}

std::string error_of_args(const std::vector<std::string>& args) {
  try {
    load_args(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// verl's examples/sglang_multiturn/config/*.yaml have this shape.
TEST(HydraConfigName, UserYamlOverDefaultsThenOverrides) {
  const std::string dir = make_temp_dir("hydra_config_name");
  write_file(dir + "/my_grpo.yaml",
             "hydra:\n  searchpath:\n    - file://verl/trainer/config\n"
             "defaults:\n  - ppo_trainer\n  - _self_\n"
             "data:\n  max_prompt_length: 1024\n  train_batch_size: 256\n"
             "algorithm:\n  adv_estimator: grpo\n");
  const auto loaded = load_args({"--config-path=" + dir, "--config-name=my_grpo", "data.train_batch_size=64"});
  EXPECT_EQ(loaded.ppo.data.max_prompt_length, 1024);
  EXPECT_EQ(loaded.ppo.data.train_batch_size, 64);  // the override comes last
  EXPECT_EQ(loaded.ppo.algorithm.adv_estimator, "grpo");
  EXPECT_EQ(loaded.ppo.actor_rollout_ref.rollout.response_length, 512);  // a default, through ${oc.select:...}
  EXPECT_EQ(loaded.ppo.actor_rollout_ref.rollout.prompt_length, 1024);
  EXPECT_EQ(find_path(loaded.resolved, "hydra"), nullptr);
  // -cp / -cn, separate values, a .yaml suffix.
  EXPECT_EQ(load_args({"-cp", dir, "-cn", "my_grpo.yaml"}).ppo.data.train_batch_size, 256);
}

TEST(HydraConfigName, DefaultsListOrderAndSelfFirst) {
  const std::string dir = make_temp_dir("hydra_defaults_order");
  write_file(dir + "/base.yaml", "defaults:\n  - ppo_trainer\ndata:\n  max_prompt_length: 100\n  max_response_length: 7\n");
  // _self_ first: the files after it win.
  write_file(dir + "/top.yaml", "defaults:\n  - _self_\n  - base\ndata:\n  max_prompt_length: 200\n");
  // No _self_: Hydra puts it last.
  write_file(dir + "/last.yaml", "defaults:\n  - base\ndata:\n  max_prompt_length: 300\n");
  EXPECT_EQ(load_args({"--config-path=" + dir, "--config-name=top"}).ppo.data.max_prompt_length, 100);
  EXPECT_EQ(load_args({"--config-path=" + dir, "--config-name=last"}).ppo.data.max_prompt_length, 300);
  EXPECT_EQ(load_args({"--config-path=" + dir, "--config-name=last"}).ppo.data.max_response_length, 7);
}

// verl's own scripts: --config-path=config (verl's folder) --config-name=ppo_trainer / ppo_megatron_trainer.
TEST(HydraConfigName, VerlsOwnConfigNamesAreTheBuiltInDefaults) {
  const std::string dir = make_temp_dir("hydra_verl_names");
  EXPECT_EQ(load_args({"--config-path=" + dir, "--config-name=ppo_trainer.yaml"}).ppo.actor_rollout_ref.actor.strategy,
            "fsdp");
  const auto megatron = load_args({"--config-path=" + dir, "--config-name=ppo_megatron_trainer"});
  EXPECT_EQ(megatron.ppo.actor_rollout_ref.actor.strategy, "megatron");
  EXPECT_EQ(megatron.ppo.critic.strategy, "megatron");
}

TEST(HydraConfigName, ErrorsNameTheProblem) {
  const std::string dir = make_temp_dir("hydra_errors");
  write_file(dir + "/group.yaml", "defaults:\n  - ppo_trainer\n  - override rollout: vllm\n");
  write_file(dir + "/unknown.yaml", "defaults:\n  - ppo_trainer\ndata:\n  no_such_key: 1\n");
  EXPECT_NE(error_of_args({"--config-path=" + dir, "--config-name=missing"}).find("no file"), std::string::npos);
  EXPECT_NE(error_of_args({"--config-path=" + dir, "--config-name=group"}).find("is not supported"),
            std::string::npos);
  EXPECT_NE(error_of_args({"--config-path=" + dir, "--config-name=unknown"}).find("data.no_such_key"),
            std::string::npos);
  EXPECT_NE(error_of_args({"--config-path=" + dir}).find("--config-path needs --config-name"), std::string::npos);
}

}  // namespace
}  // namespace verl::test
