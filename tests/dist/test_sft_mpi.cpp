// `mpirun -np N verl sft` (verl 0.9.1's sft_trainer layout) against `verl sft` in one process on the same data:
//   - 2 data-parallel ranks, and 2 Ulysses sequence-parallel ranks, log the one process's train/loss,
//     train/grad_norm, train/global_tokens and val/loss and save its weights (to fp32 rounding); only world rank 0
//     prints and logs;
//   - a batch that does not split over the ranks: one error line (world rank 0's), a non-zero exit, no hang.
// The trainer's data-parallel arithmetic is unit-tested over thread communicators (tests/unit/trainer/
// test_sft_data_parallel.cpp); this runs it across MPI processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/dist_run.h"
#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/model/weights.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

struct MpiSFTSetup {
  TinySFTSetup tiny;
  std::string train, val;
};

const MpiSFTSetup& mpi_sft_setup() {
  static const MpiSFTSetup s = [] {
    MpiSFTSetup m{make_tiny_sft_setup(make_temp_dir("dist_sft_setup"), 2, 2, /*hidden=*/32, /*layers=*/2, 9), "", ""};
    m.train = write_addition_conversations(m.tiny.dir + "/train.parquet", 17, 0, 7);
    m.val = write_addition_conversations(m.tiny.dir + "/val.parquet", 8, 0, 7);
    return m;
  }();
  return s;
}

std::string sft_command(const std::string& run_dir, const std::vector<std::string>& extra = {}) {
  const MpiSFTSetup& s = mpi_sft_setup();
  std::string command = verl_binary() + " sft --config-name sft_trainer_engine";
  std::vector<std::string> overrides = {"trainer.device=cpu",
                                        "data.train_files=" + s.train,
                                        "data.val_files=" + s.val,
                                        "data.train_batch_size=4",
                                        "data.micro_batch_size_per_gpu=1",
                                        "data.max_length=64",
                                        "model.path=" + s.tiny.model_dir,
                                        "trainer.default_local_dir=" + run_dir,
                                        "trainer.logger=[jsonl]",
                                        "trainer.total_training_steps=3",
                                        "trainer.num_cpu_threads=1",
                                        "optim.lr=3e-3"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  for (const std::string& o : overrides) command += " '" + o + "'";
  return command;
}

// Largest |a - b| over the tensors of two safetensors files (the same names).
double largest_weight_difference(const std::string& a_file, const std::string& b_file) {
  std::map<std::string, torch::Tensor> b;
  for (const auto& [name, t] : model::load_tensors(b_file)) b[name] = t;
  const auto a = model::load_tensors(a_file);
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (const auto& [name, t] : a) {
    if (!b.count(name)) {
      ADD_FAILURE() << name << " is missing from " << b_file;
      continue;
    }
    worst = std::max(worst, (t - b.at(name)).abs().max().item<double>());
  }
  return worst;
}

void expect_same_sft_run(const std::string& many_dir, const std::string& one_dir) {
  const std::string weights = "/global_step_3/huggingface/model.safetensors";
  ASSERT_TRUE(std::filesystem::exists(many_dir + weights));
  // Three AdamW steps of lr 3e-3 move the weights by up to ~9e-3; fp32 rounding of the reductions shows as ~1e-6.
  EXPECT_LT(largest_weight_difference(many_dir + weights, one_dir + weights), 1e-4);
  EXPECT_GT(largest_weight_difference(one_dir + weights, mpi_sft_setup().tiny.model_dir + "/model.safetensors"), 3e-3)
      << "three steps hardly changed the model";
  const trainer::MetricHistory one = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory many = trainer::read_metrics_jsonl(many_dir + "/metrics.jsonl");
  for (const char* key : {"train/loss", "train/grad_norm", "train/global_tokens", "val/loss"}) {
    ASSERT_TRUE(one.count(key) && many.count(key)) << key;
    ASSERT_EQ(many.at(key).size(), one.at(key).size()) << key;
    for (const auto& [step, want] : one.at(key)) {
      ASSERT_TRUE(many.at(key).count(step)) << key << " step " << step;
      EXPECT_NEAR(many.at(key).at(step), want, 1e-4 * std::max(std::abs(want), 1e-2)) << key << " step " << step;
    }
  }
}

TEST(SFTMpi, TwoDataParallelAndTwoSequenceParallelRanksEqualOneProcess) {
  const std::string one_dir = make_temp_dir("dist_sft_one");
  CommandResult one = run_command(sft_command(one_dir));
  ASSERT_EQ(one.exit_code, 0) << one.err;

  const std::string dp_dir = make_temp_dir("dist_sft_dp2");
  CommandResult dp = run_command(mpirun(2) + sft_command(dp_dir));
  ASSERT_EQ(dp.exit_code, 0) << dp.out << dp.err;
  expect_same_sft_run(dp_dir, one_dir);
  // World rank 0 alone prints the summary.
  size_t summaries = 0;
  for (size_t at = dp.out.find("sft: steps=3"); at != std::string::npos; at = dp.out.find("sft: steps=3", at + 1)) {
    ++summaries;
  }
  EXPECT_EQ(summaries, 1u) << dp.out;
  EXPECT_NE(dp.err.find("2 ranks (data-parallel 2)"), std::string::npos) << dp.err;

  const std::string sp_dir = make_temp_dir("dist_sft_sp2");
  CommandResult sp = run_command(mpirun(2) + sft_command(sp_dir, {"engine.ulysses_sequence_parallel_size=2"}));
  ASSERT_EQ(sp.exit_code, 0) << sp.out << sp.err;
  expect_same_sft_run(sp_dir, one_dir);
}

TEST(SFTMpi, ABatchThatDoesNotSplitOverTheRanksIsOneErrorLine) {
  const std::string dir = make_temp_dir("dist_sft_bad_batch");
  CommandResult r = run_command(mpirun(2) + sft_command(dir, {"data.train_batch_size=3"}));
  EXPECT_NE(r.exit_code, 0);
  const std::string line = "data.train_batch_size=3 must be divisible by the data-parallel size 2";
  const size_t at = r.err.find(line);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line, at + 1), std::string::npos) << "reported more than once:\n" << r.err;
}

}  // namespace
}  // namespace verl::test
