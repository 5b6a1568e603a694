// fsdp_config.mixed_precision (verl's '+' keys): param_dtype, reduce_dtype and buffer_dtype under verl's
// PrecisionType names; reduce_dtype bf16 / fp16 / fp32 for actor and critic, buffer_dtype fp32 only, and any
// other name a one-line error naming the key.
#include <gtest/gtest.h>

#include "support/config_overrides.h"

namespace verl::test {
namespace {

TEST(MixedPrecisionConfig, ReduceDtypeTakesVerlsPrecisionNames) {
  EXPECT_EQ(load_with_overrides({}).ppo.actor_rollout_ref.actor.fsdp_config.reduce_dtype, "fp32");
  struct Case {
    std::string value, expected;
  } cases[] = {{"bf16", "bf16"}, {"bfloat16", "bf16"}, {"fp16", "fp16"}, {"float16", "fp16"}, {"16", "fp16"},
               {"fp32", "fp32"}, {"float32", "fp32"}, {"32", "fp32"}};
  for (const auto& c : cases) {
    auto ppo = load_with_overrides({"+actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=" + c.value,
                                    "+critic.model.fsdp_config.mixed_precision.reduce_dtype=" + c.value})
                   .ppo;
    EXPECT_EQ(ppo.actor_rollout_ref.actor.fsdp_config.reduce_dtype, c.expected) << c.value;
    EXPECT_EQ(ppo.critic.model.fsdp_config.reduce_dtype, c.expected) << c.value;
  }
  // verl's example (run_qwen3-32b_npu.sh) with param_dtype alongside.
  auto ppo = load_with_overrides({"+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bf16",
                                  "+actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=bf16",
                                  "+actor_rollout_ref.actor.fsdp_config.mixed_precision.buffer_dtype=fp32"})
                 .ppo;
  EXPECT_EQ(ppo.actor_rollout_ref.actor.fsdp_config.param_dtype, "bf16");
  EXPECT_EQ(ppo.actor_rollout_ref.actor.fsdp_config.reduce_dtype, "bf16");
}

TEST(MixedPrecisionConfig, OtherDtypesAreOneLineErrorsNamingTheKey) {
  for (const std::string value : {"fp8", "int8", "float64", "64", "half"}) {
    for (const std::string key : {"actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype",
                                  "critic.model.fsdp_config.mixed_precision.reduce_dtype",
                                  "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype"}) {
      const std::string e = config_error_of({"+" + key + "=" + value});
      EXPECT_NE(e.find(key), std::string::npos) << value << ": " << e;
      EXPECT_NE(e.find("expected bf16, fp16 or fp32"), std::string::npos) << e;
    }
  }
  const std::string e = config_error_of({"+actor_rollout_ref.actor.fsdp_config.mixed_precision.buffer_dtype=bf16"});
  EXPECT_NE(e.find("buffer_dtype=bf16"), std::string::npos) << e;
}

}  // namespace
}  // namespace verl::test
