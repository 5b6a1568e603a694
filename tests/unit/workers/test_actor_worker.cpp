// ActorRolloutRefWorker and DataParallelPPOActor: dynamic batch size vs fixed micro-batches, checkpoint
// resume that is bitwise identical to an uninterrupted run, the worker-group flow, HF export, and the
// one-line errors of spec §4.1 (batch sizes) and §11 (world size on load).
#include <gtest/gtest.h>

#include <filesystem>

#include "support/actor_fixture.h"
#include "support/error_text.h"
#include "support/metric_compare.h"
#include "support/run_command.h"
#include "support/thread_ranks.h"
#include "verl/common/error.h"
#include "verl/model/weights.h"
#include "verl/single_controller/transport.h"
#include "verl/single_controller/worker_group.h"
#include "verl/workers/actor_rollout_ref_worker.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/mini_batch_order.h"
#include "verl/workers/optimizer.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
using workers::ActorRolloutRefWorker;

std::string shared_model() {
  static const std::string dir = make_tiny_model(make_temp_dir("actor_unit_model") + "/model");
  return dir;
}

// Gradients of one update_policy (captured where data-parallel averaging would run) and its metrics.
struct UpdateResult {
  std::vector<torch::Tensor> grads;
  nlohmann::json metrics;
};

UpdateResult one_update(config::ActorConfig cfg, const DataProto& batch, bool checkpointing = false,
                        int64_t data_parallel_rank = 0) {
  auto module = model::load_model(shared_model());
  module->model->gradient_checkpointing = checkpointing;
  auto params = module->parameters();
  auto opt = workers::build_optimizer(params, cfg.optim);
  workers::DataParallelPPOActor actor(cfg, module, opt.get());
  actor.data_parallel_rank = data_parallel_rank;
  UpdateResult r;
  actor.gradient_all_reduce = [&r](const std::vector<torch::Tensor>& ps) {
    for (const auto& p : ps) {
      if (p.grad().defined()) r.grads.push_back(p.grad().clone());
    }
  };
  r.metrics = actor.update_policy(batch);
  return r;
}

double max_grad_diff(const UpdateResult& a, const UpdateResult& b) {
  double d = 0;
  EXPECT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) d = std::max(d, (a.grads[i] - b.grads[i]).abs().max().item<double>());
  return d;
}

// The largest gradient entry: differences are judged relative to it (fp32 sums in another order).
double max_grad_abs(const UpdateResult& a) {
  double m = 0;
  for (const auto& g : a.grads) m = std::max(m, g.abs().max().item<double>());
  return m;
}

// verl 0.9.1's global-batch normalisation (workers/global_batch.h): every micro-batch's loss is taken against the
// whole mini-batch, so the gradients and the mini-batch's loss do not depend on how it is split, whatever the
// loss_agg_mode, though the ragged rows give the micro-batches different token counts.
TEST(ActorWorker, EveryMicroBatchSplitGivesTheMiniBatchsGradientsAndLoss) {
  auto cfg = tiny_ppo_config(
      shared_model(), {"actor_rollout_ref.actor.entropy_coeff=0.01", "actor_rollout_ref.actor.use_kl_loss=true"});
  config::ActorConfig whole = cfg->actor_rollout_ref.actor;
  whole.ppo_mini_batch_size = 8;  // one mini-batch
  whole.ppo_micro_batch_size_per_gpu = 8;
  auto batch = ragged_actor_batch();
  for (const std::string mode :
       {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
    whole.loss_agg_mode = mode;
    config::ActorConfig fixed = whole;
    fixed.ppo_micro_batch_size_per_gpu = 3;  // 3 + 3 + 2 rows
    config::ActorConfig dynamic = whole;
    dynamic.use_dynamic_bsz = true;
    dynamic.ppo_max_token_len_per_gpu = 24;  // 60 valid tokens -> 3 micro-batches of different sizes
    const UpdateResult w = one_update(whole, batch), a = one_update(fixed, batch), b = one_update(dynamic, batch);
    // fp32 sums in another order: up to 1.3e-6 of the largest entry on an AVX2 CPU (AMD EPYC).
    const double scale = std::max(1.0, max_grad_abs(w));
    EXPECT_LT(max_grad_diff(w, a), 1e-5 * scale) << mode;
    EXPECT_LT(max_grad_diff(w, b), 1e-5 * scale) << mode;
    for (const char* key : {"actor/pg_loss", "actor/entropy_loss", "actor/kl_loss", "actor/loss"}) {
      ASSERT_EQ(w.metrics[key].size(), 1u) << key;  // one number per mini-batch
      const double expected = w.metrics[key][0].get<double>();
      EXPECT_NEAR(a.metrics[key][0].get<double>(), expected, 1e-6 * std::max(1.0, std::abs(expected))) << mode << key;
      EXPECT_NEAR(b.metrics[key][0].get<double>(), expected, 1e-6 * std::max(1.0, std::abs(expected))) << mode << key;
    }
    EXPECT_EQ(a.metrics["actor/pg_clipfrac"].size(), 1u);  // the mean over the mini-batch's micro-batches
    EXPECT_EQ(a.metrics["actor/kl_coef"].size(), 3u);      // a plain number per micro-batch, as verl logs it
    EXPECT_EQ(b.metrics["actor/kl_coef"].size(), 3u);
  }
}

// On policy (old_log_probs the policy's own, ratio 1) vanilla PPO's token-mean loss is -sum(A m) / sum(m) over the
// mini-batch: what actor/pg_loss reports, one number per mini-batch, however the mini-batch is split.
TEST(ActorWorker, PgLossIsTheMiniBatchsTokenMean) {
  auto cfg = tiny_ppo_config(shared_model(), {});
  config::ActorConfig actor = cfg->actor_rollout_ref.actor;
  actor.loss_agg_mode = "token-mean";
  actor.ppo_mini_batch_size = 8;           // one mini-batch
  actor.ppo_micro_batch_size_per_gpu = 3;  // 3 + 3 + 2 rows of 12, 10 and 11 response tokens
  auto batch = ragged_actor_batch();
  {
    workers::DataParallelPPOActor policy(actor, model::load_model(shared_model()), nullptr);
    DataProto in = batch;
    in.meta_info["micro_batch_size"] = 8;
    batch.batch["old_log_probs"] = policy.compute_log_prob(in, /*calculate_entropy=*/false).first;
  }
  const UpdateResult r = one_update(actor, batch);
  const auto adv = batch.tensor("advantages");
  const auto m = batch.tensor("response_mask").to(torch::kFloat32);
  const double expected = -(adv * m).sum().item<double>() / m.sum().item<double>();
  ASSERT_EQ(r.metrics["actor/pg_loss"].size(), 1u);
  EXPECT_NEAR(r.metrics["actor/pg_loss"][0].get<double>(), expected, 1e-5);
  EXPECT_NEAR(r.metrics["actor/ppo_kl"][0].get<double>(), 0.0, 1e-6);  // the stored log-probs are the policy's
}

// Two data-parallel ranks holding 13 and 20 of the batch's response tokens: with the mini-batch's tokens summed
// over the ranks (workers/global_batch.h) the averaged gradient is one rank's on the whole batch, and so is the mean
// of the ranks' pg_loss; fixed and dynamic micro-batches (the latter as many on both ranks) alike.
TEST(ActorWorker, TwoRanksWithUnevenTokensGiveTheOneRankGradients) {
  auto cfg = tiny_ppo_config(
      shared_model(), {"actor_rollout_ref.actor.entropy_coeff=0.01", "actor_rollout_ref.actor.use_kl_loss=true"});
  config::ActorConfig one = cfg->actor_rollout_ref.actor;
  one.loss_agg_mode = "token-mean";
  one.ppo_mini_batch_size = 8;
  one.ppo_micro_batch_size_per_gpu = 2;
  const DataProto batch = ragged_actor_batch();
  const UpdateResult whole = one_update(one, batch);
  for (const bool dynamic : {false, true}) {
    config::ActorConfig per_rank = one;
    per_rank.ppo_mini_batch_size = 4;
    per_rank.use_dynamic_bsz = dynamic;
    per_rank.ppo_max_token_len_per_gpu = 20;
    std::vector<UpdateResult> ranks(2);
    on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
      const int r = comm->rank();
      auto module = model::load_model(shared_model());
      auto params = module->parameters();
      auto opt = workers::build_optimizer(params, per_rank.optim);
      workers::DataParallelPPOActor actor(per_rank, module, opt.get());
      actor.data_parallel_rank = r;
      actor.data_parallel_group = workers::DataParallelGroup(comm, 1);
      auto average = workers::gradient_averager(comm, torch::kFloat32);
      UpdateResult& out = ranks[static_cast<size_t>(r)];
      actor.gradient_all_reduce = [&](const std::vector<torch::Tensor>& ps) {
        average(ps);
        for (const auto& p : ps) {
          if (p.grad().defined()) out.grads.push_back(p.grad().clone());
        }
      };
      out.metrics = actor.update_policy(batch.slice(4 * r, 4 * r + 4));
    });
    const double scale = std::max(1.0, max_grad_abs(whole));
    for (const UpdateResult& rank : ranks) EXPECT_LT(max_grad_diff(whole, rank), 1e-6 * scale) << dynamic;
    for (const char* key : {"actor/pg_loss", "actor/kl_loss", "actor/entropy_loss"}) {
      const double mean = (ranks[0].metrics[key][0].get<double>() + ranks[1].metrics[key][0].get<double>()) / 2;
      const double expected = whole.metrics[key][0].get<double>();
      EXPECT_NEAR(mean, expected, 1e-6 * std::max(1.0, std::abs(expected))) << key << (dynamic ? " dynamic" : "");
    }
    if (dynamic) {
      EXPECT_EQ(ranks[0].metrics["actor/kl_coef"].size(), ranks[1].metrics["actor/kl_coef"].size());
    }
  }
}

// actor.shuffle: each epoch's mini-batches in verl 0.9.1's order (workers/mini_batch_order.h, checked against verl
// by oracle.MiniBatchOrderOracle), drawn from data_loader_seed + the data-parallel rank: the update equals the
// unshuffled one on the rows in that order.
TEST(ActorWorker, ShuffleTrainsEachEpochsMiniBatchesInTheOrderOfTheSeedAndRank) {
  auto cfg = tiny_ppo_config(shared_model(), {});
  config::ActorConfig plain = cfg->actor_rollout_ref.actor;
  plain.ppo_mini_batch_size = 4;  // 8 rows: two mini-batches, two optimizer steps
  plain.ppo_micro_batch_size_per_gpu = 2;
  config::ActorConfig shuffled = plain;
  shuffled.shuffle = true;
  shuffled.data_loader_seed = 7;
  const DataProto batch = ragged_actor_batch();
  auto in_order = [&](int64_t seed) {
    std::vector<int64_t> rows;
    for (const auto& mini : workers::mini_batch_rows(batch.size(), 4, 1, {true, seed})) {
      rows.insert(rows.end(), mini.begin(), mini.end());
    }
    return batch.index(rows);
  };
  const UpdateResult rank0 = one_update(shuffled, batch);
  EXPECT_EQ(max_grad_diff(rank0, one_update(plain, in_order(7))), 0.0);
  EXPECT_GT(max_grad_diff(rank0, one_update(plain, batch)), 1e-6) << "the order should change the second step";
  const UpdateResult rank1 = one_update(shuffled, batch, false, 1);
  EXPECT_EQ(max_grad_diff(rank1, one_update(plain, in_order(8))), 0.0);

  // ppo_epochs=2: a new order in the second pass (the epochs' rows, run one after the other unshuffled, agree).
  shuffled.ppo_epochs = 2;
  std::vector<int64_t> both;
  for (const auto& mini : workers::mini_batch_rows(batch.size(), 4, 2, {true, 7})) {
    both.insert(both.end(), mini.begin(), mini.end());
  }
  EXPECT_NE(std::vector<int64_t>(both.begin(), both.begin() + 8), std::vector<int64_t>(both.begin() + 8, both.end()));
  const UpdateResult two_epochs = one_update(shuffled, batch);
  const UpdateResult unrolled = one_update(plain, batch.index(both));  // 16 rows: four steps in that order
  EXPECT_EQ(max_grad_diff(two_epochs, unrolled), 0.0);

  // Rows that do not divide into whole mini-batches: verl asserts, here one line naming the sizes.
  shuffled.ppo_epochs = 1;
  shuffled.ppo_mini_batch_size = 6;
  const std::string err = error_of([&] { one_update(shuffled, batch); });
  EXPECT_NE(err.find("8 rows per rank are not a whole number of mini-batches of 6"), std::string::npos) << err;
}

TEST(ActorWorker, GradientCheckpointingGivesTheSameGradients) {
  auto cfg = tiny_ppo_config(shared_model(), {"actor_rollout_ref.actor.entropy_coeff=0.01"});
  config::ActorConfig a = cfg->actor_rollout_ref.actor;
  a.ppo_mini_batch_size = 4;
  auto batch = ragged_actor_batch();
  auto plain = one_update(a, batch, false), ckpt = one_update(a, batch, true);
  ASSERT_FALSE(plain.grads.empty());
  EXPECT_LE(max_grad_diff(plain, ckpt), 1e-7);
  EXPECT_EQ(plain.metrics["actor/pg_loss"], ckpt.metrics["actor/pg_loss"]);
  double norm = 0;
  for (const auto& g : ckpt.grads) norm += g.pow(2).sum().item<double>();
  EXPECT_GT(norm, 0.0);
  // Every parameter, layers included, received a gradient through the recomputation.
  auto module = model::load_model(shared_model());
  // (one set of gradients per mini-batch)
  const size_t per_step = module->parameters().size();
  EXPECT_EQ(ckpt.grads.size() % per_step, 0u) << ckpt.grads.size() << " gradients, " << per_step << " parameters";
  EXPECT_GE(ckpt.grads.size(), per_step);
}

// actor_rollout_ref.model.use_remove_padding reaches the actor's and the reference's modules (default true).
TEST(ActorWorker, UseRemovePaddingReachesActorAndReference) {
  for (bool on : {true, false}) {
    const std::vector<std::string> keys =
        on ? std::vector<std::string>{} : std::vector<std::string>{"actor_rollout_ref.model.use_remove_padding=false"};
    ActorRolloutRefWorker w({0, 1, "g"}, tiny_ppo_config(shared_model(), keys), "actor_rollout_ref");
    w.init_model(DataProto());
    EXPECT_EQ(w.actor_module()->remove_padding, on);
    EXPECT_EQ(w.ref_module()->remove_padding, on);
  }
}

TEST(ActorWorker, ComputeLogProbDynamicBszRestoresOrder) {
  auto cfg = tiny_ppo_config(shared_model(), {});
  auto module = model::load_model(shared_model());
  workers::DataParallelPPOActor actor(cfg->actor_rollout_ref.actor, module, nullptr);
  auto batch = ragged_actor_batch();
  batch.meta_info["micro_batch_size"] = 3;
  auto [lp_fixed, ent_fixed] = actor.compute_log_prob(batch, true);
  batch.meta_info["use_dynamic_bsz"] = true;
  batch.meta_info["max_token_len"] = 12;
  auto [lp_dyn, ent_dyn] = actor.compute_log_prob(batch, true);
  auto full = model::response_log_probs(module, batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                        batch.tensor("position_ids"), batch.tensor("responses"), 1.0, true);
  EXPECT_TRUE(torch::allclose(lp_fixed, full.log_probs, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(lp_dyn, full.log_probs, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(ent_dyn, full.entropy, 1e-5, 1e-6));
  EXPECT_THROW(actor.update_policy(batch), Error);  // no optimizer
}

// One training step through the worker: generate, old/ref log-probs, update.
nlohmann::json train_step(ActorRolloutRefWorker& w, const DataProto& prompts) {
  auto gen = w.generate_sequences(prompts);
  auto old = w.compute_log_prob(gen);
  gen.union_with(old.select({"old_log_probs"}));
  gen.batch["advantages"] = torch::linspace(-1.0, 1.0, gen.size()).unsqueeze(1).expand({gen.size(), 6}).contiguous() *
                            gen.tensor("response_mask").to(torch::kFloat32);
  gen.meta_info["temperature"] = 1.0;
  return w.update_actor(gen).meta_info["metrics"];
}

TEST(ActorWorker, SaveLoadContinueIsBitwiseEqualToUninterrupted) {
  auto cfg = tiny_ppo_config(shared_model(), {"actor_rollout_ref.actor.optim.lr=0.01",
                                              "actor_rollout_ref.actor.optim.lr_warmup_steps=4",
                                              "actor_rollout_ref.actor.optim.total_training_steps=10"});
  const std::string ckpt = make_temp_dir("actor_resume") + "/global_step_1/actor";
  auto prompts = ragged_actor_prompts();
  ActorRolloutRefWorker a({0, 1, "a"}, cfg, "actor_rollout");
  a.init_model(DataProto());
  train_step(a, prompts);
  DataProto save;
  save.meta_info = {{"local_path", ckpt}, {"global_step", 1}};
  a.save_checkpoint(save);
  for (const char* f : {"model_world_size_1_rank_0.safetensors", "optim_world_size_1_rank_0.pt",
                        "extra_state_world_size_1_rank_0.json", "huggingface/config.json",
                        "huggingface/generation_config.json"}) {
    EXPECT_TRUE(fs::exists(fs::path(ckpt) / f)) << f;
  }
  EXPECT_FALSE(fs::exists(fs::path(ckpt) / "huggingface/model.safetensors"));  // hf_model not in save_contents
  for (const auto& e : fs::directory_iterator(fs::path(ckpt).parent_path())) {
    EXPECT_EQ(e.path().filename().string(), "actor") << "staging leftovers";
  }
  auto rand_a = torch::rand({4});
  auto m2a = train_step(a, prompts), m3a = train_step(a, prompts);
  auto gen_a = a.generate_sequences(prompts);

  ActorRolloutRefWorker b({0, 1, "b"}, cfg, "actor_rollout");
  b.init_model(DataProto());
  DataProto load;
  load.meta_info = {{"local_path", ckpt}, {"del_local_after_load", false}};
  b.load_checkpoint(load);
  auto rand_b = torch::rand({4});
  EXPECT_TRUE(torch::equal(rand_a, rand_b));  // torch CPU generator restored
  auto m2b = train_step(b, prompts), m3b = train_step(b, prompts);
  auto gen_b = b.generate_sequences(prompts);
  EXPECT_EQ(without_machine_measured_metrics(m2a), without_machine_measured_metrics(m2b));
  EXPECT_EQ(without_machine_measured_metrics(m3a), without_machine_measured_metrics(m3b));
  EXPECT_GT(m3a["actor/lr"][0].get<double>(), m2a["actor/lr"][0].get<double>());  // warmup restored mid-way
  EXPECT_TRUE(torch::equal(gen_a.tensor("responses"), gen_b.tensor("responses")));
  auto pa = a.actor_module()->named_parameters(), pb = b.actor_module()->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
  EXPECT_EQ(a.lr_scheduler().step_count(), b.lr_scheduler().step_count());
  // Restoring only the weights (no optimizer state, no schedule) does not reproduce the run: the check can fail.
  auto model_only = tiny_ppo_config(shared_model(), {"actor_rollout_ref.actor.optim.lr=0.01",
                                                     "actor_rollout_ref.actor.optim.lr_warmup_steps=4",
                                                     "actor_rollout_ref.actor.optim.total_training_steps=10",
                                                     "actor_rollout_ref.actor.checkpoint.load_contents=[model]"});
  ActorRolloutRefWorker c({0, 1, "c"}, model_only, "actor_rollout");
  c.init_model(DataProto());
  c.load_checkpoint(load);
  train_step(c, prompts);
  train_step(c, prompts);
  EXPECT_FALSE(torch::equal(c.actor_module()->named_parameters()["model.norm.weight"], pa["model.norm.weight"]));

  // Loading with another world size is an error naming the folder.
  ActorRolloutRefWorker d({0, 2, "d"}, cfg, "actor");
  d.init_model(DataProto());
  const std::string err = error_of([&] { d.load_checkpoint(load); });
  EXPECT_NE(err.find(ckpt), std::string::npos) << err;
  EXPECT_NE(err.find("world size 1"), std::string::npos) << err;

  // del_local_after_load removes the folder.
  load.meta_info["del_local_after_load"] = true;
  b.load_checkpoint(load);
  EXPECT_FALSE(fs::exists(ckpt));
}

TEST(ActorWorker, WorkerGroupFlowMetricsAndHfExport) {
  auto cfg = tiny_ppo_config(shared_model(), {"actor_rollout_ref.actor.use_kl_loss=true",
                                              "actor_rollout_ref.actor.entropy_coeff=0.01",
                                              "actor_rollout_ref.rollout.calculate_log_probs=true",
                                              "actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"});
  auto transport = std::make_shared<single_controller::InProcessTransport>(
      "actor_rollout_ref", 1, workers::actor_rollout_ref_worker_factory(cfg, "actor_rollout_ref"));
  single_controller::WorkerGroup group("actor_rollout_ref", transport);
  group.call("init_model");
  auto gen = group.call("generate_sequences", ragged_actor_prompts());
  for (const char* k : {"prompts", "responses", "input_ids", "attention_mask", "position_ids", "response_mask",
                        "rollout_log_probs"}) {
    EXPECT_TRUE(gen.has_tensor(k)) << k;
  }
  EXPECT_EQ(gen.tensor("responses").sizes(), (std::vector<int64_t>{8, 6}));
  // verl 0.9.1's single-turn agent loop: two turns, no turn scores or tool rewards, for the metrics and rewards.
  EXPECT_EQ(gen.column("__num_turns__"), std::vector<nlohmann::json>(8, 2));
  EXPECT_EQ(gen.column("turn_scores"), std::vector<nlohmann::json>(8, nlohmann::json::array()));
  EXPECT_EQ(gen.column("tool_rewards"), std::vector<nlohmann::json>(8, nlohmann::json::array()));
  EXPECT_TRUE(gen.meta_info["timing"].contains("generate_sequences"));
  EXPECT_TRUE(torch::equal(gen.tensor("response_mask"), gen.tensor("attention_mask").narrow(1, 5, 6)));
  auto old = group.call("compute_log_prob", gen);
  auto ref = group.call("compute_ref_log_prob", gen);
  // Before any update the policy equals the reference; the engine's log-probs agree with the actor's.
  EXPECT_TRUE(torch::allclose(old.tensor("old_log_probs"), ref.tensor("ref_log_prob")));
  auto m = gen.tensor("response_mask").to(torch::kFloat32);
  EXPECT_TRUE(torch::allclose(old.tensor("old_log_probs") * m, gen.tensor("rollout_log_probs"), 1e-4, 1e-5));
  gen.union_with(old.select({"old_log_probs"}));
  gen.union_with(ref);
  gen.batch["advantages"] = gen.tensor("response_mask").to(torch::kFloat32);
  gen.meta_info["temperature"] = 1.0;
  auto metrics = group.call("update_actor", gen).meta_info["metrics"];
  for (const char* k :
       {"actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower", "actor/entropy_loss",
        "actor/kl_loss", "actor/kl_coef", "actor/loss", "actor/grad_norm", "actor/lr"}) {
    EXPECT_TRUE(metrics.contains(k)) << k;
  }
  EXPECT_EQ(metrics["actor/grad_norm"].size(), 2u);  // two mini-batches of 4
  EXPECT_EQ(metrics["actor/pg_clipfrac"].size(), 2u);
  EXPECT_EQ(metrics["actor/kl_coef"].size(), 4u);  // micro-batches of 2

  const std::string dir = make_temp_dir("actor_export");
  DataProto save;
  save.meta_info = {{"local_path", dir + "/global_step_1/actor"}, {"global_step", 1}};
  group.call("save_checkpoint", save);
  EXPECT_TRUE(fs::exists(dir + "/global_step_1/actor/huggingface/model.safetensors"));
  workers::export_hf_model(dir + "/global_step_1/actor", dir + "/export");
  auto exported = model::load_model(dir + "/export");
  auto& w = dynamic_cast<ActorRolloutRefWorker&>(transport->worker(0));
  auto trained = w.actor_module()->named_parameters();
  for (const auto& item : exported->named_parameters()) EXPECT_TRUE(torch::equal(item.value(), trained[item.key()]));
  EXPECT_THROW(workers::export_hf_model(dir + "/missing", dir + "/export2"), Error);
}

TEST(ActorWorker, BatchSizeAndRoleErrors) {
  const auto m = shared_model();
  auto make = [&](std::vector<std::string> ov, int world = 1, std::string role = "actor") {
    return error_of([&] { ActorRolloutRefWorker w({0, world, "g"}, tiny_ppo_config(m, ov), role); });
  };
  EXPECT_EQ(make({}), "");
  EXPECT_NE(make({"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3"}).find("ppo_micro_batch_size_per_gpu (3)"),
            std::string::npos);
  EXPECT_NE(make({"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"}).find("must be set"), std::string::npos);
  EXPECT_NE(make({"data.train_batch_size=2"}).find("data.train_batch_size (2)"), std::string::npos);
  EXPECT_NE(make({}, 8).find("at least the data-parallel size (8)"), std::string::npos);
  EXPECT_NE(make({}, 3).find("divisible by the data-parallel size (3)"), std::string::npos);
  EXPECT_NE(make({"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null"}).find("log_prob_micro_batch_size_per_gpu"),
            std::string::npos);
  EXPECT_NE(make({"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"}, 1, "ref").find("ref.log_prob_micro"),
            std::string::npos);
  EXPECT_EQ(make({"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"}, 1, "actor"), "");
  EXPECT_NE(make({"actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=8"})
                .find("ppo_max_token_len_per_gpu (8)"),
            std::string::npos);
  EXPECT_NE(make({}, 1, "critic").find("unknown role"), std::string::npos);
  // Per-rank mini-batch: 4 prompts x n=2 / 2 ranks = 4 responses.
  ActorRolloutRefWorker w({1, 2, "g"}, tiny_ppo_config(m, {"actor_rollout_ref.rollout.n=2"}), "actor");
  EXPECT_EQ(w.actor_config().ppo_mini_batch_size, 4);

  auto cfg = tiny_ppo_config(m, {});
  ActorRolloutRefWorker ref({0, 1, "g"}, cfg, "ref");
  EXPECT_NE(error_of([&] { ref.compute_log_prob(ragged_actor_batch()); }).find("before init_model"), std::string::npos);
  ref.init_model(DataProto());
  EXPECT_NE(error_of([&] { ref.generate_sequences(ragged_actor_prompts()); }).find("role is 'ref'"), std::string::npos);
  EXPECT_NE(error_of([&] { ref.update_actor(ragged_actor_batch()); }).find("role is 'ref'"), std::string::npos);
  EXPECT_EQ(ref.compute_ref_log_prob(ragged_actor_batch()).tensor("ref_log_prob").sizes(),
            (std::vector<int64_t>{8, 6}));
  // Two in-process ranks cannot average gradients.
  ActorRolloutRefWorker two({0, 2, "g"}, cfg, "actor");
  two.init_model(DataProto());
  EXPECT_NE(error_of([&] { two.update_actor(ragged_actor_batch()); }).find("world size 2"), std::string::npos);
  // update_actor needs the temperature and the batch keys.
  ActorRolloutRefWorker one({0, 1, "g"}, cfg, "actor");
  one.init_model(DataProto());
  auto no_temp = ragged_actor_batch();
  no_temp.meta_info = nlohmann::json::object();
  EXPECT_NE(error_of([&] { one.update_actor(no_temp); }).find("temperature"), std::string::npos);
  auto no_adv = ragged_actor_batch();
  no_adv.batch.erase("advantages");
  EXPECT_NE(error_of([&] { one.update_actor(no_adv); }).find("'advantages'"), std::string::npos);
}

}  // namespace
}  // namespace verl::test
