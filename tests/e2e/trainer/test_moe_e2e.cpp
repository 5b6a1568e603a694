// `verl train` on a mixture-of-experts model (`verl model init --arch qwen3_moe`): GAE with the actor, the reference
// and the critic (its value head on the MoE trunk) all routed through experts, remove_padding and gradient
// checkpointing on; the trained router and experts move, and the exported checkpoint is a Qwen3MoeForCausalLM folder
// with the trained weights. Digit-completion task, one CPU process.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "verl/model/weights.h"

namespace verl::test {
namespace {

// The setup's data and tokenizer with a Qwen3-MoE in place of its Llama.
DigitCompletionSetup moe_setup() {
  DigitCompletionSetup setup = make_digit_completion_setup(make_temp_dir("e2e_moe_digits"));
  setup.model_dir = make_digit_completion_model(
      setup, "moe",
      "--arch qwen3_moe --hidden-size 32 --num-layers 2 --num-heads 2 --num-kv-heads 2 --intermediate-size 64 "
      "--num-experts 4 --experts-per-token 2 --moe-intermediate-size 24 --norm-topk-prob");
  return setup;
}

TEST(MoeE2E, GaeTrainsTheRouterAndExpertsAndExportsAQwen3MoeFolder) {
  const DigitCompletionSetup setup = moe_setup();
  const std::string run_dir = make_temp_dir("e2e_moe_run");
  std::vector<std::string> o = setup.base_overrides(run_dir);
  for (const char* extra :
       {"algorithm.adv_estimator=gae", "actor_rollout_ref.rollout.n=2", "trainer.total_training_steps=2",
        "trainer.save_freq=2", "actor_rollout_ref.actor.use_kl_loss=true",
        "actor_rollout_ref.model.use_remove_padding=true", "critic.model.use_remove_padding=true",
        "actor_rollout_ref.model.enable_gradient_checkpointing=true",
        // No weight decay: a weight that moved got a gradient (decay alone moves every weight).
        "actor_rollout_ref.actor.optim.weight_decay=0"}) {
    o.push_back(extra);
  }
  TrainRun run = run_verl_train(o, run_dir);
  ASSERT_EQ(run.result.exit_code, 0) << run.result.err;
  for (const char* key : {"actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "critic/vf_loss", "critic/grad_norm"}) {
    auto it = run.history.find(key);
    ASSERT_TRUE(it != run.history.end() && it->second.count(1) && it->second.count(2)) << key;
    EXPECT_TRUE(std::isfinite(it->second.at(2))) << key;
  }
  EXPECT_GT(run.history.at("actor/grad_norm").at(1), 0);

  const std::string out = make_temp_dir("e2e_moe_export") + "/actor";
  CommandResult ex = run_command(verl_binary() + " model export --checkpoint '" + run_dir +
                                 "/global_step_2/actor' --out '" + out + "'");
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_NE(read_file(out + "/config.json").find("Qwen3MoeForCausalLM"), std::string::npos);
  model::CausalLM trained = model::load_model(out);
  model::CausalLM initial = model::load_model(setup.model_dir);
  const auto before = initial->named_parameters();
  const auto after = trained->named_parameters();
  for (const std::string name : {"model.layers.0.mlp.gate.weight", "model.layers.1.mlp.experts.0.down_proj.weight",
                                 "model.layers.1.mlp.experts.3.up_proj.weight"}) {
    const auto* now = after.find(name);
    ASSERT_NE(now, nullptr) << name;
    EXPECT_FALSE(torch::equal(*now, *before.find(name))) << name << " did not train";
  }
}

}  // namespace
}  // namespace verl::test
