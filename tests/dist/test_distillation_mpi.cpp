// On-policy distillation under `mpirun -np 3 verl train` (the controller and 2 worker slots): the teacher role
// (Role::TeacherModel, on the actor's pool) splits the batch between the slots, and two greedy GRPO + distillation
// steps end with the actor and the distillation metrics of the 1-slot run; forward_kl_topk under megatron TP=2 the
// same (the vocabulary shards gathered for the top-k reads).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const DigitCompletionSetup& distillation_mpi_setup() {
  static const DigitCompletionSetup s = make_digit_completion_setup(make_temp_dir("dist_distillation_setup"), 8);
  return s;
}

const std::string& distillation_mpi_teacher() {
  static const std::string dir =
      make_sharpened_teacher(distillation_mpi_setup().model_dir, 4.0, "dist_distillation_teacher");
  return dir;
}

// Two greedy GRPO steps with a teacher, on `slots` worker slots, checkpointed at the end.
std::vector<std::string> two_distillation_steps(const DigitCompletionSetup& setup, const std::string& run_dir,
                                                int slots, const std::string& teacher) {
  std::vector<std::string> o = setup.base_overrides(run_dir);
  const std::vector<std::string> more = {"algorithm.adv_estimator=grpo",
                                         "actor_rollout_ref.rollout.do_sample=false",
                                         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                                         "trainer.balance_batch=false",
                                         "trainer.total_training_steps=2",
                                         "trainer.save_freq=2",
                                         "trainer.test_freq=-1",
                                         "trainer.num_cpu_threads=1",
                                         "actor_rollout_ref.actor.optim.lr=1e-3",
                                         "distillation.enabled=true",
                                         "distillation.teacher_models.teacher_model.model_path=" + teacher,
                                         "trainer.n_gpus_per_node=" + std::to_string(slots)};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

std::vector<std::string> distillation_mpi_run(const std::string& run_dir, int slots) {
  std::vector<std::string> o =
      two_distillation_steps(distillation_mpi_setup(), run_dir, slots, distillation_mpi_teacher());
  o.push_back("distillation.teacher_models.teacher_model.inference.max_num_batched_tokens=40");
  return o;
}

TEST(DistillationMpi, TwoSlotsEqualOneSlotForTwoSteps) {
  const std::string one_dir = make_temp_dir("dist_distill1");
  const std::string two_dir = make_temp_dir("dist_distill2");
  CommandResult one = run_command(verl_train_command(distillation_mpi_run(one_dir, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(distillation_mpi_run(two_dir, 2)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;

  const std::string reference = one_dir + "/global_step_2/actor/model_world_size_1_rank_0.safetensors";
  for (int r = 0; r < 2; ++r) {
    const std::string file =
        two_dir + "/global_step_2/actor/model_world_size_2_rank_" + std::to_string(r) + ".safetensors";
    ASSERT_TRUE(fs::exists(file)) << file;
    auto [diff, name] = max_relative_difference(file, reference);
    EXPECT_LT(diff, 1e-5) << "rank " << r << ": " << name;
  }
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(two_dir + "/metrics.jsonl");
  for (const char* key : {"actor/distillation/loss", "actor/distillation/abs_loss", "actor/distillation/loss_max",
                          "actor/pg_loss", "actor/grad_norm"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) {
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-3)) << key << " step " << step;
    }
  }
  EXPECT_GT(m1.at("actor/distillation/loss").at(1), 0.0) << "the sharper teacher disagrees with the student";
}

// forward_kl_topk under strategy=megatron, TP=2 (mpirun -np 3): the student's log-probs at the teacher's top-k are
// read from the gathered vocabulary shards. Two greedy steps end with the 1-rank run's whole weights (huggingface/,
// within 1e-3: row-parallel layers add partial products in another order) and its distillation metrics.
const DigitCompletionSetup& distillation_tp_setup() {
  static const DigitCompletionSetup s =
      make_digit_completion_setup(make_temp_dir("dist_distillation_tp_setup"), 8, /*hidden_size=*/32,
                                  /*num_layers=*/2, /*num_heads=*/4);
  return s;
}

std::vector<std::string> topk_tp_run(const std::string& run_dir, int slots, const std::string& teacher) {
  std::vector<std::string> o = two_distillation_steps(distillation_tp_setup(), run_dir, slots, teacher);
  const std::vector<std::string> more = {
      "actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]",
      "distillation.distillation_loss.loss_mode=forward_kl_topk", "distillation.distillation_loss.topk=4",
      "distillation.distillation_loss.use_task_rewards=false"};
  o.insert(o.end(), more.begin(), more.end());
  if (slots > 1) {
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"),
          "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + std::to_string(slots),
          "actor_rollout_ref.rollout.tensor_model_parallel_size=" + std::to_string(slots)}) {
      o.push_back(extra);
    }
  }
  return o;
}

TEST(DistillationMpi, TopKForwardKlUnderTensorParallelTwoEqualsOneRank) {
  const std::string teacher =
      make_sharpened_teacher(distillation_tp_setup().model_dir, 4.0, "dist_distillation_tp_teacher");
  const std::string one_dir = make_temp_dir("dist_distill_topk1");
  const std::string tp_dir = make_temp_dir("dist_distill_topk_tp2");
  CommandResult one = run_command(verl_train_command(topk_tp_run(one_dir, 1, teacher)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(topk_tp_run(tp_dir, 2, teacher)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;

  const std::string hf = "/global_step_2/actor/huggingface/model.safetensors";
  auto [diff, name] = max_relative_difference(tp_dir + hf, one_dir + hf);
  EXPECT_LT(diff, 1e-3) << name;
  auto [moved, moved_name] =
      max_relative_difference(one_dir + hf, distillation_tp_setup().model_dir + "/model.safetensors");
  EXPECT_GT(moved, 1e-3) << "the actor did not move: " << moved_name;
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(tp_dir + "/metrics.jsonl");
  for (const char* key : {"actor/distillation/loss", "actor/distillation/student_mass",
                          "actor/distillation/overlap_ratio", "actor/distillation/loss_max", "actor/grad_norm"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) {
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
  EXPECT_GT(m1.at("actor/distillation/loss").at(1), 0.0) << "the sharper teacher disagrees with the student";
}

}  // namespace
}  // namespace verl::test
