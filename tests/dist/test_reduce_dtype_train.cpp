// fsdp_config.mixed_precision.reduce_dtype through `mpirun -np 3 verl train` (controller + 2 data-parallel worker
// ranks, GAE with a critic, one step, greedy rollouts): the workers reduce the actor's and the critic's gradients
// in bf16 when asked, so the step's gradient norms move by bf16 rounding (relative 1e-6 .. 1e-2) from the fp32
// run's, while reduce_dtype=fp32 written out gives the default run's numbers exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& reduce_dtype_train_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_reduce_dtype_setup"), 8);
  return s;
}

trainer::MetricHistory train(const std::string& name, const std::string& reduce_dtype) {
  const std::string run_dir = make_temp_dir(name);
  std::vector<std::string> o = reduce_dtype_train_setup().base_overrides(run_dir);
  for (const std::string& extra :
       {"algorithm.adv_estimator=gae", "actor_rollout_ref.rollout.do_sample=false", "trainer.balance_batch=false",
        "trainer.total_training_steps=1", "trainer.test_freq=-1", "trainer.num_cpu_threads=1",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "critic.ppo_micro_batch_size_per_gpu=4",
        "trainer.n_gpus_per_node=2"}) {
    o.push_back(extra);
  }
  if (!reduce_dtype.empty()) {
    o.push_back("+actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=" + reduce_dtype);
    o.push_back("+critic.model.fsdp_config.mixed_precision.reduce_dtype=" + reduce_dtype);
  }
  std::string command = "cd '" + run_dir + "' && " + mpirun(3) + verl_binary() + " train";
  for (const auto& arg : o) command += " '" + arg + "'";
  const CommandResult r = run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? trainer::read_metrics_jsonl(run_dir + "/metrics.jsonl") : trainer::MetricHistory{};
}

TEST(ReduceDtypeTrain, Bf16ReductionMovesTheGradientNormsByBf16RoundingAndFp32IsTheDefault) {
  const auto plain = train("dist_reduce_default", "");
  const auto fp32 = train("dist_reduce_fp32", "fp32");
  const auto bf16 = train("dist_reduce_bf16", "bf16");
  for (const char* key : {"actor/grad_norm", "critic/grad_norm"}) {
    ASSERT_TRUE(plain.count(key) && fp32.count(key) && bf16.count(key)) << key;
    const double a = plain.at(key).at(1), b = fp32.at(key).at(1), c = bf16.at(key).at(1);
    EXPECT_EQ(a, b) << key << ": reduce_dtype=fp32 is the default";
    const double relative = std::abs(c - a) / std::abs(a);
    EXPECT_GT(relative, 1e-6) << key << ": bf16 reduction left the gradients unchanged (" << a << ")";
    EXPECT_LT(relative, 1e-2) << key << ": " << c << " vs " << a;
  }
}

}  // namespace
}  // namespace verl::test
