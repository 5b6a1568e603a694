// PPOTrainer with in-process test-double workers (fake_ppo_workers.h): verl's step order, the metric keys,
// balance_batch, uid grouping, ReMax's greedy baseline, critic warm-up, validation, rollout dumps,
// checkpoints (layout, rotation) and exact resume after a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "support/char_tokenizer.h"
#include "support/error_text.h"
#include "support/metric_compare.h"
#include "support/run_command.h"
#include "unit/trainer/fake_ppo_workers.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/trainer/checkpoint_paths.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;
using single_controller::ResourcePoolManager;
using single_controller::Role;
using trainer::PPOTrainer;

constexpr int64_t kResponseLength = 4;

struct Harness {
  std::string dir;
  std::shared_ptr<config::PPOConfig> config;
  std::shared_ptr<CallLog> log = std::make_shared<CallLog>();
  std::ostringstream console;
  std::function<void(int64_t, const std::string&)> on_checkpoint_saved;

  Harness(const std::string& name, const std::vector<std::string>& overrides) : dir(make_temp_dir(name)) {
    write_char_tokenizer(dir + "/tok");
    std::vector<std::string> all = {"data.train_batch_size=4",
                                    "data.max_prompt_length=12",
                                    "data.max_response_length=4",
                                    "data.seed=7",
                                    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
                                    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
                                    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
                                    "critic.ppo_micro_batch_size_per_gpu=1",
                                    "actor_rollout_ref.rollout.n=2",
                                    "trainer.n_gpus_per_node=2",
                                    "trainer.logger=[jsonl]",
                                    "trainer.default_local_dir=" + dir + "/run",
                                    "trainer.total_epochs=10",
                                    "trainer.val_before_train=false"};
    all.insert(all.end(), overrides.begin(), overrides.end());
    config::ConfigArgs args;
    args.overrides = all;
    config = std::make_shared<config::PPOConfig>(config::load_config(args).ppo);
  }

  std::unique_ptr<PPOTrainer> make_trainer(int64_t num_prompts = 12) {
    auto tok = std::make_shared<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir + "/tok"));
    trainer::RoleWorkerMapping mapping;
    std::map<Role, std::string> pools;
    auto log_copy = log;
    mapping[Role::ActorRollout] = [log_copy](const WorkerContext& ctx) -> std::unique_ptr<Worker> {
      return std::make_unique<FakeActorRolloutWorker>(ctx, log_copy, "actor_rollout", kResponseLength);
    };
    pools[Role::ActorRollout] = "global_pool";
    if (trainer::need_critic(*config)) {
      mapping[Role::Critic] = [log_copy](const WorkerContext& ctx) -> std::unique_ptr<Worker> {
        return std::make_unique<FakeCriticWorker>(ctx, log_copy);
      };
      pools[Role::Critic] = "global_pool";
    }
    if (trainer::need_reference_policy(*config)) {
      mapping[Role::RefPolicy] = [log_copy](const WorkerContext& ctx) -> std::unique_ptr<Worker> {
        return std::make_unique<FakeActorRolloutWorker>(ctx, log_copy, "ref", kResponseLength);
      };
      pools[Role::RefPolicy] = "global_pool";
    }
    ResourcePoolManager manager({{"global_pool", {static_cast<int>(config->trainer.n_gpus_per_node)}}}, pools);
    auto train = std::make_shared<FakePromptLoader>(num_prompts, config->data.train_batch_size, 12, true, 7);
    auto val = std::make_shared<FakePromptLoader>(6, 6, 12, false, 0);
    trainer::PPOTrainerOptions options;
    options.seqlen_partitioner = greedy_partitions;
    options.console_out = &console;
    options.progress_mode = ProgressBar::Mode::Silent;
    options.on_checkpoint_saved = on_checkpoint_saved;
    return std::make_unique<PPOTrainer>(config, tok, mapping, std::move(manager), fake_reward, fake_reward, train, val,
                                        options);
  }

  trainer::MetricHistory history() const { return trainer::read_metrics_jsonl(dir + "/run/metrics.jsonl"); }
};

bool has(const trainer::MetricHistory& history, const std::string& key, int64_t step) {
  auto it = history.find(key);
  return it != history.end() && it->second.count(step) > 0;
}

TEST(PPOTrainer, GaeStepCallsWorkersInVerlOrderAndLogsMetricKeys) {
  Harness h("ppo_trainer_order", {"algorithm.use_kl_in_reward=true", "trainer.total_training_steps=1",
                                  "trainer.test_freq=1", "trainer.val_before_train=true",
                                  "trainer.rollout_data_dir=${trainer.default_local_dir}/rollouts"});
  auto trainer = h.make_trainer();
  EXPECT_TRUE(trainer->use_critic());
  EXPECT_TRUE(trainer->use_reference_policy());
  trainer->init_workers();
  // The step budget reaches the trained roles' schedules with init_model (under mpirun a worker has its own config).
  for (const std::string role : {"actor_rollout", "critic"}) {
    ASSERT_TRUE(h.log->init_meta.count(role)) << role;
    EXPECT_EQ(h.log->init_meta.at(role).value("total_training_steps", int64_t{-1}), 1) << role;
  }
  trainer->fit();
  EXPECT_EQ(h.log->failure, "");
  const std::vector<std::string> expected = {
      "critic.init_model",                  "ref.init_model",
      "actor_rollout.init_model",           "actor_rollout.generate_sequences",  // validation before training
      "actor_rollout.generate_sequences",   "actor_rollout.compute_log_prob",
      "ref.compute_ref_log_prob",           "critic.compute_values",
      "critic.update_critic",               "actor_rollout.update_actor",
      "actor_rollout.generate_sequences"};  // validation at the last step
  EXPECT_EQ(h.log->calls, expected);

  // Validation generates greedily with validate=true; training samples.
  ASSERT_EQ(h.log->generate_meta.size(), 3u);
  EXPECT_EQ(h.log->generate_meta[0]["validate"], true);
  EXPECT_EQ(h.log->generate_meta[0]["do_sample"], false);
  EXPECT_EQ(h.log->generate_meta[1]["validate"], false);
  EXPECT_EQ(h.log->generate_meta[1]["do_sample"], true);
  EXPECT_EQ(h.log->generate_meta[1]["eos_token_id"], 1);
  EXPECT_EQ(h.log->generate_meta[1]["pad_token_id"], 2);
  // 4 prompts x n=2 split over 2 ranks; validation: 6 prompts x val n=1 over 2 ranks.
  EXPECT_EQ(h.log->generate_rows, (std::vector<int64_t>{3, 3, 4, 4, 3, 3}));

  trainer::MetricHistory history = h.history();
  for (const char* key :
       {"training/global_step", "training/epoch", "actor/entropy", "actor/pg_loss", "actor/lr", "actor/grad_norm",
        "actor/reward_kl_penalty", "actor/reward_kl_penalty_coeff", "critic/vf_loss", "critic/vpred_max",
        "critic/score/mean", "critic/score/max", "critic/rewards/mean", "critic/advantages/mean",
        "critic/returns/mean", "critic/values/mean", "critic/vf_explained_var", "response_length/mean",
        "response_length/clip_ratio", "prompt_length/mean", "timing_s/gen", "timing_s/reward", "timing_s/old_log_prob",
        "timing_s/ref", "timing_s/values", "timing_s/adv", "timing_s/update_critic", "timing_s/update_actor",
        "timing_s/testing", "timing_s/step", "timing_per_token_ms/gen", "perf/total_num_tokens", "perf/time_per_step",
        "perf/throughput", "global_seqlen/min", "global_seqlen/max", "global_seqlen/minmax_diff",
        "global_seqlen/balanced_min", "global_seqlen/balanced_max", "global_seqlen/mean",
        "val-core/fake/acc/mean@1", "val-aux/fake/reward/mean@1", "num_turns/mean", "val-aux/num_turns/mean"}) {
    EXPECT_TRUE(has(history, key, 1)) << key;
  }
  // verl 0.9.1's turn counts of validation: 6 prompts over 2 ranks, 2 and 4 turns alternating on each.
  EXPECT_EQ(history["val-aux/num_turns/min"][1], 2.0);
  EXPECT_EQ(history["val-aux/num_turns/max"][1], 4.0);
  EXPECT_DOUBLE_EQ(history["val-aux/num_turns/mean"][1], 16.0 / 6.0);
  EXPECT_TRUE(has(history, "val-core/fake/acc/mean@1", 0));  // val_before_train logs at step 0
  EXPECT_EQ(history["training/global_step"][1], 1.0);
  EXPECT_EQ(history["training/epoch"][1], 0.0);
  // Hand values from the fakes: entropy 0.5 on every valid token; grad_norm 1.5 on both ranks; vpred_max is
  // reduced with max over [1, 2] from each rank; beta is the fixed kl_coef.
  EXPECT_DOUBLE_EQ(history["actor/entropy"][1], 0.5);
  EXPECT_DOUBLE_EQ(history["actor/grad_norm"][1], 1.5);
  EXPECT_DOUBLE_EQ(history["critic/vpred_max"][1], 2.0);
  EXPECT_DOUBLE_EQ(history["actor/reward_kl_penalty_coeff"][1], 0.001);
  // 8 responses over 2 ranks: the partition sums and the mean agree with the total token count.
  EXPECT_DOUBLE_EQ(history["global_seqlen/mean"][1] * 2, history["perf/total_num_tokens"][1]);

  // The rollout dump: one line per response, verl's key order, and scores that average to critic/score/mean.
  const std::string dump = read_file(h.dir + "/run/rollouts/1.jsonl");
  std::istringstream lines(dump);
  std::string line;
  double score_sum = 0;
  int count = 0;
  while (std::getline(lines, line)) {
    ASSERT_EQ(line.rfind("{\"input\": ", 0), 0u) << line;
    EXPECT_NE(line.find("\"output\": "), std::string::npos);
    EXPECT_NE(line.find("\"gts\": "), std::string::npos);
    EXPECT_NE(line.find("\"step\": 1"), std::string::npos);
    EXPECT_NE(line.find("\"acc\": "), std::string::npos);
    score_sum += nlohmann::json::parse(line)["score"].get<double>();
    ++count;
  }
  EXPECT_EQ(count, 8);
  EXPECT_NEAR(score_sum / count, history["critic/score/mean"][1], 1e-6);
}

TEST(PPOTrainer, CriticWarmupDelaysActorUpdates) {
  Harness h("ppo_trainer_warmup", {"trainer.total_training_steps=3", "trainer.critic_warmup=2"});
  auto trainer = h.make_trainer();
  trainer->init_workers();
  trainer->fit();
  EXPECT_EQ(h.log->count("critic.update_critic"), 3);
  EXPECT_EQ(h.log->count("actor_rollout.update_actor"), 2);  // steps 2 and 3 (critic_warmup <= global_steps)
  trainer::MetricHistory history = h.history();
  EXPECT_FALSE(has(history, "actor/pg_loss", 1));
  EXPECT_TRUE(has(history, "actor/pg_loss", 2));
  EXPECT_EQ(h.log->count("ref.init_model"), 0);  // no KL: no reference policy
}

TEST(PPOTrainer, RemaxGeneratesAGreedyBaselinePerPrompt) {
  Harness h("ppo_trainer_remax", {"algorithm.adv_estimator=remax", "trainer.total_training_steps=1"});
  auto trainer = h.make_trainer();
  EXPECT_FALSE(trainer->use_critic());
  trainer->init_workers();
  trainer->fit();
  EXPECT_EQ(h.log->failure, "");
  // Sampled: 4 prompts x 2 over 2 ranks; then the greedy baseline of the 4 un-repeated prompts.
  EXPECT_EQ(h.log->generate_rows, (std::vector<int64_t>{4, 4, 2, 2}));
  ASSERT_EQ(h.log->generate_meta.size(), 2u);
  EXPECT_EQ(h.log->generate_meta[0]["do_sample"], true);
  EXPECT_EQ(h.log->generate_meta[1]["do_sample"], false);
  EXPECT_TRUE(has(h.history(), "timing_s/gen_max", 1));
  EXPECT_EQ(h.log->count("critic.init_model"), 0);
}

TEST(PPOTrainer, UidsAreSharedByTheRepeatsOfAPromptAndReproducible) {
  auto run = [](const std::string& name) {
    Harness h(name, {"algorithm.adv_estimator=grpo", "trainer.total_training_steps=2", "actor_rollout_ref.rollout.n=4",
                     "trainer.balance_batch=false"});
    auto trainer = h.make_trainer();
    trainer->init_workers();
    trainer->fit();
    EXPECT_EQ(h.log->failure, "");
    return h.log->update_uids;
  };
  auto first = run("ppo_trainer_uid_a");
  auto second = run("ppo_trainer_uid_b");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first, second);
  const std::regex uuid4("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  // Without balancing, rank 0 sees the first 8 of 16 rows: prompts 0 and 1, four interleaved copies each.
  const auto& uids = first[0];
  ASSERT_EQ(uids.size(), 8u);
  for (size_t i = 0; i < uids.size(); ++i) {
    EXPECT_TRUE(std::regex_match(uids[i], uuid4)) << uids[i];
    EXPECT_EQ(uids[i], uids[i / 4 * 4]);
  }
  EXPECT_NE(uids[0], uids[4]);
  EXPECT_NE(first[0][0], first[1][0]);  // a new uid per prompt per step
}

TEST(PPOTrainer, ValOnlyValidatesAndStops) {
  Harness h("ppo_trainer_val_only", {"trainer.val_before_train=true", "trainer.val_only=true",
                                     "trainer.log_val_generations=2", "trainer.logger=[console,jsonl]"});
  auto trainer = h.make_trainer();
  trainer->init_workers();
  trainer->fit();
  EXPECT_EQ(h.log->count("actor_rollout.generate_sequences"), 1);
  EXPECT_EQ(h.log->count("actor_rollout.update_actor"), 0);
  trainer::MetricHistory history = h.history();
  EXPECT_TRUE(has(history, "val-core/fake/acc/mean@1", 0));
  EXPECT_FALSE(has(history, "training/global_step", 0));
  // log_val_generations=2: two samples on the console and in val_generations.jsonl.
  EXPECT_NE(h.console.str().find("val_generation step:0"), std::string::npos);
  std::string generations = read_file(h.dir + "/run/val_generations.jsonl");
  EXPECT_EQ(std::count(generations.begin(), generations.end(), '\n'), 2);
}

TEST(PPOTrainer, CheckpointsFollowVerlLayoutAndRotate) {
  Harness h("ppo_trainer_ckpt", {"trainer.total_training_steps=5", "trainer.save_freq=2",
                                 "trainer.max_actor_ckpt_to_keep=1", "trainer.max_critic_ckpt_to_keep=2"});
  auto trainer = h.make_trainer();
  trainer->init_workers();
  trainer->fit();
  const std::string root = h.dir + "/run";
  // Saves at 2, 4 and the last step 5; the actor keeps 1, the critic 2.
  EXPECT_EQ(read_file(root + "/latest_checkpointed_iteration.txt"), "5");
  EXPECT_FALSE(fs::exists(root + "/global_step_2"));
  EXPECT_FALSE(fs::exists(root + "/global_step_4/actor"));
  EXPECT_TRUE(fs::exists(root + "/global_step_4/critic/fake_rank_1.json"));
  EXPECT_TRUE(fs::exists(root + "/global_step_5/actor/fake_rank_0.json"));
  EXPECT_TRUE(fs::exists(root + "/global_step_5/critic/fake_rank_0.json"));
  nlohmann::json state = nlohmann::json::parse(read_file(root + "/global_step_5/data.json"));
  EXPECT_EQ(state["global_step"], 5);
  // 12 prompts / 4 = 3 batches per epoch; step 5 is the second batch of epoch 1.
  EXPECT_EQ(state["dataloader"]["epoch"], 1);
  EXPECT_EQ(state["dataloader"]["position"], 2);
  EXPECT_TRUE(state["uid_generator"].is_string());
}

// trainer.checkpoint_callback_class's hook: called after each checkpoint is complete (the tracker names it, the
// rotation is done); an exception from it ends fit() with the checkpoint in place.
TEST(PPOTrainer, TheCheckpointHookSeesEachCompleteCheckpoint) {
  Harness h("ppo_trainer_ckpt_hook", {"trainer.total_training_steps=5", "trainer.save_freq=2",
                                      "trainer.max_actor_ckpt_to_keep=1", "trainer.max_critic_ckpt_to_keep=1"});
  const std::string root = h.dir + "/run";
  std::vector<std::string> seen;
  h.on_checkpoint_saved = [&](int64_t step, const std::string& dir) {
    int64_t step_folders = 0;
    for (const auto& entry : fs::directory_iterator(root)) {
      step_folders += entry.path().filename().string().rfind("global_step_", 0) == 0 ? 1 : 0;
    }
    seen.push_back(std::to_string(step) + " " + fs::path(dir).filename().string() +
                   " tracker=" + read_file(root + "/latest_checkpointed_iteration.txt") +
                   " data=" + std::to_string(fs::exists(dir + "/data.json")) +
                   " actor=" + std::to_string(fs::exists(dir + "/actor/fake_rank_0.json")) +
                   " folders=" + std::to_string(step_folders));
  };
  auto trainer = h.make_trainer();
  trainer->init_workers();
  trainer->fit();
  EXPECT_EQ(seen, (std::vector<std::string>{"2 global_step_2 tracker=2 data=1 actor=1 folders=1",
                                            "4 global_step_4 tracker=4 data=1 actor=1 folders=1",
                                            "5 global_step_5 tracker=5 data=1 actor=1 folders=1"}));

  Harness failing("ppo_trainer_ckpt_hook_fails", {"trainer.total_training_steps=5", "trainer.save_freq=2"});
  failing.on_checkpoint_saved = [](int64_t step, const std::string&) {
    throw Error("checkpoint", "upload failed at step " + std::to_string(step));
  };
  auto stopped = failing.make_trainer();
  stopped->init_workers();
  EXPECT_THROW(stopped->fit(), Error);
  EXPECT_EQ(read_file(failing.dir + "/run/latest_checkpointed_iteration.txt"), "2");
  EXPECT_TRUE(fs::exists(failing.dir + "/run/global_step_2/actor/fake_rank_0.json"));
  EXPECT_FALSE(fs::exists(failing.dir + "/run/global_step_4"));
}

TEST(PPOTrainer, TotalEpochsBoundTheRun) {
  Harness h("ppo_trainer_epochs", {"trainer.total_epochs=2"});
  auto trainer = h.make_trainer(8);  // 2 batches per epoch
  EXPECT_EQ(trainer->total_training_steps(), 4);
  trainer->init_workers();
  trainer->fit();
  trainer::MetricHistory history = h.history();
  EXPECT_EQ(history["training/global_step"].size(), 4u);
  EXPECT_EQ(history["training/epoch"][2], 0.0);
  EXPECT_EQ(history["training/epoch"][3], 1.0);
}

TEST(PPOTrainer, ResumeAfterACrashReproducesTheUninterruptedRun) {
  const std::vector<std::string> common = {"trainer.total_training_steps=5", "trainer.save_freq=2",
                                           "algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive"};
  Harness straight("ppo_trainer_resume_a", common);
  {
    auto trainer = straight.make_trainer();
    trainer->init_workers();
    trainer->fit();
  }
  Harness resumed("ppo_trainer_resume_b", common);
  resumed.log->fail_generate_at_version = 3;  // crash while generating step 4, after the step-2 checkpoint
  {
    auto trainer = resumed.make_trainer();
    trainer->init_workers();
    EXPECT_THROW(trainer->fit(), std::exception);
  }
  EXPECT_EQ(read_file(resumed.dir + "/run/latest_checkpointed_iteration.txt"), "2");
  auto restarted_log = std::make_shared<CallLog>();
  resumed.log = restarted_log;
  {
    auto trainer = resumed.make_trainer();
    trainer->init_workers();
    trainer->fit();
  }
  EXPECT_EQ(restarted_log->calls[3], "actor_rollout.load_checkpoint");
  EXPECT_EQ(restarted_log->count("actor_rollout.update_actor"), 3);  // steps 3, 4, 5
  trainer::MetricHistory a = straight.history(), b = resumed.history();
  int compared = 0;
  for (const auto& [key, by_step] : a) {
    if (is_machine_measured_metric(key)) continue;
    for (int64_t step = 3; step <= 5; ++step) {
      ASSERT_TRUE(b.count(key) && b[key].count(step)) << key << " step " << step;
      EXPECT_EQ(by_step.at(step), b[key][step]) << key << " step " << step;
      ++compared;
    }
  }
  EXPECT_GT(compared, 60);
}

// skip.rollout (verl's RolloutSkip): the listed steps' rollouts are dumped, and a later run of the same shape reads
// them back instead of generating; repeat takes the latest dump before the step; a damaged dump is named.
TEST(PPOTrainer, SkipRolloutDumpsAndReadsBackTheListedSteps) {
  const std::string dumps = make_temp_dir("ppo_skip_dumps");
  const auto skip = [&](const std::string& steps, const std::string& action, int64_t total) {
    return std::vector<std::string>{"trainer.total_training_steps=" + std::to_string(total),
                                    "skip.rollout.enable=true",
                                    "skip.rollout.dump_dir=" + dumps,
                                    "skip.rollout.steps=" + steps,
                                    "skip.rollout.action=" + action,
                                    "trainer.experiment_name=exp",
                                    "trainer.project_name=proj"};
  };
  const auto run = [](Harness& h) {
    auto trainer = h.make_trainer();
    trainer->init_workers();
    trainer->fit();
  };
  Harness first("ppo_skip_first", skip("[2,3]", "cache", 3));
  run(first);
  EXPECT_EQ(first.log->count("actor_rollout.generate_sequences"), 3);  // nothing dumped yet: every step generates
  // verl's folder: <dump_dir>/<experiment>_<project>/GBS<gen batch>_N<n>_in<prompt>_out<response>/<step>/
  const std::string project = dumps + "/exp_proj/GBS4_N2_in12_out4";
  for (const char* step : {"2", "3"}) {
    EXPECT_TRUE(fs::exists(project + "/" + step + "/gen_batch.dp")) << step;
    EXPECT_EQ(read_file(project + "/" + step + "/meta.json"), std::string("{\"global_steps\":") + step + "}");
  }
  EXPECT_FALSE(fs::exists(project + "/1"));

  Harness cached("ppo_skip_cached", skip("[2,3]", "cache", 3));
  run(cached);
  EXPECT_EQ(cached.log->count("actor_rollout.generate_sequences"), 1);  // step 1 only
  trainer::MetricHistory a = first.history(), b = cached.history();
  for (const char* key : {"response_length/mean", "prompt_length/mean", "critic/score/mean"}) {
    for (int64_t step = 2; step <= 3; ++step) EXPECT_EQ(a.at(key).at(step), b.at(key).at(step)) << key << " " << step;
  }

  Harness repeat("ppo_skip_repeat", skip("[4]", "repeat", 4));  // no dump of step 4: the latest before, step 3's
  run(repeat);
  EXPECT_EQ(repeat.log->count("actor_rollout.generate_sequences"), 3);
  EXPECT_FALSE(fs::exists(project + "/4"));

  write_file(project + "/2/gen_batch.dp", "not a rollout");
  Harness damaged("ppo_skip_damaged", skip("[2]", "cache", 2));
  const std::string message = error_of([&] { run(damaged); });
  EXPECT_NE(message.find(project + "/2/gen_batch.dp"), std::string::npos) << message;
  EXPECT_NE(message.find("skip.rollout"), std::string::npos) << message;
}

TEST(PPOTrainer, ResumingAFinishedRunTrainsNoFurther) {
  Harness h("ppo_trainer_finished", {"trainer.total_training_steps=3", "trainer.save_freq=5"});
  {
    auto trainer = h.make_trainer();
    trainer->init_workers();
    trainer->fit();  // the last step saves whatever save_freq says
  }
  EXPECT_EQ(read_file(h.dir + "/run/latest_checkpointed_iteration.txt"), "3");
  const std::string metrics_before = read_file(h.dir + "/run/metrics.jsonl");
  auto restarted_log = std::make_shared<CallLog>();
  h.log = restarted_log;
  {
    auto trainer = h.make_trainer();
    trainer->init_workers();
    trainer->fit();
  }
  EXPECT_EQ(restarted_log->count("actor_rollout.load_checkpoint"), 1);
  EXPECT_EQ(restarted_log->count("actor_rollout.generate_sequences"), 0);
  EXPECT_EQ(restarted_log->count("actor_rollout.update_actor"), 0);
  EXPECT_FALSE(fs::exists(h.dir + "/run/global_step_4"));
  EXPECT_EQ(read_file(h.dir + "/run/latest_checkpointed_iteration.txt"), "3");
  EXPECT_EQ(read_file(h.dir + "/run/metrics.jsonl"), metrics_before);
}

TEST(PPOTrainer, BadBatchSizesFailBeforeAnyWorkerStarts) {
  Harness h("ppo_trainer_bad_batch", {"data.train_batch_size=3", "actor_rollout_ref.rollout.n=1",
                                      "actor_rollout_ref.actor.ppo_mini_batch_size=1"});
  try {
    trainer::validate_ppo_config(*h.config, 2);
    FAIL() << "expected an error";
  } catch (const verl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.train_batch_size (3) x actor_rollout_ref.rollout.n (1) = 3"),
              std::string::npos)
        << e.what();
  }
  Harness micro("ppo_trainer_bad_micro", {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3"});
  try {
    trainer::validate_ppo_config(*micro.config, 2);
    FAIL() << "expected an error";
  } catch (const verl::Error& e) {
    // mini 2 prompts x n 2 / 2 devices = 2 responses per device, not divisible by 3.
    EXPECT_NE(std::string(e.what()).find("= 2 responses) is not divisible by "
                                         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu (3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(trainer::validate_ppo_config(*Harness("ppo_trainer_ok_batch", {}).config, 2));
  EXPECT_EQ(h.log->calls.size(), 0u);
}

// Megatron's context parallelism: the copy's TP x CP ranks must divide the devices, and the ref shares the actor's
// ranks, so its size is the actor's.
TEST(PPOTrainer, BadContextParallelSizesFailBeforeAnyWorkerStarts) {
  const auto error_of = [](const std::string& name, const std::vector<std::string>& overrides) {
    Harness h(name, overrides);
    try {
      trainer::validate_ppo_config(*h.config, 2);
    } catch (const verl::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string megatron = "actor_rollout_ref.actor.strategy=megatron";
  EXPECT_NE(error_of("ppo_trainer_bad_cp", {megatron, "actor_rollout_ref.actor.megatron.context_parallel_size=3"})
                .find("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1 x "
                      "actor_rollout_ref.actor.megatron.context_parallel_size=3 must divide the actor's 2 devices"),
            std::string::npos);
  EXPECT_NE(error_of("ppo_trainer_bad_ref_cp", {megatron, "actor_rollout_ref.actor.megatron.context_parallel_size=2",
                                                "actor_rollout_ref.ref.megatron.context_parallel_size=1"})
                .find("actor_rollout_ref.ref.megatron.context_parallel_size (1) must equal "
                      "actor_rollout_ref.actor.megatron.context_parallel_size (2)"),
            std::string::npos);
  EXPECT_EQ(error_of("ppo_trainer_ok_cp", {megatron, "actor_rollout_ref.actor.megatron.context_parallel_size=2"}),
            "no error");
}

}  // namespace
}  // namespace verl::test
