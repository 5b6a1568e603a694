// verl sft on several ranks (data parallel and Ulysses sequence parallel over in-process thread communicators; the
// same trainer mpirun runs, tests/dist/test_sft_mpi.cpp): against the one process on the same global batches,
//   - sft_trainer layout (its loss: the batch's tokens over every dp rank, times dp): 2 data-parallel ranks, 2
//     sequence-parallel ranks and 2 x 2, padded, packed and dynamic micro-batches, give the one process's losses,
//     gradient norms, val/loss and weights (to fp32 rounding), and the replicas stay bitwise the same;
//   - fsdp_sft_trainer layout (the mean over the ranks of their micro-batch means): 2 ranks of one-row micro-batches
//     equal the one process's one-row micro-batches; with data.balance_dp_token 2 ranks of half batches equal one
//     whole-batch micro-batch;
//   - the optimizer state sharded over the ranks (ZeRO-2, the default; ZeRO-1 in groups of engine.fsdp_size) or whole
//     (fsdp_size=1), and LoRA's adapters, train alike;
//   - 2 ranks checkpoint the model once (world rank 0) and the optimizer in shards, and resume exactly; one process
//     cannot resume from the shards (an error);
//   - a batch that does not split over the ranks, and sequence parallelism in one process: one error naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/config/sft_config.h"
#include "verl/parallel/comm.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

struct DPSetup {
  TinySFTSetup tiny;
  std::string train, val;
};

const DPSetup& dp_setup() {
  static const DPSetup s = [] {
    DPSetup d{make_tiny_sft_setup(make_temp_dir("sft_dp_setup"), 24, 8, /*hidden=*/32, /*layers=*/2, /*seed=*/5), "",
              ""};
    d.train =
        write_addition_conversations(d.tiny.dir + "/train.parquet", 21, 0, 3);  // 21: DistributedSampler drops rows
    d.val = write_addition_conversations(d.tiny.dir + "/val.parquet", 9, 4, 3);
    return d;
  }();
  return s;
}

// Both layouts' runs: 3 steps of 4 rows, lr 3e-3, one thread, nothing logged, a fresh folder.
std::vector<std::string> dp_run_overrides(const std::string& run) {
  return {"data.train_batch_size=4",
          "trainer.default_local_dir=" + make_temp_dir(run),
          "trainer.logger=[]",
          "trainer.total_epochs=1",
          "trainer.total_training_steps=3",
          "trainer.num_cpu_threads=1",
          "optim.lr=3e-3"};
}

config::SFTConfig engine_dp_config(const std::string& run, std::vector<std::string> extra) {
  const DPSetup& s = dp_setup();
  config::ConfigArgs args;
  args.config_name = "sft_trainer_engine";
  args.overrides = dp_run_overrides(run);
  for (const std::string& o :
       {std::string("trainer.device=cpu"), "data.train_files=" + s.train, "data.val_files=" + s.val,
        std::string("data.micro_batch_size_per_gpu=1"), std::string("data.max_length=64"),
        std::string("data.max_token_len_per_gpu=64"), "model.path=" + s.tiny.model_dir}) {
    args.overrides.push_back(o);
  }
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  return config::load_sft_config(args).sft;
}

config::SFTConfig legacy_dp_config(const std::string& run, std::vector<std::string> extra) {
  const DPSetup& s = dp_setup();
  config::ConfigArgs args;
  args.overrides = dp_run_overrides(run);
  for (const std::string& o : {"data.train_files=" + s.tiny.data_dir + "/sft_train.parquet",
                               "data.val_files=" + s.tiny.data_dir + "/sft_val.parquet",
                               std::string("data.prompt_key=prompt"), std::string("data.response_key=response"),
                               std::string("data.max_length=40"), "model.partial_pretrain=" + s.tiny.model_dir}) {
    args.overrides.push_back(o);
  }
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  return config::load_sft_config(args).sft;
}

struct RankRun {
  std::vector<std::map<std::string, double>> steps;
  std::optional<double> val_loss;
  std::vector<std::pair<std::string, torch::Tensor>> parameters;
  std::string error;
};

RankRun finish_rank(trainer::SFTTrainer& t) {
  RankRun run;
  const trainer::SFTFitResult result = t.fit([&](int64_t, const std::map<std::string, double>& metrics) {
    run.steps.push_back(metrics);
    return true;
  });
  run.val_loss = result.last_val_loss;
  for (const auto& item : t.model()->named_parameters()) run.parameters.emplace_back(item.key(), item.value().clone());
  return run;
}

// `ranks` trainers on threads (0: one process, no communicator); every rank's run.
std::vector<RankRun> run_ranks(const config::SFTConfig& cfg, int ranks) {
  if (ranks == 0) {
    try {
      trainer::SFTTrainer t(cfg, "");
      return {finish_rank(t)};
    } catch (const std::exception& e) {
      RankRun failed;
      failed.error = e.what();
      return {failed};
    }
  }
  const auto comms = parallel::thread_comms(ranks, /*timeout_seconds=*/120);
  std::vector<RankRun> runs(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        trainer::SFTTrainer t(cfg, "", nullptr, comms[static_cast<size_t>(r)]);
        runs[static_cast<size_t>(r)] = finish_rank(t);
      } catch (const std::exception& e) {
        runs[static_cast<size_t>(r)].error = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return runs;
}

double largest_absolute_difference(const RankRun& a, const RankRun& b) {
  EXPECT_EQ(a.parameters.size(), b.parameters.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.parameters.size(), b.parameters.size()); ++i) {
    worst = std::max(worst, (a.parameters[i].second - b.parameters[i].second).abs().max().item<double>());
  }
  return worst;
}

// `many` (every rank of a multi-rank run) against `one` (the one process): the same metrics and weights.
void expect_same_training(const std::vector<RankRun>& many, const RankRun& one, const config::SFTConfig& one_config,
                          double tolerance = 1e-4) {
  ASSERT_FALSE(many.empty());
  for (const RankRun& r : many) ASSERT_EQ(r.error, "");
  ASSERT_EQ(one.error, "");
  ASSERT_EQ(one.steps.size(), 3u);
  for (const RankRun& r : many) {
    ASSERT_EQ(r.steps.size(), one.steps.size());
    for (size_t step = 0; step < one.steps.size(); ++step) {
      for (const char* key : {"train/loss", "train/grad_norm", "train/lr"}) {
        const double want = one.steps[step].at(key);
        EXPECT_NEAR(r.steps[step].at(key), want, tolerance * std::max(std::abs(want), 1e-2))
            << key << " step " << step + 1;
      }
      if (one.steps[step].count("train/global_tokens")) {
        EXPECT_EQ(r.steps[step].at("train/global_tokens"), one.steps[step].at("train/global_tokens"));
      }
    }
    ASSERT_TRUE(r.val_loss && one.val_loss);
    EXPECT_NEAR(*r.val_loss, *one.val_loss, tolerance * std::abs(*one.val_loss));
    // AdamW's steps move the weights by ~lr = 3e-3 each; fp32 rounding of the reductions shows as ~1e-6.
    EXPECT_LT(largest_absolute_difference(r, one), 1e-4);
  }
  // The replicas: bitwise the same (every rank steps on the same averaged gradients).
  for (size_t r = 1; r < many.size(); ++r) EXPECT_EQ(largest_absolute_difference(many[r], many[0]), 0.0);
  // And the run trained: 3 AdamW steps of lr 3e-3 move the largest-moving weights by ~9e-3.
  trainer::SFTTrainer untouched(one_config, "");
  RankRun initial;
  for (const auto& item : untouched.model()->named_parameters())
    initial.parameters.emplace_back(item.key(), item.value());
  EXPECT_GT(largest_absolute_difference(one, initial), 3e-3);
}

TEST(SFTDataParallel, EngineLayoutTwoRanksEqualOneProcess) {
  // ZeRO-2 (the default), padded, packed with dynamic micro-batches, right padding, whole replicas (fsdp_size=1),
  // LoRA (the adapters' gradients averaged, their state sharded).
  for (const std::vector<std::string>& variant :
       {std::vector<std::string>{"model.use_remove_padding=false"}, std::vector<std::string>{"data.pad_mode=right"},
        std::vector<std::string>{"model.use_remove_padding=true", "data.use_dynamic_bsz=true"},
        std::vector<std::string>{"engine.fsdp_size=1"},
        std::vector<std::string>{"model.lora_rank=4", "model.lora_alpha=8"}}) {
    SCOPED_TRACE(variant.back());
    const config::SFTConfig one_config = engine_dp_config("sft_dp_engine1", variant);
    const std::vector<RankRun> one = run_ranks(one_config, 0);
    const std::vector<RankRun> two = run_ranks(engine_dp_config("sft_dp_engine2", variant), 2);
    expect_same_training(two, one[0], one_config);
  }
}

TEST(SFTDataParallel, EngineLayoutUlyssesTwoAndTwoByTwoEqualOneProcess) {
  const config::SFTConfig one_config = engine_dp_config("sft_sp_one", {});
  const std::vector<RankRun> one = run_ranks(one_config, 0);
  const std::vector<RankRun> sp =
      run_ranks(engine_dp_config("sft_sp_two", {"engine.ulysses_sequence_parallel_size=2"}), 2);
  expect_same_training(sp, one[0], one_config);
  const config::SFTConfig dynamic_config = engine_dp_config("sft_sp_one_dyn", {"data.use_dynamic_bsz=true"});
  const std::vector<RankRun> one_dynamic = run_ranks(dynamic_config, 0);
  const std::vector<RankRun> mesh = run_ranks(
      engine_dp_config("sft_sp_mesh", {"engine.ulysses_sequence_parallel_size=2", "data.use_dynamic_bsz=true"}), 4);
  expect_same_training(mesh, one_dynamic[0], dynamic_config);
  // Optimizer state sharded within pairs of ranks (HSDP: ZeRO-1 after the all-reduce over all 4).
  const std::vector<RankRun> hybrid = run_ranks(engine_dp_config("sft_dp_hsdp", {"engine.fsdp_size=2"}), 4);
  expect_same_training(hybrid, one[0], one_config);
}

TEST(SFTDataParallel, LegacyLayoutRanksAverageTheirMicroBatchMeans) {
  // One-row micro-batches: the mean over 2 ranks of their 2 rows' means is the one process's mean of 4.
  const config::SFTConfig one_config = legacy_dp_config("sft_dp_legacy1", {"data.micro_batch_size_per_gpu=1"});
  const std::vector<RankRun> one = run_ranks(one_config, 0);
  const std::vector<RankRun> two =
      run_ranks(legacy_dp_config("sft_dp_legacy2", {"data.micro_batch_size_per_gpu=1"}), 2);
  expect_same_training(two, one[0], one_config);
  // balance_dp_token: each rank's 2 rows over the tokens of all 4, times 2, averaged: the one process's single
  // micro-batch of 4 rows. (Validation batches hold micro_batch_size_per_gpu rows per rank, so val/loss averages
  // other batches: only the training is compared.)
  const std::vector<RankRun> whole =
      run_ranks(legacy_dp_config("sft_dp_whole", {"data.micro_batch_size_per_gpu=4"}), 0);
  const std::vector<RankRun> balanced = run_ranks(
      legacy_dp_config("sft_dp_balanced", {"data.micro_batch_size_per_gpu=2", "data.balance_dp_token=true"}), 2);
  ASSERT_EQ(balanced[0].error, "");
  ASSERT_EQ(whole[0].error, "");
  for (size_t step = 0; step < 3; ++step) {
    const double want = whole[0].steps[step].at("train/loss");
    EXPECT_NEAR(balanced[0].steps[step].at("train/loss"), want, 1e-5 * want) << step;
  }
  EXPECT_LT(largest_absolute_difference(balanced[0], whole[0]), 1e-4);
  EXPECT_EQ(largest_absolute_difference(balanced[1], balanced[0]), 0.0);
}

TEST(SFTDataParallel, TwoRanksCheckpointOnceAndResumeExactly) {
  const std::string dir = make_temp_dir("sft_dp_resume");
  const std::vector<std::string> saving = {"trainer.save_freq=1", "trainer.default_local_dir=" + dir + "/run"};
  std::vector<std::string> first = saving;
  first.push_back("trainer.total_training_steps=2");
  const std::vector<RankRun> part = run_ranks(engine_dp_config("sft_dp_resume_a", first), 2);
  ASSERT_EQ(part[0].error, "");
  ASSERT_EQ(part[1].error, "");
  // The whole model once, the optimizer state in the ranks' shards.
  EXPECT_TRUE(fs::exists(dir + "/run/global_step_2/model_world_size_1_rank_0.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/run/global_step_2/model_world_size_2_rank_1.safetensors"));
  EXPECT_TRUE(fs::exists(dir + "/run/global_step_2/optim_world_size_2_rank_0.pt"));
  EXPECT_TRUE(fs::exists(dir + "/run/global_step_2/optim_world_size_2_rank_1.pt"));
  // One process cannot take the two ranks' optimizer shards: an error naming the world sizes.
  const std::vector<RankRun> alone = run_ranks(engine_dp_config("sft_dp_resume_alone", saving), 0);
  EXPECT_NE(alone[0].error.find("world size 2"), std::string::npos) << alone[0].error;
  const std::vector<RankRun> resumed = run_ranks(engine_dp_config("sft_dp_resume_b", saving), 2);
  ASSERT_EQ(resumed[0].error, "");
  ASSERT_EQ(resumed[0].steps.size(), 1u);  // step 3 only
  std::vector<std::string> straight_keys = {"trainer.default_local_dir=" + dir + "/straight"};
  const std::vector<RankRun> straight = run_ranks(engine_dp_config("sft_dp_resume_c", straight_keys), 2);
  ASSERT_EQ(straight[0].error, "");
  EXPECT_EQ(resumed[0].steps[0].at("train/loss"), straight[0].steps[2].at("train/loss"));
  EXPECT_EQ(largest_absolute_difference(resumed[0], straight[0]), 0.0);
  EXPECT_EQ(largest_absolute_difference(resumed[1], straight[0]), 0.0);
}

TEST(SFTDataParallel, LayoutErrorsNameTheKey) {
  // 4 rows over 3 ranks.
  std::vector<RankRun> runs = run_ranks(engine_dp_config("sft_dp_err1", {}), 3);
  for (const RankRun& r : runs) EXPECT_NE(r.error.find("data.train_batch_size=4"), std::string::npos) << r.error;
  // Sequence parallelism in one process.
  runs = run_ranks(engine_dp_config("sft_dp_err2", {"engine.ulysses_sequence_parallel_size=2"}), 0);
  EXPECT_NE(runs[0].error.find("engine.ulysses_sequence_parallel_size=2 must divide the number of ranks (1"),
            std::string::npos)
      << runs[0].error;
  // fsdp_sft_trainer: 2 rows per rank do not make micro-batches of 4.
  runs = run_ranks(legacy_dp_config("sft_dp_err3", {"data.micro_batch_size_per_gpu=4"}), 2);
  for (const RankRun& r : runs) {
    EXPECT_NE(r.error.find("not divisible by data.micro_batch_size_per_gpu=4"), std::string::npos) << r.error;
  }
}

}  // namespace
}  // namespace verl::test
