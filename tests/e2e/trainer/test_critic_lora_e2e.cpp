// `verl train` PPO (GAE) on verl's digit-completion task (support/digit_completion_setup.h) with LoRA on the critic
// (critic.model.lora_rank): the critic's value loss falls while only its adapters and value head train, and the
// run's critic checkpoint holds only that trainable state.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

double mean_over(const std::map<int64_t, double>& by_step, int64_t first, int64_t last) {
  double sum = 0;
  for (int64_t step = first; step <= last; ++step) sum += by_step.at(step);
  return sum / static_cast<double>(last - first + 1);
}

// The policy is held fixed (actor lr 0) so the critic's targets do not drift: what falls is the critic's own fit.
// Measured on the 2-core Xeon: see the numbers in the assertion below.
TEST(CriticLoraE2E, PpoWithALoraCriticLowersItsValueLoss) {
  static const DigitCompletionSetup setup = make_digit_completion_setup(make_temp_dir("e2e_critic_lora_setup"));
  const std::string run_dir = make_temp_dir("e2e_critic_lora_run");
  const int64_t steps = 12;
  TrainRun run = run_verl_train(
      with(setup.base_overrides(run_dir),
           {"algorithm.adv_estimator=gae", "reward_model.reward_manager=digit_completion",
            "actor_rollout_ref.actor.optim.lr=0", "critic.optim.lr=1e-2", "critic.model.lora_rank=8",
            "critic.model.lora_alpha=16", "trainer.test_freq=-1", "trainer.save_freq=" + std::to_string(steps),
            "trainer.total_training_steps=" + std::to_string(steps)}),
      run_dir);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  const auto& vf_loss = run.history.at("critic/vf_loss");
  ASSERT_EQ(vf_loss.size(), static_cast<size_t>(steps));
  const double first = mean_over(vf_loss, 1, 3), last = mean_over(vf_loss, steps - 2, steps);
  EXPECT_LT(last, 0.5 * first) << "critic/vf_loss steps 1-3 " << first << ", steps " << steps - 2 << "-" << steps << " "
                               << last;

  // The critic's checkpoint: the adapters (A and B on 7 projections of the one layer) and the value head only.
  const std::string critic_dir = run_dir + "/global_step_" + std::to_string(steps) + "/critic";
  const auto state = model::load_tensors(critic_dir + "/model_world_size_1_rank_0.safetensors");
  EXPECT_EQ(state.size(), 7u * 2 + 2);
  for (const auto& [name, t] : state) {
    EXPECT_TRUE(model::is_lora_parameter_name(name) || name.rfind("score.", 0) == 0) << name;
  }
}

}  // namespace
}  // namespace verl::test
