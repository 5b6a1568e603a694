// LoRA on the critic (critic.model.lora_*, model/value_lora.h), as verl's critic builds it with PEFT's TOKEN_CLS:
// only the adapters and the value head train and hold optimizer state, a fresh adapter leaves the values alone,
// checkpoints hold that trainable state only and resume exactly (hf_model is the merged value model), two
// data-parallel ranks (ZeRO-2) step as one rank on the whole batch, lora_adapter_path starts from a TOKEN_CLS
// adapter folder, and wrong keys are one-line config errors naming the key (tensor parallelism: the TP unit test
// tests/unit/model/test_lora_tensor_parallel.cpp and tests/dist/test_megatron_lora.cpp).
// With the value head left frozen (add_value_lora perturbed), the training, checkpoint and two-rank tests failed.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/metric_compare.h"
#include "support/peft_token_cls.h"
#include "support/thread_ranks.h"
#include "unit/workers/critic_test_util.h"
#include "verl/io/safetensors.h"
#include "verl/model/value_lora.h"
#include "verl/workers/critic_worker.h"

namespace verl::workers {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
using protocol::Json;
using single_controller::WorkerContext;

// test_critic_worker's overrides with values computed in one micro-batch.
std::vector<std::string> base_overrides(const std::string& model_dir) {
  return test::with(test::critic_overrides(model_dir), {"critic.forward_micro_batch_size_per_gpu=4"});
}

const std::vector<std::string> kLora = {"critic.model.lora_rank=4", "critic.model.lora_alpha=8"};

using test::with;

std::unique_ptr<CriticWorker> make_worker(const std::vector<std::string>& overrides, int rank = 0, int world = 1,
                                          std::shared_ptr<parallel::Comm> comm = nullptr) {
  return test::make_critic_worker(overrides, rank, world, std::move(comm));
}

bool is_trainable_name(const std::string& name) {
  return model::is_lora_parameter_name(name) || name == "score.weight" || name == "score.bias";
}

// B non-zero (seeded, the same on every rank), so gradients reach A and the values move from the first step.
void perturb_lora_b(CriticWorker& w) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(17);
  for (auto& [name, t] : model::lora_named_parameters(w.module())) {
    if (name.find("lora_B") != std::string::npos) t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.1, gen));
  }
}

TEST(CriticLora, OnlyAdaptersAndTheValueHeadTrainWithOptimizerStateOverThem) {
  const std::string lm = test::make_lm_folder("critic_lora_train_lm");
  auto lora = make_worker(with(base_overrides(lm), kLora));
  auto plain = make_worker(base_overrides(lm));
  DataProto batch = test::make_ppo_batch(8, 4, 3, 31);
  // B = 0: a fresh adapter gives the base critic's values exactly (the same seeded value head).
  EXPECT_TRUE(torch::equal(lora->compute_values(batch).tensor("values"), plain->compute_values(batch).tensor("values")));

  std::set<std::string> trainable;
  for (const auto& item : lora->module()->named_parameters()) {
    if (item.value().requires_grad()) trainable.insert(item.key());
  }
  EXPECT_EQ(trainable.size(), 2u * 7 * 2 + 2);  // A and B on 7 projections x 2 layers, score.weight and .bias
  for (const auto& name : trainable) EXPECT_TRUE(is_trainable_name(name)) << name;
  EXPECT_TRUE(trainable.count("score.weight") && trainable.count("score.bias"));

  // The optimizer holds exactly those parameters, and after steps its state covers only them.
  std::set<const void*> expected;
  for (const auto& t : model::value_lora_parameters(lora->module())) expected.insert(t.unsafeGetTensorImpl());
  auto& optimizer = lora->optimizer();
  ASSERT_EQ(optimizer.param_groups().size(), 1u);
  std::set<const void*> held;
  for (const auto& p : optimizer.param_groups()[0].params()) held.insert(p.unsafeGetTensorImpl());
  EXPECT_EQ(held, expected);
  for (uint64_t s = 0; s < 3; ++s) lora->update_critic(test::make_ppo_batch(8, 4, 3, 40 + s));
  EXPECT_EQ(optimizer.state().size(), expected.size());
  for (const auto& [key, state] : optimizer.state()) EXPECT_TRUE(expected.count(key)) << "state for a frozen tensor";

  // The base stays bitwise as loaded; the adapters and the head moved.
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  o.value_head_seed = 5;
  const model::CausalLM loaded = model::load_model(lm, o);
  auto now = lora->module()->named_parameters();
  for (const auto& item : loaded->named_parameters()) {
    if (item.key().rfind("score.", 0) == 0) {
      EXPECT_FALSE(torch::equal(now[item.key()], item.value())) << item.key() << " did not train";
    } else {
      EXPECT_TRUE(torch::equal(now[item.key()], item.value())) << item.key() << " changed";
    }
  }
  double b_max = 0;
  for (const auto& [name, t] : model::lora_named_parameters(lora->module())) {
    if (name.find("lora_B") != std::string::npos) b_max = std::max(b_max, t.abs().max().item<double>());
  }
  EXPECT_GT(b_max, 0.0);
  EXPECT_FALSE(torch::allclose(lora->compute_values(batch).tensor("values"), plain->compute_values(batch).tensor("values")));
}

TEST(CriticLora, CheckpointHoldsTheTrainableStateOnlyAndResumesExactly) {
  const std::string lm = test::make_lm_folder("critic_lora_resume_lm");
  auto overrides = with(base_overrides(lm), with(kLora, {"critic.optim.lr_warmup_steps=1",
                                                         "critic.optim.total_training_steps=4",
                                                         "critic.checkpoint.save_contents=[model,optimizer,extra,hf_model]"}));
  std::vector<DataProto> batches;
  for (uint64_t s = 0; s < 3; ++s) batches.push_back(test::make_ppo_batch(8, 4, 3, 50 + s));
  DataProto probe = test::make_ppo_batch(6, 4, 3, 60);

  auto straight = make_worker(overrides);
  perturb_lora_b(*straight);
  std::vector<Json> straight_metrics;
  for (const auto& b : batches) straight_metrics.push_back(straight->update_critic(b).meta_info["metrics"]);

  const std::string ckpt = test::make_temp_dir("critic_lora_ckpt") + "/global_step_1/critic";
  std::vector<Json> resumed_metrics;
  torch::Tensor values_at_save;
  {
    auto first = make_worker(overrides);
    perturb_lora_b(*first);
    resumed_metrics.push_back(first->update_critic(batches[0]).meta_info["metrics"]);
    DataProto save;
    save.meta_info = {{"local_path", ckpt}, {"global_step", 1}};
    first->save_checkpoint(save);
    values_at_save = first->compute_values(probe).tensor("values");
  }
  // The model file: the adapters and the value head, naming the base.
  const std::string model_file = ckpt + "/model_world_size_1_rank_0.safetensors";
  const auto state = model::load_tensors(model_file);
  EXPECT_EQ(state.size(), 30u);
  for (const auto& [name, t] : state) EXPECT_TRUE(is_trainable_name(name)) << name;
  EXPECT_EQ(io::SafetensorsFile(model_file).metadata().at("base_model_name_or_path"), fs::absolute(lm).string());
  EXPECT_LT(fs::file_size(ckpt + "/optim_world_size_1_rank_0.pt"), fs::file_size(ckpt + "/huggingface/model.safetensors"));

  auto second = make_worker(overrides);  // B zero again: everything trainable must come from the file
  DataProto load;
  load.meta_info = {{"local_path", ckpt}, {"del_local_after_load", false}};
  second->load_checkpoint(load);
  EXPECT_TRUE(torch::equal(second->compute_values(probe).tensor("values"), values_at_save));
  for (size_t i = 1; i < batches.size(); ++i) {
    resumed_metrics.push_back(second->update_critic(batches[i]).meta_info["metrics"]);
  }
  ASSERT_EQ(straight_metrics.size(), resumed_metrics.size());
  for (size_t i = 0; i < straight_metrics.size(); ++i)
    EXPECT_EQ(test::without_machine_measured_metrics(straight_metrics[i]),
              test::without_machine_measured_metrics(resumed_metrics[i]))
        << i;
  auto ps = straight->module()->named_parameters(), pr = second->module()->named_parameters();
  for (const auto& item : ps) EXPECT_TRUE(torch::equal(item.value(), pr[item.key()])) << item.key();

  // hf_model is the merged value model: its values are the adapted critic's at save time.
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  model::CausalLM merged = model::load_model(ckpt + "/huggingface", o);
  torch::NoGradGuard no_grad;
  const auto mask = probe.tensor("response_mask").to(torch::kFloat32);
  const auto hf_values = model::response_values(merged, probe.tensor("input_ids"), probe.tensor("attention_mask"),
                                                probe.tensor("position_ids"), 3) * mask;
  EXPECT_LT((hf_values - values_at_save).abs().max().item<double>(), 1e-5);
  EXPECT_GT(values_at_save.abs().max().item<double>(), 0.01);
}

TEST(CriticLora, TwoDataParallelRanksStepAsOneRankOnTheWholeBatch) {
  const std::string lm = test::make_lm_folder("critic_lora_dp_lm");
  const auto overrides = with(base_overrides(lm), with(kLora, {"critic.ppo_mini_batch_size=8"}));
  DataProto batch = test::make_ppo_batch(8, 4, 3, 70);
  auto one = make_worker(overrides);
  perturb_lora_b(*one);
  one->update_critic(batch);
  std::vector<model::NamedTensors> ranks(2);
  std::vector<size_t> state_sizes(2);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    auto w = make_worker(overrides, comm->rank(), 2, comm);
    perturb_lora_b(*w);
    w->update_critic(batch.slice(comm->rank() * 4, comm->rank() * 4 + 4));
    state_sizes[static_cast<size_t>(comm->rank())] = w->optimizer().state().size();
    for (auto& [name, t] : model::value_lora_named_parameters(w->module())) {
      ranks[static_cast<size_t>(comm->rank())].emplace_back(name, t.detach().clone());
    }
  });
  const auto want = model::value_lora_named_parameters(one->module());
  ASSERT_EQ(ranks[0].size(), want.size());
  ASSERT_EQ(ranks[1].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    for (int r = 0; r < 2; ++r) {
      EXPECT_LT((ranks[r][i].second - want[i].second).abs().max().item<double>(), 1e-6) << "rank " << r << " " << want[i].first;
    }
  }
  // ZeRO-2: each rank's AdamW state covers its own part of the 30 trainable tensors.
  EXPECT_EQ(state_sizes[0] + state_sizes[1], want.size());
  EXPECT_GT(state_sizes[0], 0u);
  EXPECT_GT(state_sizes[1], 0u);
}

// A PEFT TOKEN_CLS folder as PEFT writes it for verl's critic (names base_model.model.*, modules_to_save).
void write_token_cls_adapter(CriticWorker& w, const std::string& dir, const std::string& task_type) {
  test::write_token_cls_adapter(model::value_lora_named_parameters(w.module()), dir, 4, 8,
                                {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
                                task_type);
}

TEST(CriticLora, AdapterPathStartsFromATokenClassificationFolder) {
  const std::string lm = test::make_lm_folder("critic_lora_adapter_lm");
  auto trained = make_worker(with(base_overrides(lm), kLora));
  perturb_lora_b(*trained);
  trained->update_critic(test::make_ppo_batch(8, 4, 3, 80));
  const std::string dir = test::make_temp_dir("critic_lora_adapter");
  write_token_cls_adapter(*trained, dir + "/token_cls", "TOKEN_CLS");
  DataProto probe = test::make_ppo_batch(6, 4, 3, 81);

  auto started = make_worker(with(base_overrides(lm), with(kLora, {"critic.model.lora_adapter_path=" + dir + "/token_cls"})));
  EXPECT_TRUE(torch::equal(started->compute_values(probe).tensor("values"), trained->compute_values(probe).tensor("values")));
  // verl's _is_lora: an adapter path alone (lora_rank 0) is LoRA too, with the folder's r and alpha.
  auto path_only = make_worker(with(base_overrides(lm), {"critic.model.lora_adapter_path=" + dir + "/token_cls"}));
  EXPECT_TRUE(torch::equal(path_only->compute_values(probe).tensor("values"), trained->compute_values(probe).tensor("values")));
  EXPECT_EQ(model::value_lora_parameters(path_only->module()).size(), 30u);

  auto error_for = [&](const std::vector<std::string>& keys) {
    return test::error_text([&] { make_worker(with(base_overrides(lm), keys)); });
  };
  std::string e = error_for(with(kLora, {"critic.model.lora_adapter_path=" + lm}));
  EXPECT_NE(e.find("adapter_config.json"), std::string::npos) << e;
  write_token_cls_adapter(*trained, dir + "/causal_lm", "CAUSAL_LM");  // an actor's adapter
  e = error_for(with(kLora, {"critic.model.lora_adapter_path=" + dir + "/causal_lm"}));
  EXPECT_NE(e.find("TOKEN_CLS"), std::string::npos) << e;
  e = error_for({"critic.model.lora_rank=2", "critic.model.lora_adapter_path=" + dir + "/token_cls"});
  EXPECT_NE(e.find("critic.model.lora_rank=4"), std::string::npos) << e;
  // Without the value head's tensors the folder is not a critic's adapter.
  fs::create_directories(dir + "/no_head");
  fs::copy(dir + "/token_cls/adapter_config.json", dir + "/no_head/adapter_config.json");
  model::NamedTensors adapters_only;
  for (auto& [name, t] : model::lora_named_parameters(trained->module())) {
    adapters_only.emplace_back("base_model.model." + name, t.detach());
  }
  model::save_tensors(dir + "/no_head/adapter_model.safetensors", adapters_only);
  e = error_for(with(kLora, {"critic.model.lora_adapter_path=" + dir + "/no_head"}));
  EXPECT_NE(e.find("score.weight"), std::string::npos) << e;
}

TEST(CriticLora, WrongKeysAreConfigErrorsNamingTheKey) {
  const std::string lm = test::make_lm_folder("critic_lora_config_lm");
  // ZeRO-3 and tensor parallelism are accepted (tests/dist/test_zero3_lora.cpp and test_megatron_lora.cpp run them).
  EXPECT_TRUE(test::ppo_config(with(base_overrides(lm), with(kLora, {"critic.model.fsdp_config.reshard_after_forward=true"})))
                  ->critic.model.fsdp_config.reshard_after_forward);
  EXPECT_EQ(test::ppo_config(with(base_overrides(lm), with(kLora, {"critic.strategy=megatron",
                                                                   "critic.megatron.tensor_model_parallel_size=2"})))
                ->critic.tensor_parallel_size(),
            2);
  std::string e = test::error_text([&] { test::ppo_config(with(base_overrides(lm), {"critic.model.lora_rank=-1"})); });
  EXPECT_NE(e.find("critic.model.lora_rank"), std::string::npos) << e;
  // A target list the critic's decoder does not have: the error names the entry.
  e = test::error_text([&] { make_worker(with(base_overrides(lm), with(kLora, {"critic.model.target_modules=[qproj]"}))); });
  EXPECT_NE(e.find("qproj"), std::string::npos) << e;
}

}  // namespace
}  // namespace verl::workers
