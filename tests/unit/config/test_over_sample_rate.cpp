// actor_rollout_ref.rollout.over_sample_rate as verl treats it today: a float that nothing reads (only verl's
// retired SGLang SPMD rollout aborted requests with it; verl's agent loop, which verl.cpp's rollout follows, never
// does). verl's multi-turn scripts set 0.1: accepted, and reported once as having no effect; its type is kept.
#include <gtest/gtest.h>

#include "support/config_overrides.h"

namespace verl::test {
namespace {

TEST(OverSampleRate, VerlsMultiTurnValueIsAcceptedAndReportedAsNoEffect) {
  testing::internal::CaptureStderr();
  std::string error;
  try {
    load_with_overrides({"actor_rollout_ref.rollout.over_sample_rate=0.1"});
  } catch (const std::exception& e) {
    error = e.what();
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(error, "");
  EXPECT_NE(err.find("no effect in verl.cpp"), std::string::npos) << err;
  EXPECT_NE(err.find("actor_rollout_ref.rollout.over_sample_rate=0.1"), std::string::npos) << err;
  // verl's default is silent.
  testing::internal::CaptureStderr();
  load_with_overrides({"actor_rollout_ref.rollout.over_sample_rate=0.0"});
  const std::string quiet = testing::internal::GetCapturedStderr();
  EXPECT_EQ(quiet.find("over_sample_rate"), std::string::npos) << quiet;
}

}  // namespace
}  // namespace verl::test
