// strategy=megatron (tensor, pipeline and context parallelism; with TP > 1 Megatron's sequence parallelism, verl's
// default) under mpirun, against the 1-rank fsdp run on the same global batch:
//   - TP=2 (mpirun -np 3) and DP=2 x TP=2 (-np 5): three GAE steps with greedy rollouts end with the actor's
//     and the critic's whole weights (huggingface/, gathered from the slices) within 1e-3 of the 1-rank run's,
//     the same metrics, and the same greedy validation (so generation on the slices gave the same tokens);
//   - each rank's checkpoint file holds its slices, and `verl model export` puts them back together; a run
//     resumed at step 2 ends bit-identical to the uninterrupted one;
//   - a Qwen2-MoE under TP=2 (every expert split as a dense MLP, the router whole) is the 1-rank run too;
//   - model_engine=megatron: each worker rank schedules its LR (Megatron's cosine / linear) over the trainer's steps;
//   - pipeline parallelism: 2 stages (mpirun -np 3), 2 stages x TP=2 (-np 5) and 2 stages of 2 interleaved runs
//     with a tied LM head are the 1-rank run too, the stages' files export and resume bit-identical;
//   - context parallelism: CP=2 (-np 3) and CP=2 x TP=2 (-np 5) are the 1-rank run, export and resume;
//   - a TP size that does not divide the devices, a rollout TP that does not, TP without mpirun, and
//     TP x PP ranks that do not divide the devices are one error line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/io/safetensors.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

// 4 query and 4 KV heads, intermediate 64, vocabulary 16: every split of TP=2 is real.
const DigitCompletionSetup& setup() {
  static const DigitCompletionSetup s =
      make_digit_completion_setup(make_temp_dir("dist_megatron_setup"), 8, /*hidden_size=*/32, /*num_layers=*/2,
                                  /*num_heads=*/4);
  return s;
}

// A Qwen2-MoE of the same size: layer 0 dense, layer 1 four experts (two per token) and the shared expert; every
// expert's and the shared expert's intermediate sizes split under TP=2, the router whole.
const std::string& moe_model() {
  static const std::string dir = make_digit_completion_model(
      setup(), "qwen2_moe",
      "--arch qwen2_moe --hidden-size 32 --num-layers 2 --num-heads 4 --num-kv-heads 4 --intermediate-size 64 "
      "--num-experts 4 --experts-per-token 2 --moe-intermediate-size 32 --shared-expert-intermediate-size 48 "
      "--decoder-sparse-step 2");
  return dir;
}

// Four layers (two virtual stages of one layer on each of two stages), the LM head tied to the embedding (the first
// and last stages each hold a copy, their gradients summed).
const std::string& four_layer_tied_model() {
  static const std::string dir = make_digit_completion_model(
      setup(), "four_layers_tied",
      "--arch qwen3 --hidden-size 32 --num-layers 4 --num-heads 4 --num-kv-heads 4 --intermediate-size 64 "
      "--tie-word-embeddings");
  return dir;
}

std::vector<std::string> gae_run(const std::string& run_dir, int slots, int tp, bool sampled = false,
                                 const std::string& model_dir = "", int pp = 1, int cp = 1) {
  DigitCompletionSetup data = setup();
  if (!model_dir.empty()) data.model_dir = model_dir;
  std::vector<std::string> o = data.base_overrides(run_dir);
  for (const std::string& extra :
       {std::string("algorithm.adv_estimator=gae"),
        std::string("actor_rollout_ref.rollout.do_sample=") + (sampled ? "true" : "false"),
        std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
        std::string("critic.ppo_micro_batch_size_per_gpu=4"), std::string("trainer.balance_batch=false"),
        std::string("trainer.total_training_steps=3"), std::string("trainer.save_freq=3"),
        std::string("trainer.num_cpu_threads=1"), std::string("trainer.test_freq=3"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"), std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"),
        std::string("critic.checkpoint.save_contents=[model,optimizer,extra,hf_model]"),
        "trainer.n_gpus_per_node=" + std::to_string(slots)}) {
    o.push_back(extra);
  }
  if (tp * pp * cp > 1) {
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"), std::string("critic.strategy=megatron"),
          "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=" + std::to_string(tp),
          "actor_rollout_ref.rollout.tensor_model_parallel_size=" + std::to_string(tp),
          "critic.megatron.tensor_model_parallel_size=" + std::to_string(tp),
          // verl's ref pipeline size follows the actor's (oc.select); the critic's is its own.
          "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=" + std::to_string(pp),
          "critic.megatron.pipeline_model_parallel_size=" + std::to_string(pp),
          // The ref's context-parallel size follows the actor's too.
          "actor_rollout_ref.actor.megatron.context_parallel_size=" + std::to_string(cp),
          "critic.megatron.context_parallel_size=" + std::to_string(cp)}) {
      o.push_back(extra);
    }
  }
  return o;
}

void expect_same_run(const std::string& one_dir, const std::string& tp_dir, const std::string& model_dir = "",
                     double weight_tolerance = 1e-3) {
  for (const std::string role : {"actor", "critic"}) {
    const std::string hf = "/global_step_3/" + role + "/huggingface/model.safetensors";
    ASSERT_TRUE(fs::exists(tp_dir + hf)) << role;
    // Row-parallel layers add partial products in another order, so a few elements differ by rounding; AdamW
    // turns an element whose gradient is ~0 into a step of up to lr either way, which shows those few (measured:
    // <= 8 of 1024 above 1e-5, the largest 2e-4 relative, where every element moved ~3e-3 in the three steps). A
    // wrong slice, a missing reduction or a mis-clipped norm moves every element by ~lr: 1e-1 relative.
    auto [diff, name] = max_relative_difference(tp_dir + hf, one_dir + hf);
    EXPECT_LT(diff, weight_tolerance) << role << ": " << name;
  }
  // The runs trained: the step-3 actor is not the initial model.
  auto [moved, name] =
      max_relative_difference(one_dir + "/global_step_3/actor/huggingface/model.safetensors",
                              (model_dir.empty() ? setup().model_dir : model_dir) + "/model.safetensors");
  EXPECT_GT(moved, 0.1) << "the actor hardly changed in three steps";

  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(tp_dir + "/metrics.jsonl");
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/grad_norm",
                          "critic/values/mean", "critic/advantages/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 3; ++step) {
      ASSERT_TRUE(m1.at(key).count(step) && m2.at(key).count(step)) << key << " step " << step;
      const double expected = m1.at(key).at(step);
      // Relative 1e-4, with a 1e-6 floor: pg_loss and the advantages' mean are ~1e-8 at step 1 (whitened
      // advantages), where fp32 rounding alone differs by ~1e-7 between BLAS kernels (seen on an Intel Xeon).
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
  // Greedy generation on the slices chose the same tokens: equal lengths and scores, in training and validation.
  int validation_keys = 0;
  for (const auto& [key, by_step] : m1) {
    const bool tokens = key.rfind("response_length/", 0) == 0 || key.rfind("critic/score/", 0) == 0 ||
                        key.rfind("val-core/", 0) == 0;
    if (!tokens) continue;
    validation_keys += key.rfind("val-core/", 0) == 0 ? 1 : 0;
    ASSERT_TRUE(m2.count(key)) << key;
    for (const auto& [step, value] : by_step) EXPECT_EQ(m2.at(key).at(step), value) << key << " step " << step;
  }
  EXPECT_GT(validation_keys, 0);
}

// `verl model export` of run_dir's step-3 checkpoint (from the ranks' files) is bit for bit the HF folder the run
// gathered itself.
void expect_export_is_the_gathered_model(const std::string& run_dir, const std::string& name) {
  const std::string exported = make_temp_dir(name);
  const std::string checkpoint = run_dir + "/global_step_3";
  CommandResult ex =
      run_command(verl_binary() + " model export --checkpoint '" + checkpoint + "' --out '" + exported + "'");
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  auto [diff, tensor] = max_relative_difference(exported + "/model.safetensors",
                                                checkpoint + "/actor/huggingface/model.safetensors");
  EXPECT_EQ(diff, 0.0) << tensor;
}

// `whole_dir`'s run (2 worker ranks, saving every step) stopped after step 2 and resumed with `overrides_for(its
// folder)`: each rank's step-3 files of both roles are bit-identical to the uninterrupted run's.
void expect_resumed_run_bit_identical(const std::string& whole_dir, const std::string& name,
                                      const std::function<std::vector<std::string>(const std::string&)>& overrides_for) {
  const std::string resumed_dir = make_temp_dir(name);
  fs::copy(whole_dir, resumed_dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove_all(resumed_dir + "/global_step_3");
  std::ofstream(resumed_dir + "/latest_checkpointed_iteration.txt") << "2";
  std::vector<std::string> again = overrides_for(resumed_dir);
  again.push_back("trainer.save_freq=1");
  CommandResult part2 = run_command(mpirun(3) + verl_train_command(again));
  ASSERT_EQ(part2.exit_code, 0) << part2.out << part2.err;
  for (const std::string role : {"actor", "critic"}) {
    for (int r = 0; r < 2; ++r) {
      const std::string file =
          "/global_step_3/" + role + "/model_world_size_2_rank_" + std::to_string(r) + ".safetensors";
      ASSERT_TRUE(fs::exists(resumed_dir + file)) << file;
      auto [diff, tensor] = max_relative_difference(resumed_dir + file, whole_dir + file);
      EXPECT_EQ(diff, 0.0) << role << " rank " << r << ": " << tensor;
    }
  }
}

TEST(Megatron, TensorParallelTwoEqualsOneRankForThreePpoSteps) {
  const std::string one_dir = make_temp_dir("dist_megatron_tp1");
  const std::string tp_dir = make_temp_dir("dist_megatron_tp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult two = run_command(mpirun(3) + verl_train_command(gae_run(tp_dir, 2, 2)));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(one_dir, tp_dir);

  // Each rank's file holds its slices (half the vocabulary's embedding rows) ...
  const std::string actor = tp_dir + "/global_step_3/actor";
  for (int r = 0; r < 2; ++r) {
    io::SafetensorsCheckpoint slice(actor + "/model_world_size_2_rank_" + std::to_string(r) + ".safetensors");
    EXPECT_EQ(slice.get("model.embed_tokens.weight").shape.at(0), 8) << "rank " << r;
    EXPECT_EQ(slice.get("model.layers.0.self_attn.o_proj.weight").shape.at(1), 16) << "rank " << r;
  }
  // ... and the exporter puts them back together.
  expect_export_is_the_gathered_model(tp_dir, "dist_megatron_export");
}

TEST(Megatron, DataTimesTensorParallelEqualsOneRankForThreePpoSteps) {
  const std::string one_dir = make_temp_dir("dist_megatron_dp1");
  const std::string mesh_dir = make_temp_dir("dist_megatron_dp2tp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult four = run_command(mpirun(5) + verl_train_command(gae_run(mesh_dir, 4, 2)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  expect_same_run(one_dir, mesh_dir);
}

// Experts under TP=2: each rank holds every expert's slices (Megatron's expert_tensor_parallel_size = TP, no expert
// parallelism), every rank routes each token to the same experts, and the run is the 1-rank run.
TEST(Megatron, MixtureOfExpertsTensorParallelTwoEqualsOneRank) {
  const std::string one_dir = make_temp_dir("dist_megatron_moe_tp1");
  const std::string tp_dir = make_temp_dir("dist_megatron_moe_tp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1, false, moe_model())));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> tp_run = gae_run(tp_dir, 2, 2, false, moe_model());
  tp_run.push_back("actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=2");  // Megatron's default: TP
  CommandResult two = run_command(mpirun(3) + verl_train_command(tp_run));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(one_dir, tp_dir, moe_model());
  io::SafetensorsCheckpoint slice(tp_dir + "/global_step_3/actor/model_world_size_2_rank_1.safetensors");
  EXPECT_EQ(slice.get("model.layers.1.mlp.experts.3.gate_proj.weight").shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(slice.get("model.layers.1.mlp.shared_expert.down_proj.weight").shape, (std::vector<int64_t>{32, 24}));
  EXPECT_EQ(slice.get("model.layers.1.mlp.gate.weight").shape, (std::vector<int64_t>{4, 32}));
}

// Pipeline parallelism: two stages of one layer each (the first holding the embedding, the last the final norm and
// the heads), the hidden states passed between them; with TP=2 inside each stage too (mpirun -np 5). The same run as
// one rank's, the HF weights gathered from the stages, `verl model export` puts the rank files back together, and a
// run resumed at step 2 from the stages' own files ends bit-identical to the uninterrupted one.
TEST(Megatron, PipelineParallelTwoStagesEqualOneRankAndResumeBitIdentical) {
  const std::string one_dir = make_temp_dir("dist_megatron_pp1");
  const std::string pp_dir = make_temp_dir("dist_megatron_pp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> every_step = gae_run(pp_dir, 2, 1, false, "", /*pp=*/2);
  every_step.push_back("trainer.save_freq=1");
  CommandResult two = run_command(mpirun(3) + verl_train_command(every_step));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(one_dir, pp_dir);

  // Each stage's file holds its own layer: the embedding on the first, the final norm on the last.
  const std::string actor = pp_dir + "/global_step_3/actor";
  io::SafetensorsCheckpoint first(actor + "/model_world_size_2_rank_0.safetensors");
  io::SafetensorsCheckpoint last(actor + "/model_world_size_2_rank_1.safetensors");
  EXPECT_TRUE(first.contains("model.embed_tokens.weight"));
  EXPECT_TRUE(first.contains("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_FALSE(first.contains("model.layers.1.self_attn.q_proj.weight"));
  EXPECT_FALSE(first.contains("model.norm.weight"));
  EXPECT_TRUE(last.contains("model.layers.1.self_attn.q_proj.weight"));
  EXPECT_FALSE(last.contains("model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(last.contains("model.norm.weight"));
  expect_export_is_the_gathered_model(pp_dir, "dist_megatron_pp_export");

  // Stopped after step 2 and resumed from the stages' files.
  expect_resumed_run_bit_identical(pp_dir, "dist_megatron_pp_resumed", [](const std::string& dir) {
    return gae_run(dir, 2, 1, false, "", /*pp=*/2);
  });
}

TEST(Megatron, PipelineTimesTensorParallelEqualsOneRankForThreePpoSteps) {
  const std::string one_dir = make_temp_dir("dist_megatron_pptp1");
  const std::string mesh_dir = make_temp_dir("dist_megatron_pp2tp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  CommandResult four = run_command(mpirun(5) + verl_train_command(gae_run(mesh_dir, 4, 2, false, "", /*pp=*/2)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  expect_same_run(one_dir, mesh_dir);
}

// Megatron's interleaved layout: virtual_pipeline_model_parallel_size=2 puts layers 0 and 2 on the first stage, 1 and 3
// on the last; a forward goes round the two stages twice. A tied LM head keeps a copy of the embedding on the last
// stage. The run is the 1-rank run.
TEST(Megatron, VirtualPipelineStagesWithTiedEmbeddingsEqualOneRank) {
  const std::string one_dir = make_temp_dir("dist_megatron_vpp1");
  const std::string vpp_dir = make_temp_dir("dist_megatron_vpp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1, false, four_layer_tied_model())));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> interleaved = gae_run(vpp_dir, 2, 1, false, four_layer_tied_model(), /*pp=*/2);
  interleaved.push_back("actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2");
  interleaved.push_back("critic.megatron.virtual_pipeline_model_parallel_size=2");
  CommandResult two = run_command(mpirun(3) + verl_train_command(interleaved));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(one_dir, vpp_dir, four_layer_tied_model());
  io::SafetensorsCheckpoint first(vpp_dir + "/global_step_3/actor/model_world_size_2_rank_0.safetensors");
  io::SafetensorsCheckpoint last(vpp_dir + "/global_step_3/actor/model_world_size_2_rank_1.safetensors");
  for (int layer = 0; layer < 4; ++layer) {
    const std::string name = "model.layers." + std::to_string(layer) + ".mlp.up_proj.weight";
    EXPECT_EQ(first.contains(name), layer % 2 == 0) << name;
    EXPECT_EQ(last.contains(name), layer % 2 == 1) << name;
  }
  EXPECT_TRUE(first.contains("model.embed_tokens.weight"));
  EXPECT_TRUE(last.contains("model.embed_tokens.weight"));  // the tied LM head's copy
  expect_export_is_the_gathered_model(vpp_dir, "dist_megatron_vpp_export");
}

// Context parallelism: the two ranks of one model copy each run every layer on half of each sequence (padded to a
// multiple of 2), attending with their own queries over both halves' keys and values, for the actor's update and
// log-probs, the ref's and the critic's; their gradients are averaged as a data-parallel pair's. The run is the
// 1-rank run; both ranks' files hold the whole model (the first exports); a run resumed at step 2 ends
// bit-identical. With TP=2 inside (-np 5), the 1-rank run too.
TEST(Megatron, ContextParallelTwoEqualsOneRankAndResumesBitIdentical) {
  const std::string one_dir = make_temp_dir("dist_megatron_cp1");
  const std::string cp_dir = make_temp_dir("dist_megatron_cp2");
  CommandResult one = run_command(verl_train_command(gae_run(one_dir, 1, 1)));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  std::vector<std::string> every_step = gae_run(cp_dir, 2, 1, false, "", /*pp=*/1, /*cp=*/2);
  every_step.push_back("trainer.save_freq=1");
  CommandResult two = run_command(mpirun(3) + verl_train_command(every_step));
  ASSERT_EQ(two.exit_code, 0) << two.out << two.err;
  expect_same_run(one_dir, cp_dir);
  expect_export_is_the_gathered_model(cp_dir, "dist_megatron_cp_export");
  expect_resumed_run_bit_identical(cp_dir, "dist_megatron_cp_resumed", [](const std::string& dir) {
    return gae_run(dir, 2, 1, false, "", /*pp=*/1, /*cp=*/2);
  });

  const std::string mesh_dir = make_temp_dir("dist_megatron_cp2tp2");
  CommandResult four = run_command(mpirun(5) + verl_train_command(gae_run(mesh_dir, 4, 2, false, "", 1, /*cp=*/2)));
  ASSERT_EQ(four.exit_code, 0) << four.out << four.err;
  // Both splits reorder sums: one element of near-zero size moved 1.04e-6 from the 1-rank run's (1.04e-3 of the
  // 1e-3 floor; every tensor within 2e-4 of its largest element, measured on an Intel Xeon), where a wrong split
  // moves every element by ~lr.
  expect_same_run(one_dir, mesh_dir, "", /*weight_tolerance=*/3e-3);
}

// Each rank reloads its own slices and optimizer shard, and the sampling state: a run stopped at step 2 and
// resumed ends where the uninterrupted one does, bit for bit. Sampled rollouts: the TP ranks of a copy must draw
// the same tokens (the worker checks it after every generation and fails otherwise).
TEST(Megatron, ResumedTensorParallelRunEndsBitIdentical) {
  const std::string whole_dir = make_temp_dir("dist_megatron_whole");
  std::vector<std::string> every_step = gae_run(whole_dir, 2, 2, /*sampled=*/true);
  every_step.push_back("trainer.save_freq=1");
  CommandResult whole = run_command(mpirun(3) + verl_train_command(every_step));
  ASSERT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  // The same run stopped after step 2: its folder without step 3.
  expect_resumed_run_bit_identical(whole_dir, "dist_megatron_resumed", [](const std::string& dir) {
    return gae_run(dir, 2, 2, /*sampled=*/true);
  });
}

// model_engine=megatron under mpirun: every worker rank (this rank read its own config, where the step budget is
// -1) schedules its LR over the trainer's steps, Megatron's way: the actor's cosine after one warmup step from 0,
// the critic's linear decay; the metrics come from a worker rank, not the controller.
TEST(Megatron, ModelEngineMegatronSchedulesEachRanksLrOverTheTrainersSteps) {
  const std::string dir = make_temp_dir("dist_megatron_schedule");
  std::vector<std::string> o = gae_run(dir, 2, 2);
  for (const char* extra : {"model_engine=megatron", "actor_rollout_ref.actor.optim.lr_decay_style=cosine",
                            "actor_rollout_ref.actor.optim.lr_warmup_steps=1",
                            "actor_rollout_ref.actor.optim.min_lr=1e-4", "critic.optim.lr_decay_style=linear"}) {
    o.push_back(extra);
  }
  CommandResult run = run_command(mpirun(3) + verl_train_command(o));
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const trainer::MetricHistory m = trainer::read_metrics_jsonl(dir + "/metrics.jsonl");
  // Megatron's get_lr over 3 steps: warmup 1 from 0, then cos over 2; linear over 3 (min_lr 0).
  const std::map<std::string, std::vector<double>> expected = {
      {"actor/lr", {0.0, 1e-3, 1e-4 + 0.5 * (1e-3 - 1e-4)}},
      {"critic/lr", {1e-3, 1e-3 * 2.0 / 3.0, 1e-3 / 3.0}},
  };
  for (const auto& [key, lrs] : expected) {
    ASSERT_TRUE(m.count(key)) << key;
    for (size_t step = 0; step < lrs.size(); ++step) {
      EXPECT_NEAR(m.at(key).at(static_cast<int64_t>(step) + 1), lrs[step], 1e-12) << key << " step " << step + 1;
    }
  }
}

TEST(Megatron, BadTensorParallelConfigsAreOneErrorLine) {
  const std::string dir = make_temp_dir("dist_megatron_bad");
  auto one_line = [](const CommandResult& r, const std::string& expected) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    size_t lines = 0;
    for (size_t at = r.err.find("error: "); at != std::string::npos; at = r.err.find("error: ", at + 1)) ++lines;
    EXPECT_EQ(lines, 1u) << r.err;
  };
  one_line(run_command(verl_train_command(gae_run(dir, 2, 3))),
           "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3 must divide the actor's 2 devices");
  std::vector<std::string> rollout = gae_run(dir, 2, 2);
  rollout.push_back("actor_rollout_ref.rollout.tensor_model_parallel_size=3");
  one_line(run_command(verl_train_command(rollout)),
           "actor_rollout_ref.rollout.tensor_model_parallel_size=3 must divide the rollout's 2 devices");
  // A model copy of TP 2 x PP 2 ranks does not fit in 2 devices.
  std::vector<std::string> pipeline = gae_run(dir, 2, 2);
  pipeline.push_back("critic.megatron.pipeline_model_parallel_size=2");
  one_line(run_command(verl_train_command(pipeline)),
           "critic.megatron.tensor_model_parallel_size=2 x critic.megatron.pipeline_model_parallel_size=2 must divide "
           "the critic's 2 devices");

  // Tensor parallelism needs collectives between the ranks: in one process there are none.
  CommandResult in_process = run_command(verl_train_command(gae_run(dir, 2, 2)));
  EXPECT_NE(in_process.exit_code, 0);
  EXPECT_NE(in_process.err.find("launch with mpirun"), std::string::npos) << in_process.err;
}

}  // namespace
}  // namespace verl::test
