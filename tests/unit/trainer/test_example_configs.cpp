// The ready configs in examples/: each resolves through the config loader (`verl config show --config`, the
// loader `verl train` uses), passes the trainer's batch-size checks for its device count, and says what its
// header promises; `verl demo` runs exactly the arithmetic files (they are compiled in).
#include <gtest/gtest.h>

#include <filesystem>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/demo.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const std::string kExampleConfigsExamples = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/examples";

config::PPOConfig load_example(const std::string& name) {
  config::ConfigArgs args;
  args.config_file = kExampleConfigsExamples + "/" + name;
  return config::load_config(args).ppo;
}

TEST(ExampleConfigs, EveryExampleResolvesAndFitsItsDevices) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kExampleConfigsExamples)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  const std::vector<std::string> expected = {"arithmetic_grpo.yaml", "arithmetic_ppo.yaml", "digit_completion_ppo.yaml",
                                             "gsm8k_grpo_qwen2_5_0_5b.yaml"};
  EXPECT_EQ(names, expected);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    CommandResult shown =
        run_command(verl_binary() + " config show --config '" + kExampleConfigsExamples + "/" + name + "'");
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    // The printed tree is valid --config input and resolves to the same typed config.
    const std::string round_trip = make_temp_dir("example_config_" + name) + "/resolved.yaml";
    write_file(round_trip, shown.out);
    CommandResult again = run_command(verl_binary() + " config show --config '" + round_trip + "'");
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, shown.out);
    const config::PPOConfig ppo = load_example(name);
    EXPECT_NO_THROW(trainer::validate_ppo_config(ppo, ppo.trainer.nnodes * ppo.trainer.n_gpus_per_node));
  }
}

TEST(ExampleConfigs, SayWhatTheyRun) {
  const config::PPOConfig grpo = load_example("arithmetic_grpo.yaml");
  EXPECT_EQ(grpo.algorithm.adv_estimator, "grpo");
  EXPECT_FALSE(trainer::need_critic(grpo));
  EXPECT_GT(grpo.actor_rollout_ref.rollout.sampling.n, 1);  // groups to compare within
  EXPECT_EQ(grpo.trainer.device, "cpu");

  const config::PPOConfig ppo = load_example("arithmetic_ppo.yaml");
  EXPECT_EQ(ppo.algorithm.adv_estimator, "gae");
  EXPECT_TRUE(trainer::need_critic(ppo));
  EXPECT_EQ(ppo.trainer.device, "cpu");

  const config::PPOConfig digits = load_example("digit_completion_ppo.yaml");
  EXPECT_EQ(digits.algorithm.adv_estimator, "gae");
  EXPECT_TRUE(trainer::need_critic(digits));

  // verl's examples/grpo_trainer GSM8K values.
  const config::PPOConfig gsm8k = load_example("gsm8k_grpo_qwen2_5_0_5b.yaml");
  EXPECT_EQ(gsm8k.algorithm.adv_estimator, "grpo");
  EXPECT_EQ(gsm8k.data.train_batch_size, 1024);
  EXPECT_EQ(gsm8k.data.max_prompt_length, 512);
  EXPECT_EQ(gsm8k.data.max_response_length, 1024);
  EXPECT_EQ(gsm8k.actor_rollout_ref.actor.ppo_mini_batch_size, 256);
  EXPECT_DOUBLE_EQ(gsm8k.actor_rollout_ref.actor.optim.lr, 1e-6);
  EXPECT_TRUE(gsm8k.actor_rollout_ref.actor.use_kl_loss);
  EXPECT_DOUBLE_EQ(gsm8k.actor_rollout_ref.actor.kl_loss_coef, 0.001);
  EXPECT_EQ(gsm8k.actor_rollout_ref.actor.kl_loss_type, "low_var_kl");
  EXPECT_EQ(gsm8k.actor_rollout_ref.rollout.sampling.n, 5);
  EXPECT_EQ(gsm8k.trainer.device, "cuda");
}

TEST(ExampleConfigs, TheDemoRunsTheArithmeticFilesVerbatim) {
  EXPECT_EQ(trainer::demo_rl_config_yaml("grpo"), read_file(kExampleConfigsExamples + "/arithmetic_grpo.yaml"));
  EXPECT_EQ(trainer::demo_rl_config_yaml("ppo"), read_file(kExampleConfigsExamples + "/arithmetic_ppo.yaml"));
  EXPECT_THROW(trainer::demo_rl_config_yaml("rloo"), Error);
}

}  // namespace
}  // namespace verl::test
