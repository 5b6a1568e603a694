// verl 0.9.1's deprecated global micro-batch keys (actor ppo_micro_batch_size, rollout / ref
// log_prob_micro_batch_size, critic ppo_micro_batch_size / forward_micro_batch_size) behave as verl 0.9.1 treats
// them: verl 0.9.1 converts none of them to a per-GPU size (engine_workers.py reads only the *_per_gpu keys), so the
// per-GPU keys are never derived from them, both set is verl's error, and the key alone fails before any work.
#include <gtest/gtest.h>

#include "support/config_overrides.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"

namespace verl::config {
namespace {

LoadedConfig load(std::vector<std::string> overrides) { return test::load_with_overrides(std::move(overrides)); }
std::string error_of(std::vector<std::string> overrides) { return test::config_error_of(std::move(overrides)); }

void expect_error(const std::vector<std::string>& overrides, const std::string& fragment) {
  const std::string message = error_of(overrides);
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

const std::string kActor = "actor_rollout_ref.actor.ppo_micro_batch_size";

TEST(DeprecatedMicroBatch, DefaultsAreVerlsNull) {
  const LoadedConfig c = load({});
  for (const char* key : {"actor_rollout_ref.actor.ppo_micro_batch_size",
                          "actor_rollout_ref.rollout.log_prob_micro_batch_size",
                          "actor_rollout_ref.ref.log_prob_micro_batch_size", "critic.ppo_micro_batch_size",
                          "critic.forward_micro_batch_size"}) {
    const Node* node = find_path(c.resolved, key);
    ASSERT_NE(node, nullptr) << key;
    EXPECT_TRUE(node->is_null()) << key;
  }
  // verl 0.9.1 has no reward_model.micro_batch_size: it stays an unknown key.
  EXPECT_NE(error_of({"reward_model.micro_batch_size=8"}).find("reward_model.micro_batch_size"), std::string::npos);
}

TEST(DeprecatedMicroBatch, ActorKeyOnOneAndTwoGpus) {
  // ppo_mini_batch_size 256. On 1 GPU verl's validation passes and its worker then stops on the missing per-GPU size.
  for (const char* gpus : {"trainer.n_gpus_per_node=1", "trainer.n_gpus_per_node=2"}) {
    expect_error({kActor + "=8", gpus},
                 kActor + "=8 is deprecated and verl 0.9.1 does not convert it to a per-GPU size (its worker "
                          "requires " + kActor + "_per_gpu): set " + kActor + "_per_gpu instead");
  }
  // verl's ActorConfig.validate: ppo_micro_batch_size * sp_size must reach n_gpus.
  expect_error({kActor + "=1", "trainer.n_gpus_per_node=2"},
               kActor + ": ppo_micro_batch_size (1) * ulysses_sequence_parallel_size (1) must be >= n_gpus (2)");
  expect_error({kActor + "=1", "trainer.n_gpus_per_node=1"}, "does not convert it to a per-GPU size");
  expect_error({kActor + "=3"}, kActor + ": ppo_mini_batch_size (256) must be divisible by ppo_micro_batch_size (3)");
}

TEST(DeprecatedMicroBatch, BothSetIsVerlsError) {
  expect_error({kActor + "=8", kActor + "_per_gpu=4"},
               kActor + ": [actor] You have set both 'actor.ppo_micro_batch_size' AND "
                        "'actor.ppo_micro_batch_size_per_gpu'. Please remove 'actor.ppo_micro_batch_size' because "
                        "only '*_ppo_micro_batch_size_per_gpu' is supported (the former is deprecated).");
  expect_error({"actor_rollout_ref.rollout.log_prob_micro_batch_size=8",
                "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"},
               "actor_rollout_ref.rollout.log_prob_micro_batch_size: [actor_rollout_ref.rollout] You have set both "
               "'actor_rollout_ref.rollout.log_prob_micro_batch_size' AND "
               "'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu'. Please remove "
               "'actor_rollout_ref.rollout.log_prob_micro_batch_size' because only "
               "'*_log_prob_micro_batch_size_per_gpu' is supported (the former is deprecated).");
  expect_error({"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.ref.log_prob_micro_batch_size=8",
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"},
               "[actor_rollout_ref.ref] You have set both 'actor_rollout_ref.ref.log_prob_micro_batch_size' AND");
  // verl's critic.ppo_micro_batch_size_per_gpu follows ${.ppo_micro_batch_size}: the old key alone sets both.
  expect_error({"algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size=8"},
               "critic.ppo_micro_batch_size: [critic] You have set both 'critic.micro_batch_size' AND "
               "'critic.micro_batch_size_per_gpu'. Please remove 'critic.micro_batch_size' because only "
               "'*_micro_batch_size_per_gpu' is supported (the former is deprecated).");
}

TEST(DeprecatedMicroBatch, LogProbKeyAloneFails) {
  expect_error({"actor_rollout_ref.rollout.log_prob_micro_batch_size=16"},
               "actor_rollout_ref.rollout.log_prob_micro_batch_size=16 is deprecated and verl 0.9.1 does not "
               "convert it");
  expect_error({"actor_rollout_ref.actor.use_kl_loss=true", "actor_rollout_ref.ref.log_prob_micro_batch_size=16"},
               "actor_rollout_ref.ref.log_prob_micro_batch_size=16 is deprecated");
}

TEST(DeprecatedMicroBatch, UnreadKeysWarnNoEffect) {
  // Where verl 0.9.1 checks nothing (dynamic batch sizes, no critic, no reference policy) the key is read nowhere:
  // accepted, with one warning line, and the per-GPU keys stay as they were.
  struct Case {
    std::vector<std::string> overrides;
    std::string warning;
  };
  const std::vector<Case> cases = {
      {{kActor + "=8", "actor_rollout_ref.actor.use_dynamic_bsz=true"},
       kActor + "=8 is deprecated and has no effect (use_dynamic_bsz=true)"},
      {{"algorithm.adv_estimator=grpo", "critic.ppo_micro_batch_size=8"},
       "critic.ppo_micro_batch_size=8 is deprecated and has no effect (no critic)"},
      {{"actor_rollout_ref.ref.log_prob_micro_batch_size=8"},
       "actor_rollout_ref.ref.log_prob_micro_batch_size=8 is deprecated and has no effect (no reference policy)"},
      {{"algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=2", "critic.forward_micro_batch_size=4"},
       "critic.forward_micro_batch_size=4 is deprecated and has no effect (verl 0.9.1 reads it nowhere)"},
  };
  for (const Case& c : cases) {
    testing::internal::CaptureStderr();
    LoadedConfig loaded;
    EXPECT_NO_THROW(loaded = load(c.overrides));
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(c.warning), std::string::npos) << err;
    EXPECT_FALSE(loaded.ppo.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu.has_value());
  }
}

}  // namespace
}  // namespace verl::config
