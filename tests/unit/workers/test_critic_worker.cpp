// CriticWorker / DataParallelPPOCritic: batch-size normalization errors, value-head initialisation,
// compute_values masking, verl's metric accumulation, non-finite skip, exact checkpoint resume, and a
// multi-slot worker group.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "support/metric_compare.h"
#include "unit/workers/critic_test_util.h"
#include "verl/algo/core_algos.h"
#include "verl/common/error.h"
#include "verl/single_controller/worker_group.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/critic_worker.h"
#include "verl/workers/mini_batch_order.h"

namespace verl::workers {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
using protocol::Json;
using single_controller::WorkerContext;

std::vector<std::string> critic_worker_base_overrides(const std::string& model_dir) {
  return test::critic_overrides(model_dir);
}
using test::with;

std::unique_ptr<CriticWorker> critic_worker_make_worker(const std::vector<std::string>& overrides, int rank = 0,
                                                        int world = 1) {
  return test::make_critic_worker(overrides, rank, world);
}

std::vector<double> numbers(const Json& list) {
  std::vector<double> out;
  for (const auto& v : list) out.push_back(v.is_null() ? std::nan("") : v.get<double>());
  return out;
}

bool same_parameters(model::CausalLM& a, model::CausalLM& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  if (pa.size() != pb.size()) return false;
  for (const auto& item : pa) {
    if (!torch::equal(item.value(), pb[item.key()])) return false;
  }
  return true;
}

TEST(CriticConfig, NormalizesMiniBatchAndNamesBadKeysInOneLine) {
  const std::string lm = test::make_lm_folder("critic_norm_lm");
  auto cfg = test::ppo_config(with(critic_worker_base_overrides(lm), {"actor_rollout_ref.rollout.n=2"}));
  DPCriticConfig c = normalize_critic_config(*cfg, 2);
  EXPECT_EQ(c.ppo_mini_batch_size, 4);  // 4 prompts x 2 responses / 2 ranks
  EXPECT_EQ(c.ppo_micro_batch_size_per_gpu, 2);
  EXPECT_EQ(c.forward_micro_batch_size_per_gpu, 2);  // defaults to the update micro-batch
  EXPECT_EQ(c.loss_agg_mode, "token-mean");
  EXPECT_DOUBLE_EQ(c.cliprange_value, 0.5);

  auto check = [](const std::vector<std::string>& overrides, int world, const std::string& expected) {
    std::string message = test::error_text([&] { normalize_critic_config(*test::ppo_config(overrides), world); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  check(with(critic_worker_base_overrides(lm), {"critic.ppo_micro_batch_size_per_gpu=3"}), 1,
        "should be divisible by critic.ppo_micro_batch_size_per_gpu 3");
  check(with(critic_worker_base_overrides(lm), {"critic.ppo_micro_batch_size_per_gpu=null"}), 1,
        "critic.ppo_micro_batch_size_per_gpu must be set");
  check(with(critic_worker_base_overrides(lm), {"critic.ppo_mini_batch_size=1"}), 2,
        "fewer than the 2 data-parallel ranks");
  check(with(critic_worker_base_overrides(lm), {"critic.use_dynamic_bsz=true", "critic.ppo_max_token_len_per_gpu=0"}),
        1, "critic.ppo_max_token_len_per_gpu must be > 0");
}

TEST(CriticWorker, LmFolderGetsASeededFreshHeadAndAValueFolderKeepsItsHead) {
  const std::string lm = test::make_lm_folder("critic_init_lm");
  auto worker = critic_worker_make_worker(critic_worker_base_overrides(lm));
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  o.value_head_seed = 5;  // data.seed
  model::CausalLM expected = model::load_model(lm, o);
  EXPECT_TRUE(same_parameters(worker->module(), expected));
  EXPECT_GT(worker->module()->score->weight.abs().sum().item<double>(), 0.0);

  const std::string value_dir = test::make_value_folder(lm, "critic_init_value", 99);
  auto from_value = critic_worker_make_worker(critic_worker_base_overrides(value_dir));
  o.value_head_seed = 99;
  model::CausalLM saved = model::load_model(value_dir, o);
  EXPECT_TRUE(same_parameters(from_value->module(), saved));
  EXPECT_FALSE(torch::equal(from_value->module()->score->weight, worker->module()->score->weight));

  std::string message =
      test::error_text([&] { critic_worker_make_worker(critic_worker_base_overrides("/nonexistent/critic_model")); });
  EXPECT_NE(message.find("critic.model.path '/nonexistent/critic_model'"), std::string::npos) << message;
  CriticWorker idle(WorkerContext{0, 1, "critic"}, test::ppo_config(critic_worker_base_overrides(lm)));
  EXPECT_NE(test::error_text([&] { idle.compute_values(test::make_ppo_batch(2, 4, 3, 1)); }).find("before init_model"),
            std::string::npos);
}

// critic.model.use_remove_padding and enable_gradient_checkpointing reach the critic's module (both default true).
TEST(CriticWorker, ModelKeysReachTheModule) {
  const std::string lm = test::make_lm_folder("critic_model_keys_lm");
  auto by_default = critic_worker_make_worker(critic_worker_base_overrides(lm));
  EXPECT_TRUE(by_default->module()->remove_padding);
  EXPECT_TRUE(by_default->module()->model->gradient_checkpointing);
  auto off = critic_worker_make_worker(with(critic_worker_base_overrides(lm), {"critic.model.use_remove_padding=false",
                                                     "critic.model.enable_gradient_checkpointing=false"}));
  EXPECT_FALSE(off->module()->remove_padding);
  EXPECT_FALSE(off->module()->model->gradient_checkpointing);
}

TEST(CriticWorker, ComputeValuesReadsPositionsPMinus1AndMasksWhateverTheMicroBatch) {
  const std::string lm = test::make_lm_folder("critic_values_lm");
  DataProto batch = test::make_ppo_batch(5, 4, 3, 7);
  auto one =
      critic_worker_make_worker(with(critic_worker_base_overrides(lm), {"critic.forward_micro_batch_size_per_gpu=1"}));
  auto all =
      critic_worker_make_worker(with(critic_worker_base_overrides(lm), {"critic.forward_micro_batch_size_per_gpu=8"}));
  torch::Tensor v1 = one->compute_values(batch).tensor("values");
  torch::Tensor v8 = all->compute_values(batch).tensor("values");
  ASSERT_EQ(v1.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_TRUE(torch::allclose(v1, v8, 1e-5, 1e-6));
  // Independent reading: the value head over every position, then positions P-1 .. P+R-2, times the mask.
  torch::NoGradGuard no_grad;
  model::CausalLM& m = all->module();
  torch::Tensor every = m->values(m->hidden_states(batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                                   batch.tensor("position_ids")));
  torch::Tensor expected = every.narrow(1, 3, 3) * batch.tensor("response_mask");
  EXPECT_TRUE(torch::allclose(v8, expected, 1e-5, 1e-6));
  EXPECT_EQ(v8.masked_select(batch.tensor("response_mask") == 0).abs().sum().item<float>(), 0.0f);
}

TEST(CriticWorker, UpdateMetricsFollowVerlsAccumulation) {
  const std::string lm = test::make_lm_folder("critic_metrics_lm");
  // lr 0 keeps the parameters fixed, so every micro-batch's loss can be recomputed here from the start model.
  auto worker = critic_worker_make_worker(with(
      critic_worker_base_overrides(lm), {"critic.optim.lr=0.0", "critic.ppo_epochs=2", "critic.cliprange_value=0.1"}));
  DataProto batch = test::make_ppo_batch(8, 4, 3, 9);
  DataProto out = worker->update_critic(batch);
  EXPECT_EQ(out.size(), 0);
  const Json& metrics = out.meta_info.at("metrics");
  // 8 rows: 2 mini-batches of 4, each 2 micro-batches of 2, over 2 epochs.
  auto clipfrac = numbers(metrics.at("critic/vf_clipfrac"));
  auto vpred = numbers(metrics.at("critic/vpred_mean"));
  ASSERT_EQ(clipfrac.size(), 8u);
  ASSERT_EQ(vpred.size(), 8u);
  ASSERT_EQ(numbers(metrics.at("critic/grad_norm")).size(), 4u);
  // verl 0.9.1: one loss per mini-batch, its micro-batches' global-batch-normalised losses summed.
  const auto vf_loss = numbers(metrics.at("critic/vf_loss"));
  ASSERT_EQ(vf_loss.size(), 4u);
  EXPECT_EQ(numbers(metrics.at("critic/loss")), vf_loss);
  ASSERT_EQ(numbers(metrics.at("critic/lr")).size(), 1u);

  torch::NoGradGuard no_grad;
  size_t k = 0, mini = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t first = 0; first < 8; first += 4, ++mini) {
      // token-mean over the whole mini-batch: the sum of its micro-batches' shares
      const DataProto rows = batch.slice(first, first + 4);
      const torch::Tensor all = model::response_values(worker->module(), rows.tensor("input_ids"),
                                                       rows.tensor("attention_mask"), rows.tensor("position_ids"), 3);
      const double expected = algo::compute_value_loss(all, rows.tensor("returns"), rows.tensor("values"),
                                                       rows.tensor("response_mask"), 0.1)
                                  .vf_loss.item<double>();
      EXPECT_NEAR(vf_loss[mini], expected, 1e-5 * std::abs(expected)) << mini;
      for (int64_t start = first; start < first + 4; start += 2, ++k) {
        DataProto micro = batch.slice(start, start + 2);
        torch::Tensor vpreds = model::response_values(worker->module(), micro.tensor("input_ids"),
                                                      micro.tensor("attention_mask"), micro.tensor("position_ids"), 3);
        auto m = micro.tensor("response_mask");
        auto loss = algo::compute_value_loss(vpreds, micro.tensor("returns"), micro.tensor("values"), m, 0.1);
        EXPECT_NEAR(clipfrac[k], loss.vf_clipfrac.item<double>(), 1e-6) << k;
        EXPECT_NEAR(vpred[k], algo::masked_mean(vpreds, m).item<double>(), 1e-6) << k;
      }
    }
  }
  bool some_clipped = false;
  for (double c : clipfrac) some_clipped = some_clipped || c > 0;
  EXPECT_TRUE(some_clipped) << "the test batch should exercise value clipping";
}

// critic.shuffle / critic.data_loader_seed: each epoch's mini-batches in verl 0.9.1's order
// (workers/mini_batch_order.h, checked against verl by oracle.MiniBatchOrderOracle). lr 0 keeps the module fixed, so
// each micro-batch's vpred_mean shows which rows it held.
TEST(CriticWorker, ShuffleRunsEachEpochsMiniBatchesInTheSeedsOrder) {
  const std::string lm = test::make_lm_folder("critic_shuffle_lm");
  auto worker = critic_worker_make_worker(
      with(critic_worker_base_overrides(lm),
           {"critic.optim.lr=0.0", "critic.ppo_epochs=2", "critic.shuffle=true", "critic.data_loader_seed=7"}));
  const DataProto batch = test::make_ppo_batch(8, 4, 3, 9);
  const auto vpred = numbers(worker->update_critic(batch).meta_info.at("metrics").at("critic/vpred_mean"));
  ASSERT_EQ(vpred.size(), 8u);  // 2 epochs x 2 mini-batches of 4 x 2 micro-batches of 2

  const auto order = mini_batch_rows(8, 4, 2, {true, 7});
  EXPECT_NE(order, mini_batch_rows(8, 4, 2, {false, 7})) << "seed 7 should reorder these rows";
  torch::NoGradGuard no_grad;
  size_t k = 0;
  for (const auto& rows : order) {
    const DataProto mini = batch.index(rows);
    for (int64_t start = 0; start < 4; start += 2, ++k) {
      const DataProto micro = mini.slice(start, start + 2);
      const torch::Tensor vpreds = model::response_values(
          worker->module(), micro.tensor("input_ids"), micro.tensor("attention_mask"), micro.tensor("position_ids"), 3);
      EXPECT_NEAR(vpred[k], algo::masked_mean(vpreds, micro.tensor("response_mask")).item<double>(), 1e-6) << k;
    }
  }
}

TEST(CriticWorker, LrIsTheOneUsedAndTheSchedulerStepsOncePerCall) {
  const std::string lm = test::make_lm_folder("critic_lr_lm");
  auto worker = critic_worker_make_worker(with(
      critic_worker_base_overrides(lm), {"critic.optim.lr_warmup_steps=2", "critic.optim.total_training_steps=4"}));
  DataProto batch = test::make_ppo_batch(4, 4, 3, 2);
  std::vector<double> lrs;
  for (int i = 0; i < 3; ++i) {
    lrs.push_back(worker->update_critic(batch).meta_info["metrics"]["critic/lr"][0].get<double>());
  }
  // constant schedule with 2 warmup steps: factor s / 2, then 1.
  EXPECT_NEAR(lrs[0], 0.0, 1e-12);
  EXPECT_NEAR(lrs[1], 0.005, 1e-9);
  EXPECT_NEAR(lrs[2], 0.01, 1e-9);
  EXPECT_EQ(worker->lr_scheduler().step_count(), 3);
}

TEST(CriticWorker, NonFiniteGradNormSkipsTheStep) {
  const std::string lm = test::make_lm_folder("critic_nan_lm");
  auto worker = critic_worker_make_worker(critic_worker_base_overrides(lm));
  auto before = critic_worker_make_worker(critic_worker_base_overrides(lm));
  DataProto batch = test::make_ppo_batch(4, 4, 3, 3);
  batch.batch["returns"] = batch.tensor("returns").clone();
  batch.batch["returns"][0][0] = std::nan("");  // row 0 always has its first response token
  DataProto out = worker->update_critic(batch);
  auto norms = numbers(out.meta_info["metrics"]["critic/grad_norm"]);
  ASSERT_EQ(norms.size(), 1u);
  EXPECT_FALSE(std::isfinite(norms[0]));
  EXPECT_TRUE(same_parameters(worker->module(), before->module()));
  // A clean batch then trains normally.
  DataProto clean = test::make_ppo_batch(4, 4, 3, 3);
  auto norms2 = numbers(worker->update_critic(clean).meta_info["metrics"]["critic/grad_norm"]);
  EXPECT_TRUE(std::isfinite(norms2[0]));
  EXPECT_FALSE(same_parameters(worker->module(), before->module()));
}

// A fresh worker's first update on `batch`, then its checkpoint at `ckpt` as global step 1; the update's metrics.
Json update_once_and_save(const std::vector<std::string>& overrides, const DataProto& batch, const std::string& ckpt) {
  auto worker = critic_worker_make_worker(overrides);
  Json metrics = worker->update_critic(batch).meta_info["metrics"];
  DataProto save;
  save.meta_info = {{"local_path", ckpt}, {"global_step", 1}};
  worker->save_checkpoint(save);
  return metrics;
}

TEST(CriticWorker, SaveLoadContinueIsBitwiseEqualToUninterrupted) {
  const std::string lm = test::make_lm_folder("critic_resume_lm");
  auto overrides =
      with(critic_worker_base_overrides(lm), {"critic.optim.lr_scheduler_type=cosine", "critic.optim.min_lr_ratio=0.1",
                                              "critic.optim.total_training_steps=4", "critic.optim.lr_warmup_steps=1",
                                              "critic.checkpoint.save_contents=[model,optimizer,extra,hf_model]"});
  std::vector<DataProto> batches;
  for (uint64_t s = 0; s < 3; ++s) batches.push_back(test::make_ppo_batch(8, 4, 3, 20 + s));

  auto straight = critic_worker_make_worker(overrides);
  std::vector<Json> straight_metrics;
  for (const auto& b : batches) straight_metrics.push_back(straight->update_critic(b).meta_info["metrics"]);

  const std::string ckpt = test::make_temp_dir("critic_resume_ckpt") + "/global_step_1/critic";
  std::vector<Json> resumed_metrics = {update_once_and_save(overrides, batches[0], ckpt)};
  for (const char* name : {"model_world_size_1_rank_0.safetensors", "optim_world_size_1_rank_0.pt",
                           "extra_state_world_size_1_rank_0.json", "huggingface/config.json",
                           "huggingface/generation_config.json", "huggingface/model.safetensors"}) {
    EXPECT_TRUE(fs::exists(ckpt + "/" + name)) << name;
  }
  EXPECT_NE(test::read_file(ckpt + "/huggingface/config.json").find("ForTokenClassification"), std::string::npos);
  Json extra = Json::parse(test::read_file(ckpt + "/extra_state_world_size_1_rank_0.json"));
  EXPECT_TRUE(extra.contains("lr_scheduler"));
  EXPECT_TRUE(extra.contains("rng"));

  auto second = critic_worker_make_worker(overrides);
  DataProto load;
  load.meta_info = {{"local_path", ckpt}, {"del_local_after_load", false}};
  second->load_checkpoint(load);
  for (size_t i = 1; i < batches.size(); ++i) resumed_metrics.push_back(second->update_critic(batches[i]).meta_info["metrics"]);

  EXPECT_TRUE(same_parameters(straight->module(), second->module()));
  ASSERT_EQ(straight_metrics.size(), resumed_metrics.size());
  for (size_t i = 0; i < straight_metrics.size(); ++i)
    EXPECT_EQ(test::without_machine_measured_metrics(straight_metrics[i]),
              test::without_machine_measured_metrics(resumed_metrics[i]))
        << i;
  EXPECT_EQ(straight->lr_scheduler().step_count(), second->lr_scheduler().step_count());
  // The exported HF folder loads as the value model it was at step 1 (different from the final one).
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  model::CausalLM exported = model::load_model(ckpt + "/huggingface", o);
  EXPECT_FALSE(same_parameters(exported, second->module()));

  // del_local_after_load removes the folder after loading.
  auto third = critic_worker_make_worker(overrides);
  load.meta_info["del_local_after_load"] = true;
  third->load_checkpoint(load);
  EXPECT_FALSE(fs::exists(ckpt));
}

// critic.optim.optimizer reaches the worker; its state resumes exactly and another class refuses it by name.
TEST(CriticWorker, AnotherOptimizerResumesExactlyAndAMismatchIsNamed) {
  const std::string lm = test::make_lm_folder("critic_rmsprop_lm");
  const auto rmsprop =
      with(critic_worker_base_overrides(lm),
           {"critic.optim.optimizer=RMSprop", "critic.optim.override_optimizer_config={momentum: 0.5, centered: true}",
            "critic.optim.lr_scheduler_type=cosine", "critic.optim.zero_indexed_step=false",
            "critic.optim.total_training_steps=4", "critic.checkpoint.save_contents=[model,optimizer,extra]"});
  std::vector<DataProto> batches;
  for (uint64_t s = 0; s < 3; ++s) batches.push_back(test::make_ppo_batch(8, 4, 3, 40 + s));
  auto straight = critic_worker_make_worker(rmsprop);
  EXPECT_EQ(optimizer_class_name(straight->optimizer()), "RMSprop");
  std::vector<Json> straight_metrics;
  for (const auto& b : batches) straight_metrics.push_back(straight->update_critic(b).meta_info["metrics"]);

  const std::string ckpt = test::make_temp_dir("critic_rmsprop_ckpt") + "/global_step_1/critic";
  std::vector<Json> resumed_metrics = {update_once_and_save(rmsprop, batches[0], ckpt)};
  DataProto load;
  load.meta_info = {{"local_path", ckpt}, {"del_local_after_load", false}};
  auto second = critic_worker_make_worker(rmsprop);
  second->load_checkpoint(load);
  for (size_t i = 1; i < batches.size(); ++i)
    resumed_metrics.push_back(second->update_critic(batches[i]).meta_info["metrics"]);
  EXPECT_TRUE(same_parameters(straight->module(), second->module()));
  for (size_t i = 0; i < straight_metrics.size(); ++i)
    EXPECT_EQ(test::without_machine_measured_metrics(straight_metrics[i]),
              test::without_machine_measured_metrics(resumed_metrics[i]))
        << i;

  auto adamw = critic_worker_make_worker(critic_worker_base_overrides(lm));
  const std::string message = test::error_text([&] { adamw->load_checkpoint(load); });
  EXPECT_NE(message.find("optim_world_size_1_rank_0.pt"), std::string::npos) << message;
  EXPECT_NE(message.find("torch.optim.RMSprop"), std::string::npos) << message;
  EXPECT_NE(message.find("torch.optim.AdamW"), std::string::npos) << message;
}

TEST(CriticWorker, LoadNamesAnotherWorldSizeAndAMissingFolder) {
  const std::string lm = test::make_lm_folder("critic_ws_lm");
  auto worker = critic_worker_make_worker(critic_worker_base_overrides(lm));
  const std::string ckpt = test::make_temp_dir("critic_ws_ckpt") + "/critic";
  DataProto save;
  save.meta_info = {{"local_path", ckpt}, {"global_step", 1}};
  worker->save_checkpoint(save);
  EXPECT_FALSE(fs::exists(ckpt + "/huggingface/model.safetensors"));  // hf_model not in save_contents
  std::vector<std::string> rank_files;
  for (const auto& entry : fs::directory_iterator(ckpt)) {
    const std::string name = entry.path().filename().string();
    if (name.find("_world_size_1_rank_0") != std::string::npos) rank_files.push_back(name);
  }
  ASSERT_EQ(rank_files.size(), 5u);  // model, optimizer, extra state, and the .crc32c of model and optimizer
  for (const auto& name : rank_files) {
    std::string renamed = name;
    renamed.replace(renamed.find("_world_size_1_"), 14, "_world_size_2_");
    fs::rename(ckpt + "/" + name, ckpt + "/" + renamed);
  }
  DataProto load;
  load.meta_info = {{"local_path", ckpt}};
  std::string message = test::error_text([&] { worker->load_checkpoint(load); });
  EXPECT_NE(message.find("was saved with world size 2"), std::string::npos) << message;
  EXPECT_NE(message.find(ckpt), std::string::npos) << message;
  load.meta_info = {{"local_path", ckpt + "_missing"}};
  EXPECT_NE(test::error_text([&] { worker->load_checkpoint(load); }).find("does not exist"), std::string::npos);
  EXPECT_NE(test::error_text([&] { worker->load_checkpoint(DataProto()); }).find("local_path"), std::string::npos);
}

TEST(CriticWorker, GroupOfTwoSlotsComputesValuesInOrderAndRefusesUnsyncedTraining) {
  const std::string lm = test::make_lm_folder("critic_group_lm");
  auto cfg = test::ppo_config(critic_worker_base_overrides(lm));
  auto transport = std::make_shared<single_controller::InProcessTransport>("critic", 2, critic_worker_factory(cfg));
  single_controller::WorkerGroup group("critic", transport);
  group.call("init_model");
  DataProto batch = test::make_ppo_batch(7, 4, 3, 4);  // 7 rows over 2 slots: one padding row
  torch::Tensor grouped = group.call("compute_values", batch).tensor("values");
  auto single = critic_worker_make_worker(critic_worker_base_overrides(lm));
  torch::Tensor expected = single->compute_values(batch).tensor("values");
  ASSERT_EQ(grouped.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(grouped, expected, 1e-5, 1e-6));
  std::string message = test::error_text([&] { group.call("update_critic", batch); });
  EXPECT_NE(message.find("gradient all-reduce"), std::string::npos) << message;
}

// verl 0.9.1 takes every micro-batch's loss against the whole mini-batch (workers/global_batch.h), so token-budget
// micro-batches of other sizes and token counts give the fixed micro-batches' loss and gradient.
TEST(CriticWorker, DynamicBatchSizeMatchesFixedMicroBatches) {
  const std::string lm = test::make_lm_folder("critic_dynamic_lm");
  auto common =
      with(critic_worker_base_overrides(lm), {"critic.loss_agg_mode=token-mean", "critic.ppo_mini_batch_size=8"});
  auto fixed = critic_worker_make_worker(common);
  auto dynamic =
      critic_worker_make_worker(with(common, {"critic.use_dynamic_bsz=true", "critic.ppo_max_token_len_per_gpu=9",
                                              "critic.forward_max_token_len_per_gpu=9"}));
  DataProto batch = test::make_ppo_batch(8, 4, 3, 12);
  torch::Tensor v_fixed = fixed->compute_values(batch).tensor("values");
  torch::Tensor v_dynamic = dynamic->compute_values(batch).tensor("values");
  EXPECT_TRUE(torch::allclose(v_fixed, v_dynamic, 1e-5, 1e-6));  // order restored
  Json a = fixed->update_critic(batch).meta_info["metrics"];
  Json b = dynamic->update_critic(batch).meta_info["metrics"];
  EXPECT_EQ(a["critic/vf_clipfrac"].size(), 4u);  // 8 rows in micro-batches of 2
  EXPECT_GE(b["critic/vf_clipfrac"].size(), 2u);  // at most 9 tokens per micro-batch
  EXPECT_NEAR(a["critic/vf_loss"][0].get<double>(), b["critic/vf_loss"][0].get<double>(), 1e-5);
  EXPECT_NEAR(a["critic/grad_norm"][0].get<double>(), b["critic/grad_norm"][0].get<double>(),
              1e-5 * a["critic/grad_norm"][0].get<double>());
}

}  // namespace
}  // namespace verl::workers
