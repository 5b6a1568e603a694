// LoRA in ActorRolloutRefWorker (actor_rollout_ref.model.lora_*): only the adapters train (the base weights stay
// bitwise as loaded), the reference log-probs are the base model's (no second copy), generation uses the adapted
// weights and leaves them exactly as they were, checkpoints hold the adapters only and resume exactly, `verl model
// export` writes PEFT's folder or the merged model, two data-parallel ranks (ZeRO-2) step as one rank on the whole
// batch, and the combinations not implemented are one-line config errors naming the key.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "support/actor_fixture.h"
#include "support/error_text.h"
#include "support/metric_compare.h"
#include "support/run_command.h"
#include "support/thread_ranks.h"
#include "verl/common/error.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"
#include "verl/workers/actor_rollout_ref_worker.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
using workers::ActorRolloutRefWorker;

std::string lora_worker_shared_model() {
  static const std::string dir = make_tiny_model(make_temp_dir("lora_worker_model") + "/model");
  return dir;
}

const std::vector<std::string> kLoraWorkerLora = {"actor_rollout_ref.model.lora_rank=4",
                                                  "actor_rollout_ref.model.lora_alpha=8",
                                                  "actor_rollout_ref.actor.optim.lr=0.02"};

std::vector<std::string> lora_worker_with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// One training step through the worker: generate, old (and ref) log-probs, update.
nlohmann::json lora_worker_train_step(ActorRolloutRefWorker& w, const DataProto& prompts) {
  auto gen = w.generate_sequences(prompts);
  auto old = w.compute_log_prob(gen);
  gen.union_with(old.select({"old_log_probs"}));
  if (w.is_ref()) gen.union_with(w.compute_ref_log_prob(gen));
  gen.batch["advantages"] = torch::linspace(-1.0, 1.0, gen.size()).unsqueeze(1).expand({gen.size(), 6}).contiguous() *
                            gen.tensor("response_mask").to(torch::kFloat32);
  gen.meta_info["temperature"] = 1.0;
  return w.update_actor(gen).meta_info["metrics"];
}

TEST(LoraWorker, OnlyAdaptersTrainAndTheReferenceIsTheBase) {
  auto cfg = tiny_ppo_config(lora_worker_shared_model(),
                             lora_worker_with(kLoraWorkerLora, {"actor_rollout_ref.actor.use_kl_loss=true"}));
  ActorRolloutRefWorker w({0, 1, "w"}, cfg, "actor_rollout_ref");
  w.init_model(DataProto());
  EXPECT_THROW(w.ref_module(), Error);  // no second copy of the weights
  const auto base = model::load_model(lora_worker_shared_model());
  auto prompts = ragged_actor_prompts();
  for (int i = 0; i < 3; ++i) lora_worker_train_step(w, prompts);

  auto trained = w.actor_module()->named_parameters();
  int adapters = 0;
  for (const auto& item : base->named_parameters()) {
    EXPECT_TRUE(torch::equal(trained[item.key()], item.value())) << item.key() << " changed";  // frozen, bitwise
  }
  for (const auto& [name, t] : model::lora_named_parameters(w.actor_module())) {
    ++adapters;
    if (name.find("lora_B") != std::string::npos) EXPECT_GT(t.abs().max().item<double>(), 0.0) << name;
  }
  EXPECT_EQ(adapters, 28);

  // The reference log-probs are the base model's; the actor's differ after training.
  auto gen = w.generate_sequences(prompts);
  auto ref = w.compute_ref_log_prob(gen).tensor("ref_log_prob");
  auto old = w.compute_log_prob(gen).tensor("old_log_probs");
  auto mask = gen.tensor("response_mask").to(torch::kFloat32);
  model::CausalLM plain = model::load_model(lora_worker_shared_model());
  torch::NoGradGuard no_grad;
  auto want = model::response_log_probs(plain, gen.tensor("input_ids"), gen.tensor("attention_mask"),
                                        gen.tensor("position_ids"), gen.tensor("responses"), 1.0, false)
                  .log_probs;
  EXPECT_LT(((ref - want).abs() * mask).max().item<double>(), 1e-5);
  EXPECT_GT(((old - want).abs() * mask).max().item<double>(), 1e-3);
}

TEST(LoraWorker, CheckpointHoldsAdaptersResumesExactlyAndExports) {
  auto cfg = tiny_ppo_config(
      lora_worker_shared_model(),
      lora_worker_with(
          kLoraWorkerLora,
          {"actor_rollout_ref.actor.optim.lr_warmup_steps=4", "actor_rollout_ref.actor.optim.total_training_steps=10",
           "actor_rollout_ref.actor.checkpoint.save_contents=[model,optimizer,extra,hf_model]"}));
  const std::string root = make_temp_dir("lora_resume");
  const std::string ckpt = root + "/global_step_1/actor";
  auto prompts = ragged_actor_prompts();
  ActorRolloutRefWorker a({0, 1, "a"}, cfg, "actor_rollout");
  a.init_model(DataProto());
  lora_worker_train_step(a, prompts);
  DataProto save;
  save.meta_info = {{"local_path", ckpt}, {"global_step", 1}};
  a.save_checkpoint(save);
  // Adapters only, with their optimizer state; PEFT's folder names the base.
  const auto state = model::load_tensors(ckpt + "/model_world_size_1_rank_0.safetensors");
  EXPECT_EQ(state.size(), 28u);
  for (const auto& [name, t] : state) EXPECT_TRUE(model::is_lora_parameter_name(name)) << name;
  const auto adapter_config = nlohmann::json::parse(read_file(ckpt + "/lora_adapter/adapter_config.json"));
  EXPECT_EQ(adapter_config["r"], 4);
  EXPECT_EQ(adapter_config["base_model_name_or_path"], fs::absolute(lora_worker_shared_model()).string());
  EXPECT_TRUE(fs::exists(ckpt + "/optim_world_size_1_rank_0.pt"));
  EXPECT_LT(fs::file_size(ckpt + "/optim_world_size_1_rank_0.pt"),
            fs::file_size(ckpt + "/huggingface/model.safetensors"));  // AdamW moments of the adapters only

  auto m2a = lora_worker_train_step(a, prompts), m3a = lora_worker_train_step(a, prompts);
  auto gen_a = a.generate_sequences(prompts);
  ActorRolloutRefWorker b({0, 1, "b"}, cfg, "actor_rollout");
  b.init_model(DataProto());
  DataProto load;
  load.meta_info = {{"local_path", ckpt}, {"del_local_after_load", false}};
  b.load_checkpoint(load);
  auto m2b = lora_worker_train_step(b, prompts), m3b = lora_worker_train_step(b, prompts);
  EXPECT_EQ(without_machine_measured_metrics(m2a), without_machine_measured_metrics(m2b));
  EXPECT_EQ(without_machine_measured_metrics(m3a), without_machine_measured_metrics(m3b));
  EXPECT_TRUE(torch::equal(gen_a.tensor("responses"), b.generate_sequences(prompts).tensor("responses")));
  auto pa = a.actor_module()->named_parameters(), pb = b.actor_module()->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();

  // The checkpoint's hf_model is the merged model: its logits are the adapted actor's at save time.
  const auto batch = ragged_actor_batch();
  model::CausalLM merged = model::load_model(ckpt + "/huggingface");
  ActorRolloutRefWorker at_save({0, 1, "s"}, cfg, "actor_rollout");
  at_save.init_model(DataProto());
  at_save.load_checkpoint(load);
  torch::NoGradGuard no_grad;
  const auto ids = batch.tensor("input_ids"), am = batch.tensor("attention_mask"), pos = batch.tensor("position_ids");
  const auto adapted = at_save.actor_module()->forward(ids, am, pos);
  const auto amask = am.unsqueeze(-1).to(torch::kFloat32);
  EXPECT_LT(((merged->forward(ids, am, pos) - adapted).abs() * amask).max().item<double>(), 1e-4);

  // verl model export: PEFT's folder, or with --merge the merged model.
  const std::string peft_out = root + "/export_adapter", merged_out = root + "/export_merged";
  workers::export_hf_model(ckpt, peft_out);
  EXPECT_TRUE(fs::exists(peft_out + "/adapter_model.safetensors"));
  model::CausalLM reloaded = model::load_model(lora_worker_shared_model());
  model::load_peft_adapter(reloaded, peft_out);
  EXPECT_LT(((reloaded->forward(ids, am, pos) - adapted).abs() * amask).max().item<double>(), 1e-6);
  workers::export_hf_model(ckpt, merged_out, /*merge_lora=*/true);
  model::CausalLM exported = model::load_model(merged_out);
  EXPECT_LT(((exported->forward(ids, am, pos) - adapted).abs() * amask).max().item<double>(), 1e-4);
}

TEST(LoraWorker, TwoDataParallelRanksStepAsOneRankOnTheWholeBatch) {
  const std::vector<std::string> keys = lora_worker_with(
      kLoraWorkerLora,
      {"actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"});
  auto batch = ragged_actor_batch();
  batch.meta_info["temperature"] = 1.0;
  auto cfg = tiny_ppo_config(lora_worker_shared_model(), keys);
  // B non-zero from the start, the same on every rank: gradients then reach A as well.
  auto start = [](ActorRolloutRefWorker& w) {
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(17);
    for (auto& [name, t] : model::lora_named_parameters(w.actor_module())) {
      if (name.find("lora_B") != std::string::npos) t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.1, gen));
    }
  };
  ActorRolloutRefWorker one({0, 1, "one"}, cfg, "actor");
  one.init_model(DataProto());
  start(one);
  one.update_actor(batch);
  std::vector<model::NamedTensors> ranks(2);
  on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    ActorRolloutRefWorker w({comm->rank(), 2, "dp", comm}, cfg, "actor");
    w.init_model(DataProto());
    start(w);
    auto half = batch.slice(comm->rank() * 4, comm->rank() * 4 + 4);
    half.meta_info = batch.meta_info;
    w.update_actor(half);
    for (auto& [name, t] : model::lora_named_parameters(w.actor_module())) {
      ranks[static_cast<size_t>(comm->rank())].emplace_back(name, t.detach().clone());
    }
  });
  const auto want = model::lora_named_parameters(one.actor_module());
  ASSERT_EQ(ranks[0].size(), want.size());
  ASSERT_EQ(ranks[1].size(), want.size());
  double moved = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_LT((ranks[r][i].second - want[i].second).abs().max().item<double>(), 1e-6) << "rank " << r << " " << want[i].first;
    }
  }
  for (const auto& [name, t] : want) moved = std::max(moved, t.abs().max().item<double>());
  EXPECT_GT(moved, 0.0);
}

TEST(LoraWorker, UnimplementedCombinationsAreConfigErrors) {
  // The reference is the actor's base with the adapters off, so it cannot split sequences differently.
  std::string e = error_of([&] {
    tiny_ppo_config(lora_worker_shared_model(),
                    lora_worker_with(kLoraWorkerLora, {"actor_rollout_ref.actor.ulysses_sequence_parallel_size=2",
                                                       "actor_rollout_ref.ref.ulysses_sequence_parallel_size=1"}));
  });
  EXPECT_NE(e.find("actor_rollout_ref.ref.ulysses_sequence_parallel_size=1"), std::string::npos) << e;
  e = error_of([&] { tiny_ppo_config(lora_worker_shared_model(), {"actor_rollout_ref.model.lora_rank=-1"}); });
  EXPECT_NE(e.find("actor_rollout_ref.model.lora_rank"), std::string::npos) << e;
  // A list of names, and a bad name, through the config.
  auto cfg =
      tiny_ppo_config(lora_worker_shared_model(),
                      lora_worker_with(kLoraWorkerLora, {"actor_rollout_ref.model.target_modules=[q_proj,v_proj]"}));
  EXPECT_EQ(cfg->actor_rollout_ref.model.lora.target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  auto bad = tiny_ppo_config(lora_worker_shared_model(),
                             lora_worker_with(kLoraWorkerLora, {"actor_rollout_ref.model.target_modules=[qproj]"}));
  ActorRolloutRefWorker w({0, 1, "w"}, bad, "actor_rollout");
  e = error_of([&] { w.init_model(DataProto()); });
  EXPECT_NE(e.find("qproj"), std::string::npos) << e;
  // An adapter path that is no adapter folder.
  auto missing = tiny_ppo_config(
      lora_worker_shared_model(),
      lora_worker_with(kLoraWorkerLora, {"actor_rollout_ref.model.lora_adapter_path=" + lora_worker_shared_model()}));
  ActorRolloutRefWorker m({0, 1, "m"}, missing, "actor_rollout");
  e = error_of([&] { m.init_model(DataProto()); });
  EXPECT_NE(e.find("adapter_config.json"), std::string::npos) << e;
}

}  // namespace
}  // namespace verl::test
