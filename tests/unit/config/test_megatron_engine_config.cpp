// verl 0.9.1's megatron engine settings: the model_engine=megatron group choice (command line, or a Hydra file's
// defaults list as verl's ppo_megatron_trainer.yaml has it), McoreOptimizerConfig's schedule and optimizer names,
// and McoreEngineConfig's other keys as verl's megatron scripts set them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/config_overrides.h"
#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/config/config_loader.h"
#include "verl/workers/optimizer.h"

namespace verl::test {
namespace {

bool has_text(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(MegatronEngineConfig, ModelEngineChoosesTheStrategiesAndMegatronsOptimizer) {
  for (const std::string& at : {"first", "last"}) {
    std::vector<std::string> overrides = {"actor_rollout_ref.actor.optim.lr=3e-6"};
    overrides.insert(at == "first" ? overrides.begin() : overrides.end(), "model_engine=megatron");
    const auto ppo = load_with_overrides(overrides).ppo;
    EXPECT_EQ(ppo.actor_rollout_ref.actor.strategy, "megatron") << at;
    EXPECT_EQ(ppo.critic.strategy, "megatron") << at;
    const config::OptimConfig& o = ppo.actor_rollout_ref.actor.optim;
    EXPECT_TRUE(o.megatron_schedule);
    EXPECT_EQ(o.optimizer, "AdamW");  // Megatron's `adam` (decoupled weight decay)
    EXPECT_DOUBLE_EQ(o.lr, 3e-6);
    EXPECT_TRUE(ppo.critic.optim.megatron_schedule);
  }
  const auto dp = load_with_overrides({"model_engine=dp"}).ppo;
  EXPECT_EQ(dp.actor_rollout_ref.actor.strategy, "fsdp");
  EXPECT_FALSE(dp.actor_rollout_ref.actor.optim.megatron_schedule);
  EXPECT_TRUE(has_text(config_error_of({"model_engine=torchtitan"}), "model_engine=torchtitan is not one of"));
}

// verl 0.9.1's ppo_megatron_trainer.yaml: `defaults: [ppo_trainer, override model_engine: megatron, _self_]`.
TEST(MegatronEngineConfig, HydraDefaultsListChoosesTheEngine) {
  const std::string dir = make_temp_dir("megatron_engine_defaults");
  write_file(dir + "/my_megatron.yaml",
             "defaults:\n  - ppo_trainer\n  - override model_engine: megatron\n  - _self_\n"
             "actor_rollout_ref:\n  actor:\n    optim:\n      lr_decay_style: cosine\n");
  config::ConfigArgs args = config::parse_config_args({"--config-path=" + dir, "--config-name=my_megatron"});
  auto ppo = config::load_config(args).ppo;
  EXPECT_EQ(ppo.actor_rollout_ref.actor.strategy, "megatron");
  EXPECT_EQ(ppo.actor_rollout_ref.actor.optim.lr_decay_style, "cosine");
  // A choice on the command line wins over the file's.
  args.overrides = {"model_engine=dp", "actor_rollout_ref.actor.optim.lr_decay_style=constant"};
  ppo = config::load_config(args).ppo;
  EXPECT_EQ(ppo.actor_rollout_ref.actor.strategy, "fsdp");
}

TEST(MegatronEngineConfig, EachStrategyRefusesTheOthersScheduleKeys) {
  EXPECT_TRUE(has_text(config_error_of({"actor_rollout_ref.actor.optim.lr_decay_style=cosine"}),
                       "'actor_rollout_ref.actor.optim.lr_decay_style' is cosine: with strategy=fsdp"));
  EXPECT_TRUE(has_text(config_error_of({"critic.optim.min_lr=1e-7"}), "critic.optim.min_lr"));
  EXPECT_TRUE(
      has_text(config_error_of({"model_engine=megatron", "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine"}),
               "with strategy=megatron the learning-rate schedule is Megatron's"));
  EXPECT_TRUE(has_text(config_error_of({"model_engine=megatron", "critic.optim.warmup_style=cosine"}),
                       "critic.optim.warmup_style"));
  // Megatron's own checks, named by key.
  EXPECT_TRUE(has_text(config_error_of({"model_engine=megatron", "actor_rollout_ref.actor.optim.min_lr=1e-3"}),
                       "optim.min_lr' must be in [0,"));
  EXPECT_TRUE(has_text(config_error_of({"model_engine=megatron", "actor_rollout_ref.actor.optim.lr_decay_style=WSD"}),
                       "lr_wsd_decay_steps' must be a positive number of steps with lr_decay_style=WSD"));
  EXPECT_TRUE(has_text(config_error_of({"model_engine=megatron", "actor_rollout_ref.actor.optim.lr_decay_style=exp"}),
                       "lr_decay_style"));
}

TEST(MegatronEngineConfig, MegatronOptimizerNamesAndOverrides) {
  const auto sgd = load_with_overrides({"model_engine=megatron", "actor_rollout_ref.actor.optim.optimizer=sgd"})
                       .ppo.actor_rollout_ref.actor.optim;
  EXPECT_EQ(sgd.optimizer, "SGD");
  EXPECT_DOUBLE_EQ(sgd.momentum, 0.9);  // Megatron's sgd_momentum default
  const std::string p = "+actor_rollout_ref.actor.optim.override_optimizer_config.";
  std::string err;
  config::OptimConfig adam;
  testing::internal::CaptureStderr();
  adam = load_with_overrides({"model_engine=megatron", p + "adam_beta1=0.8", p + "adam_beta2=0.95", p + "adam_eps=1e-6",
                              p + "optimizer_cpu_offload=True", p + "optimizer_offload_fraction=1.0"})
             .ppo.actor_rollout_ref.actor.optim;
  err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(adam.betas, (std::vector<double>{0.8, 0.95}));
  EXPECT_DOUBLE_EQ(adam.eps, 1e-6);
  EXPECT_TRUE(has_text(err, "optimizer_cpu_offload=true, optimizer_offload_fraction=1.0")) << err;
  EXPECT_TRUE(has_text(config_error_of({"model_engine=megatron", p + "adam_gamma=1"}),
                       "override_optimizer_config.adam_gamma': verl.cpp takes these Megatron OptimizerConfig fields"));
  // Megatron's names are not torch.optim's: under fsdp `adam` is an unknown class.
  EXPECT_TRUE(has_text(config_error_of({"actor_rollout_ref.actor.optim.optimizer=adam"}), "optim.optimizer"));
}

// The megatron keys of verl's run scripts (examples/grpo_trainer/*megatron*.sh, ppo_trainer/*megatron*.sh).
TEST(MegatronEngineConfig, VerlsMegatronScriptKeysLoad) {
  const std::string a = "actor_rollout_ref.actor.megatron.";
  const std::string otc = "+actor_rollout_ref.actor.megatron.override_transformer_config.";
  const std::string err = stderr_of_load({
      "model_engine=megatron",
      "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
      a + "param_offload=True",
      a + "grad_offload=True",
      a + "optimizer_offload=True",
      a + "use_mbridge=True",
      a + "expert_model_parallel_size=1",
      a + "expert_tensor_parallel_size=1",
      a + "seed=7",
      // verl 0.9.1's tree has the recompute fields (its scripts' `+` is Hydra's error there, and verl.cpp's).
      otc.substr(1) + "recompute_granularity=full",
      otc.substr(1) + "recompute_method=uniform",
      otc.substr(1) + "recompute_num_layers=1",
      otc + "apply_rope_fusion=True",
      otc + "gradient_accumulation_fusion=True",
      otc + "moe_router_dtype=fp32",
      otc + "moe_enable_deepep=True",
      "actor_rollout_ref.ref.megatron.param_offload=True",
      "critic.megatron.use_dist_checkpointing=False",
      "actor_rollout_ref.actor.optim.lr_decay_style=cosine",
      "actor_rollout_ref.actor.optim.min_lr=1e-8",
      "actor_rollout_ref.actor.optim.lr_warmup_init=1e-9",
  });
  EXPECT_TRUE(has_text(err, "no effect in verl.cpp")) << err;
  EXPECT_TRUE(has_text(err, "override_transformer_config.moe_router_dtype=fp32")) << err;
  EXPECT_TRUE(has_text(err, "megatron.seed=7")) << err;
  // The ref follows the actor's engine settings through verl's interpolations: reported once, under the actor.
  EXPECT_FALSE(has_text(err, "ref.megatron.override_transformer_config")) << err;
}

TEST(MegatronEngineConfig, FeaturesOffTheirDefaultsAreErrorsNamingThem) {
  const std::string a = "actor_rollout_ref.actor.megatron.";
  EXPECT_TRUE(
      has_text(config_error_of({a + "use_dist_checkpointing=True"}), "loading Megatron distributed checkpoints"));
  EXPECT_TRUE(has_text(config_error_of({"+" + a + "override_transformer_config.hidden_dropout=0.1"}),
                       "Megatron TransformerConfig fields other than"));
  EXPECT_TRUE(has_text(config_error_of({a + "router_replay.mode=R2"}), "MoE router replay"));
  EXPECT_TRUE(has_text(config_error_of({"critic.optim.exp_avg_dtype=bf16"}), "reduced-precision"));
  EXPECT_TRUE(
      has_text(config_error_of({"actor_rollout_ref.model.lora.rank=8"}), "verl.cpp's LoRA takes model.lora_rank"));
  EXPECT_TRUE(has_text(config_error_of({a + "virtual_pipeline_model_parallel_size=0"}),
                       "virtual_pipeline_model_parallel_size' must be > 0"));
}

// Megatron's scheduler keeps the config's LR on resume (verl's override_opt_param_scheduler); only the step count
// comes from the checkpoint. The fsdp schedule (LambdaLR) restores the checkpoint's base LR.
TEST(MegatronEngineConfig, ResumeKeepsTheConfigsLearningRate) {
  for (const bool megatron : {true, false}) {
    std::vector<std::string> base = {"actor_rollout_ref.actor.optim.lr=1e-5"};
    if (megatron) base.push_back("model_engine=megatron");
    const config::OptimConfig first = load_with_overrides(base).ppo.actor_rollout_ref.actor.optim;
    base[0] = "actor_rollout_ref.actor.optim.lr=2e-5";
    const config::OptimConfig second = load_with_overrides(base).ppo.actor_rollout_ref.actor.optim;
    torch::Tensor w = torch::zeros({1}, torch::requires_grad());
    auto opt1 = workers::build_optimizer({w}, first);
    workers::LRScheduler s1(*opt1, first, 10);
    for (int i = 0; i < 3; ++i) s1.step();
    auto opt2 = workers::build_optimizer({w}, second);
    workers::LRScheduler s2(*opt2, second, 10);
    s2.load_state_dict(s1.state_dict());
    EXPECT_EQ(s2.step_count(), 3);
    EXPECT_DOUBLE_EQ(s2.last_lr(), megatron ? 2e-5 : 1e-5) << (megatron ? "megatron" : "fsdp");
  }
}

TEST(MegatronEngineConfig, ScheduleErrorsNeedingTheTrainingStepsNameTheKeys) {
  const config::OptimConfig o =
      load_with_overrides({"model_engine=megatron", "actor_rollout_ref.actor.optim.lr_warmup_steps=5"})
          .ppo.actor_rollout_ref.actor.optim;
  torch::Tensor w = torch::zeros({1}, torch::requires_grad());
  auto opt = workers::build_optimizer({w}, o);
  EXPECT_TRUE(has_text(error_of([&] { workers::LRScheduler s(*opt, o, 5); }),
                       "optim.lr_warmup_steps (5) must be below the decay steps (5)"));
  EXPECT_TRUE(has_text(error_of([&] { workers::LRScheduler s(*opt, o, -1); }), "must be positive"));
}

}  // namespace
}  // namespace verl::test
