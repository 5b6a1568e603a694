// The typed sections: defaults match verl's (reference spec section 9), every default key is read,
// enumerations and ranges are checked.
#include <gtest/gtest.h>

#include "support/config_overrides.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"

namespace verl::config {
namespace {

LoadedConfig ppo_config_load(std::vector<std::string> overrides) {
  return test::load_with_overrides(std::move(overrides));
}
std::string ppo_config_error_of(std::vector<std::string> overrides) {
  return test::config_error_of(std::move(overrides));
}

TEST(PPOConfig, DefaultsAreVerls) {
  PPOConfig c = ppo_config_load({}).ppo;
  EXPECT_EQ(c.data.train_batch_size, 1024);
  EXPECT_EQ(c.data.max_prompt_length, 512);
  EXPECT_EQ(c.data.prompt_key, "prompt");
  EXPECT_FALSE(c.data.seed.has_value());
  const ActorConfig& actor = c.actor_rollout_ref.actor;
  EXPECT_EQ(actor.ppo_mini_batch_size, 256);
  EXPECT_DOUBLE_EQ(actor.clip_ratio_c, 3.0);
  EXPECT_EQ(actor.loss_agg_mode, "token-mean");
  EXPECT_EQ(actor.kl_loss_type, "low_var_kl");
  EXPECT_DOUBLE_EQ(actor.kl_loss_coef, 0.001);
  EXPECT_DOUBLE_EQ(actor.optim.lr, 1e-6);
  EXPECT_DOUBLE_EQ(actor.optim.weight_decay, 0.01);
  EXPECT_EQ(actor.optim.betas, (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(actor.checkpoint.load_contents, (std::vector<std::string>{"model", "optimizer", "extra"}));
  EXPECT_EQ(c.actor_rollout_ref.rollout.response_length, 512);
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.rollout.val_kwargs.temperature, 0.0);
  EXPECT_FALSE(c.actor_rollout_ref.rollout.val_kwargs.do_sample);
  EXPECT_DOUBLE_EQ(c.critic.optim.lr, 1e-5);
  EXPECT_EQ(c.critic.ppo_max_token_len_per_gpu, 32768);
  EXPECT_EQ(c.critic.forward_max_token_len_per_gpu, 32768);
  EXPECT_FALSE(c.critic.enable.has_value());
  EXPECT_EQ(c.algorithm.adv_estimator, "gae");
  EXPECT_EQ(c.algorithm.kl_ctrl.horizon, 10000);
  EXPECT_EQ(c.trainer.total_epochs, 30);
  EXPECT_EQ(c.trainer.default_local_dir, "checkpoints/verl_examples/gsm8k");
}

TEST(PPOConfig, CrossSectionDefaultsFollowTheirSource) {
  PPOConfig c = ppo_config_load({"actor_rollout_ref.actor.ppo_mini_batch_size=32", "data.max_response_length=64",
                                 "actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.model.path=/m"})
                    .ppo;
  EXPECT_EQ(c.critic.ppo_mini_batch_size, 32);
  EXPECT_EQ(c.actor_rollout_ref.rollout.response_length, 64);
  EXPECT_TRUE(c.critic.use_dynamic_bsz);
  EXPECT_TRUE(c.reward_model.use_dynamic_bsz);
  EXPECT_TRUE(c.actor_rollout_ref.ref.log_prob_use_dynamic_bsz);
  EXPECT_EQ(c.critic.model.tokenizer_path, "/m");
  EXPECT_EQ(c.actor_rollout_ref.model.tokenizer_dir(), "/m");
  EXPECT_EQ(c.actor_rollout_ref.model.hf_config_dir(), "/m");
  EXPECT_EQ(c.reward_model.input_tokenizer, "/m");
}

TEST(PPOConfig, TokenizerAndConfigPathsDefaultToTheModelPath) {
  const PPOConfig c = ppo_config_load({"actor_rollout_ref.model.path=/m", "actor_rollout_ref.model.tokenizer_path=/t",
                                       "actor_rollout_ref.model.hf_config_path=/c", "critic.model.path=/v",
                                       "critic.model.hf_config_path=/vc"})
                          .ppo;
  EXPECT_EQ(c.actor_rollout_ref.model.tokenizer_dir(), "/t");
  EXPECT_EQ(c.actor_rollout_ref.model.hf_config_dir(), "/c");
  EXPECT_EQ(c.critic.model.hf_config_dir(), "/vc");
  // verl 0.9.1's reward loop renders the chat with the actor's tokenizer_path when it is set; the critic's export
  // copies it.
  EXPECT_EQ(c.reward_model.input_tokenizer, "/t");
  EXPECT_EQ(c.critic.model.tokenizer_path, "/t");
  const PPOConfig own = ppo_config_load({"actor_rollout_ref.model.path=/m", "actor_rollout_ref.model.tokenizer_path=/t",
                                         "reward_model.model.input_tokenizer=/r"})
                            .ppo;
  EXPECT_EQ(own.reward_model.input_tokenizer, "/r");
}

// verl 0.9.1's reward.reward_model keys and the legacy ones (which win when set) are checked against verl's migration
// in oracle.RewardKeyMigrationOracle; here, what each error names.
TEST(PPOConfig, AnEnabledRewardModelNeedsAFolderUnderTheKeyInForce) {
  std::string message = ppo_config_error_of({"reward.reward_model.enable=true"});
  EXPECT_NE(message.find("'reward.reward_model.model_path' must name the reward model's folder when "
                         "reward.reward_model.enable is true"),
            std::string::npos)
      << message;
  message = ppo_config_error_of({"reward_model.enable=true"});
  EXPECT_NE(message.find("'reward.reward_model.model_path' must name the reward model's folder when "
                         "reward_model.enable is true"),
            std::string::npos)
      << message;
  message = ppo_config_error_of({"reward_model.num_workers=0"});
  EXPECT_NE(message.find("reward_model.num_workers"), std::string::npos) << message;
  EXPECT_EQ(ppo_config_load({"reward.reward_model.enable=false"}).ppo.reward_model.path, "");
}

TEST(PPOConfig, EnumeratedValuesAreChecked) {
  std::string message = ppo_config_error_of({"algorithm.adv_estimator=grp"});
  EXPECT_NE(message.find("'algorithm.adv_estimator' is 'grp'; expected one of"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'grpo'"), std::string::npos) << message;
  EXPECT_NE(ppo_config_error_of({"trainer.logger=[console,clearml]"}).find("contains 'clearml'"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.actor.loss_agg_mode=mean"}).find("loss_agg_mode"),
            std::string::npos);
  EXPECT_EQ(ppo_config_error_of({"algorithm.adv_estimator=grpo", "algorithm.kl_penalty=k3+"}), "");
}

TEST(PPOConfig, RangesAreChecked) {
  EXPECT_NE(ppo_config_error_of({"data.train_batch_size=0"}).find("must be > 0"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.actor.clip_ratio_c=1.0"}).find("must be > 1"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.rollout.top_p=0"}).find("(0, 1]"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.actor.optim.betas=[0.9]"}).find("two numbers"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"trainer.resume_mode=resume_path"}).find("resume_from_path"), std::string::npos);
  EXPECT_NE(ppo_config_error_of({"trainer.checkpoint_callback_class=Upload"})
                .find("trainer.checkpoint_callback_class must be a fully qualified class name (module.ClassName), "
                      "got 'Upload'"),
            std::string::npos);
  EXPECT_NE(ppo_config_error_of({"trainer.checkpoint_callback_timeout=-1"}).find(">= 0 (0: no limit)"),
            std::string::npos);
  const PPOConfig c = ppo_config_load({"trainer.checkpoint_callback_class=my.callbacks.Upload",
                                       "trainer.checkpoint_callback_timeout=0"})
                          .ppo;
  EXPECT_EQ(c.trainer.checkpoint_callback_class, "my.callbacks.Upload");
  EXPECT_EQ(c.trainer.checkpoint_callback_timeout, 0);
}

TEST(PPOConfig, NullForARequiredKeyNamesIt) {
  std::string message = ppo_config_error_of({"trainer.total_epochs=null"});
  EXPECT_NE(message.find("'trainer.total_epochs' expects int, got null"), std::string::npos) << message;
}

TEST(PPOConfig, ValuesReachTheStructs) {
  PPOConfig c =
      ppo_config_load({"actor_rollout_ref.actor.optim.lr=3e-6", "actor_rollout_ref.rollout.n=8",
                       "algorithm.adv_estimator=grpo", "trainer.logger=[console,jsonl]", "trainer.num_cpu_threads=2"})
          .ppo;
  EXPECT_DOUBLE_EQ(c.actor_rollout_ref.actor.optim.lr, 3e-6);
  EXPECT_EQ(c.actor_rollout_ref.rollout.sampling.n, 8);
  EXPECT_EQ(c.algorithm.adv_estimator, "grpo");
  EXPECT_EQ(c.trainer.logger, (std::vector<std::string>{"console", "jsonl"}));
  EXPECT_EQ(c.trainer.num_cpu_threads, 2);
}

// The rollout and model keys of verl's quickstart commands load (the native engine stands in for vllm / sglang);
// what is out of range or unknown is still an error naming the key.
TEST(PPOConfig, QuickstartRolloutAndModelKeysLoad) {
  PPOConfig c =
      ppo_config_load({"actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.gpu_memory_utilization=0.4",
                       "actor_rollout_ref.model.use_remove_padding=True", "critic.model.use_remove_padding=True",
                       "actor_rollout_ref.rollout.tensor_model_parallel_size=1"})
          .ppo;
  EXPECT_EQ(c.actor_rollout_ref.rollout.name, "vllm");
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.rollout.gpu_memory_utilization=1.5"})
                .find("actor_rollout_ref.rollout.gpu_memory_utilization must be in (0, 1], got 1.5"),
            std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.rollout.name=lmdeploy"})
                .find("'actor_rollout_ref.rollout.name' is 'lmdeploy'"),
            std::string::npos);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.model.use_remove_padding=maybe"}).find("use_remove_padding"),
            std::string::npos);
}

// strategy=megatron's pipeline stages: read for the actor (the ref follows it, verl's oc.select) and the critic;
// a model copy is TP x PP ranks; LoRA with stages and a pipeline size below 1 are errors naming the key.
TEST(PPOConfig, MegatronPipelineKeys) {
  PPOConfig c = ppo_config_load({"actor_rollout_ref.actor.strategy=megatron",
                                 "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                 "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=3",
                                 "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
                                 "critic.strategy=megatron", "critic.megatron.pipeline_model_parallel_size=2"})
                    .ppo;
  EXPECT_EQ(c.actor_rollout_ref.actor.pipeline_parallel_size(), 3);
  EXPECT_EQ(c.actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size, 2);
  EXPECT_EQ(c.actor_rollout_ref.ref.megatron.virtual_pipeline_model_parallel_size, 2);  // follows the actor's
  EXPECT_EQ(c.critic.megatron.virtual_pipeline_model_parallel_size, 1);                 // null
  EXPECT_EQ(c.actor_rollout_ref.actor.model_parallel_size(), 6);
  EXPECT_EQ(c.actor_rollout_ref.ref.megatron.pipeline_model_parallel_size, 3);
  EXPECT_EQ(c.critic.model_parallel_size(), 2);
  PPOConfig fsdp = ppo_config_load({"actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2"}).ppo;
  EXPECT_EQ(fsdp.actor_rollout_ref.actor.model_parallel_size(), 1);  // only megatron reads it
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.actor.strategy=megatron",
                                 "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                                 "actor_rollout_ref.model.lora_rank=8"})
                .find("actor_rollout_ref.model.lora_rank > 0 with "
                      "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 is not supported"),
            std::string::npos);
  EXPECT_NE(ppo_config_error_of({"critic.strategy=megatron", "critic.megatron.pipeline_model_parallel_size=2",
                                 "critic.model.lora_rank=8"})
                .find("critic.model.lora_rank > 0 with critic.megatron.pipeline_model_parallel_size=2"),
            std::string::npos);
  EXPECT_NE(ppo_config_error_of({"critic.megatron.pipeline_model_parallel_size=0"})
                .find("critic.megatron.pipeline_model_parallel_size"),
            std::string::npos);
}

// Context parallelism: the ranks of one model copy are TP x PP x CP; the ref's size follows the actor's (verl's
// oc.select), the critic's is its own; fsdp ignores the key (Ulysses has its own).
TEST(PPOConfig, MegatronContextParallelKeys) {
  PPOConfig c = ppo_config_load({"actor_rollout_ref.actor.strategy=megatron",
                                 "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                 "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
                                 "actor_rollout_ref.actor.megatron.context_parallel_size=2", "critic.strategy=megatron",
                                 "critic.megatron.context_parallel_size=4"})
                    .ppo;
  EXPECT_EQ(c.actor_rollout_ref.actor.context_parallel_size(), 2);
  EXPECT_EQ(c.actor_rollout_ref.actor.model_parallel_size(), 8);
  EXPECT_EQ(c.actor_rollout_ref.ref.megatron.context_parallel_size, 2);  // follows the actor's
  EXPECT_EQ(c.critic.context_parallel_size(), 4);
  EXPECT_EQ(c.critic.model_parallel_size(), 4);
  PPOConfig fsdp = ppo_config_load({"actor_rollout_ref.actor.megatron.context_parallel_size=2"}).ppo;
  EXPECT_EQ(fsdp.actor_rollout_ref.actor.model_parallel_size(), 1);  // only megatron reads it
  EXPECT_NE(
      ppo_config_error_of({"critic.megatron.context_parallel_size=0"}).find("critic.megatron.context_parallel_size"),
      std::string::npos);
}

// strategy=megatron's keys: tensor parallelism, and Megatron's sequence parallelism (off without TP, as verl corrects
// it).
TEST(PPOConfig, MegatronKeys) {
  PPOConfig c = ppo_config_load({"actor_rollout_ref.actor.strategy=megatron",
                                 "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                 "critic.strategy=megatron", "critic.megatron.tensor_model_parallel_size=4"})
                    .ppo;
  EXPECT_EQ(c.actor_rollout_ref.actor.tensor_parallel_size(), 2);
  EXPECT_EQ(c.actor_rollout_ref.ref.megatron.tensor_model_parallel_size, 2);  // follows the actor's
  EXPECT_EQ(c.critic.tensor_parallel_size(), 4);
  EXPECT_TRUE(c.critic.megatron.use_distributed_optimizer);
  PPOConfig fsdp = ppo_config_load({"actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"}).ppo;
  EXPECT_EQ(fsdp.actor_rollout_ref.actor.tensor_parallel_size(), 1);  // only megatron reads it
  // Megatron's sequence parallelism: verl's default, on where there is tensor parallelism to split over.
  EXPECT_TRUE(c.actor_rollout_ref.actor.megatron.sequence_parallel);
  EXPECT_TRUE(c.critic.megatron.sequence_parallel);
  EXPECT_FALSE(ppo_config_load({"actor_rollout_ref.actor.strategy=megatron", "critic.strategy=megatron"})
                   .ppo.critic.megatron.sequence_parallel);  // TP 1
  EXPECT_FALSE(ppo_config_load({"actor_rollout_ref.actor.strategy=megatron",
                                "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
                                "actor_rollout_ref.actor.megatron.sequence_parallel=false"})
                   .ppo.actor_rollout_ref.actor.megatron.sequence_parallel);
  EXPECT_NE(ppo_config_error_of({"actor_rollout_ref.actor.megatron.tensor_model_parallel_size=0"})
                .find("tensor_model_parallel_size"),
            std::string::npos);
}

}  // namespace
}  // namespace verl::config
