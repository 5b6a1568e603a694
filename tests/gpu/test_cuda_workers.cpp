// The roles on a CUDA device through the real workers (trainer.device=cuda), against the same step on the CPU:
// one PPO step (generate, old and ref log-probs, values, GAE, update_critic, update_actor) and one GRPO step
// (no critic, group-normalised outcome advantages), with fp32 forced on the device (mixed_precision.param_dtype
// and rollout.dtype fp32) so the step must equal the CPU's within fp32 tolerance; then the GPU defaults (bf16
// rollout on a bf16 copy of the weights, bf16 autocast over fp32 masters) must run and stay close to the fp32
// log-probs; and one update in bf16 mixed precision against the fp32 CPU update. Skips without a device.
//
// Tolerances: fp32 device vs fp32 CPU, metrics 1e-4 relative (1e-4 absolute near zero); bf16 mixed precision vs
// fp32: gradients 1e-1 of their norm (clip decisions flip), loss metrics 5e-2; bf16 rollout vs fp32 log-probs: mean |p - p'| < 2e-2.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gpu/cuda_test.h"
#include "support/actor_fixture.h"
#include "support/run_command.h"
#include "verl/algo/core_algos.h"
#include "verl/model/lora.h"
#include "verl/model/transformer.h"
#include "verl/model/value_lora.h"
#include "verl/model/weights.h"
#include "verl/workers/actor_rollout_ref_worker.h"
#include "verl/workers/critic_worker.h"
#include "verl/workers/dp_actor.h"
#include "verl/workers/optimizer.h"

namespace verl::test {
namespace {

using protocol::DataProto;

const std::vector<std::string> kFp32OnTheDevice = {
    "+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32",
    "+actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype=fp32",
    "+critic.model.fsdp_config.mixed_precision.param_dtype=fp32", "actor_rollout_ref.rollout.dtype=float32"};

// 4 prompts x n=2 of 5 tokens (two left-padded), sampled at temperature 1 from the rollout seed.
DataProto prompts() {
  auto ids = torch::tensor({{0, 0, 4, 9, 2}, {1, 12, 7, 3, 22}, {0, 5, 6, 30, 11}, {8, 13, 21, 2, 40}}, torch::kInt64);
  auto mask = (ids != 0).to(torch::kInt64);
  mask[1][0] = 1;
  DataProto p = DataProto::from_dict(
      {{"input_ids", ids}, {"attention_mask", mask}, {"position_ids", model::position_ids_from_mask(mask)}});
  p = p.repeat(2, /*interleave=*/true);
  p.meta_info = {{"eos_token_id", 63}, {"pad_token_id", 0}, {"do_sample", true}, {"validate", false},
                 {"temperature", 1.0}};
  return p;
}

void merge(DataProto& batch, const DataProto& out) {
  DataProto tensors = out;
  tensors.meta_info = nlohmann::json::object();
  batch.union_with(tensors);
}

struct StepResult {
  DataProto batch;
  nlohmann::json actor_metrics, critic_metrics;
  std::string actor_rests_on, critic_rests_on;  // the parameters' device after the step
  model::NamedTensors actor_adapters, critic_adapters;  // with LoRA: the trained state after the step (host)
};

// One step in verl's order on `device`; grpo: no critic, GRPO advantages.
StepResult run_step(const std::string& model_dir, const std::string& device, bool grpo,
                    const std::vector<std::string>& extra, int updates = 1) {
  std::vector<std::string> overrides = {"trainer.device=" + device,
                                        "trainer.n_gpus_per_node=1",
                                        "critic.model.path=" + model_dir,
                                        "algorithm.adv_estimator=" + std::string(grpo ? "grpo" : "gae"),
                                        "actor_rollout_ref.rollout.n=2",
                                        "actor_rollout_ref.rollout.calculate_log_probs=true",
                                        "actor_rollout_ref.actor.use_kl_loss=true",
                                        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                                        "critic.ppo_micro_batch_size_per_gpu=2",
                                        "data.train_batch_size=4"};
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  auto config = tiny_ppo_config(model_dir, overrides);
  single_controller::WorkerContext context;
  context.group_name = "gpu_test";
  workers::ActorRolloutRefWorker actor(context, config, "actor_rollout_ref");
  actor.init_model(DataProto());
  std::unique_ptr<workers::CriticWorker> critic;
  if (!grpo) {
    critic = std::make_unique<workers::CriticWorker>(context, config);
    critic->init_model(DataProto());
  }
  StepResult r;
  r.batch = actor.generate_sequences(prompts());
  r.batch.meta_info = {{"temperature", 1.0}};
  merge(r.batch, actor.compute_log_prob(r.batch));
  merge(r.batch, actor.compute_ref_log_prob(r.batch));
  const auto mask = r.batch.tensor("response_mask");
  const int64_t N = mask.size(0), R = mask.size(1);
  // A score on each response's last token: how many of its tokens are even (deterministic given the tokens).
  auto rewards = torch::zeros({N, R});
  auto score = ((r.batch.tensor("responses") % 2 == 0).to(torch::kFloat32) * mask).sum(-1) / 6.0;
  auto last = (mask.sum(-1) - 1).clamp_min(0);
  rewards.scatter_(1, last.unsqueeze(1), score.unsqueeze(1));
  if (grpo) {
    std::vector<std::string> uids;
    for (int64_t i = 0; i < N; ++i) uids.push_back(std::to_string(i / 2));
    auto adv = algo::compute_grpo_outcome_advantage(rewards, mask, uids);
    r.batch.batch["advantages"] = adv.first;
    r.batch.batch["returns"] = adv.second;
  } else {
    merge(r.batch, critic->compute_values(r.batch));
    auto adv = algo::compute_gae_advantage_return(rewards, r.batch.tensor("values"), mask, 1.0, 1.0);
    r.batch.batch["advantages"] = adv.first;
    r.batch.batch["returns"] = adv.second;
    r.batch.meta_info["multi_turn"] = false;
    for (int u = 0; u < updates; ++u) r.critic_metrics = critic->update_critic(r.batch).meta_info["metrics"];
    r.critic_rests_on = critic->module()->parameters()[0].device().str();
  }
  r.batch.meta_info["multi_turn"] = false;
  for (int u = 0; u < updates; ++u) r.actor_metrics = actor.update_actor(r.batch).meta_info["metrics"];
  r.actor_rests_on = actor.actor_module()->parameters()[0].device().str();
  auto to_host = [](model::NamedTensors tensors) {
    for (auto& [name, t] : tensors) t = t.to(torch::kCPU);
    return tensors;
  };
  if (model::lora_state(actor.actor_module())) r.actor_adapters = to_host(model::lora_full_state(actor.actor_module()));
  if (critic && model::lora_state(critic->module())) {
    r.critic_adapters = to_host(model::value_lora_full_state(critic->module()));
  }
  return r;
}

void expect_metrics_near(const nlohmann::json& got, const nlohmann::json& want, double tolerance, const char* what) {
  ASSERT_FALSE(want.empty()) << what;
  for (const auto& [key, values] : want.items()) {
    if (key.rfind("perf/", 0) == 0 || key.rfind("timing", 0) == 0) continue;
    ASSERT_TRUE(got.contains(key)) << what << " " << key;
    if (!values.is_array()) continue;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_number()) continue;
      const double w = values[i].get<double>(), g = got[key][i].get<double>();
      EXPECT_NEAR(g, w, tolerance * std::max(1.0, std::abs(w))) << what << " " << key << "[" << i << "]";
    }
  }
}


TEST(CudaWorkers, PpoStepInFp32EqualsTheCpuStep) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_ppo_step") + "/model");
  const StepResult cpu = run_step(dir, "cpu", false, {}), gpu = run_step(dir, "cuda", false, kFp32OnTheDevice);
  // The device sampler draws the host generator's uniforms: the same tokens unless a draw falls within fp32
  // rounding of a cumulative-probability boundary.
  EXPECT_TRUE(torch::equal(gpu.batch.tensor("responses"), cpu.batch.tensor("responses")));
  for (const char* key : {"old_log_probs", "ref_log_prob", "values", "rollout_log_probs"}) {
    EXPECT_LT(relative_error(gpu.batch.tensor(key), cpu.batch.tensor(key)), 1e-5) << key;
  }
  expect_metrics_near(gpu.critic_metrics, cpu.critic_metrics, 1e-4, "critic");
  expect_metrics_near(gpu.actor_metrics, cpu.actor_metrics, 1e-4, "actor");
}

TEST(CudaWorkers, GrpoStepInFp32EqualsTheCpuStep) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_grpo_step") + "/model");
  const StepResult cpu = run_step(dir, "cpu", true, {}), gpu = run_step(dir, "cuda", true, kFp32OnTheDevice);
  EXPECT_TRUE(torch::equal(gpu.batch.tensor("responses"), cpu.batch.tensor("responses")));
  EXPECT_LT(relative_error(gpu.batch.tensor("old_log_probs"), cpu.batch.tensor("old_log_probs")), 1e-5);
  expect_metrics_near(gpu.actor_metrics, cpu.actor_metrics, 1e-4, "actor");
}

// LoRA (issue 26) on the device: the actor's and the critic's adapters (rank 4, every projection) through two
// PPO updates in fp32 equal the CPU's: the same rollout (merged adapters), log-probs (side path; the ref is the
// base with the adapters off), metrics and trained adapters. Then the GPU defaults (bf16 rollout of the merged
// weights, bf16 autocast over the fp32 adapters) run with finite metrics.
TEST(CudaWorkers, LoraPpoStepInFp32EqualsTheCpuStep) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_lora_step") + "/model");
  const std::vector<std::string> lora = {"actor_rollout_ref.model.lora_rank=4", "actor_rollout_ref.model.lora_alpha=8",
                                         "critic.model.lora_rank=4", "critic.model.lora_alpha=8",
                                         "actor_rollout_ref.actor.optim.lr=1e-2", "critic.optim.lr=1e-2"};
  std::vector<std::string> fp32_lora = kFp32OnTheDevice;
  fp32_lora.insert(fp32_lora.end(), lora.begin(), lora.end());
  const StepResult cpu = run_step(dir, "cpu", false, lora, /*updates=*/2);
  const StepResult gpu = run_step(dir, "cuda", false, fp32_lora, /*updates=*/2);
  EXPECT_TRUE(torch::equal(gpu.batch.tensor("responses"), cpu.batch.tensor("responses")));
  for (const char* key : {"old_log_probs", "ref_log_prob", "values", "rollout_log_probs"}) {
    EXPECT_LT(relative_error(gpu.batch.tensor(key), cpu.batch.tensor(key)), 1e-5) << key;
  }
  expect_metrics_near(gpu.critic_metrics, cpu.critic_metrics, 1e-4, "critic");
  expect_metrics_near(gpu.actor_metrics, cpu.actor_metrics, 1e-4, "actor");
  // Trained adapters: AdamW turns rounding-level gradient differences into steps of up to lr, so by norm.
  auto expect_adapters_near = [](const model::NamedTensors& got, const model::NamedTensors& want) {
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i].first);
      EXPECT_LT(relative_error(got[i].second, want[i].second), 1e-3) << want[i].first;
    }
  };
  expect_adapters_near(gpu.actor_adapters, cpu.actor_adapters);
  expect_adapters_near(gpu.critic_adapters, cpu.critic_adapters);
  double largest_b = 0;
  for (const auto& [name, t] : cpu.actor_adapters) {
    if (name.find("lora_B") != std::string::npos) largest_b = std::max(largest_b, t.abs().max().item<double>());
  }
  EXPECT_GT(largest_b, 1e-3) << "the adapters hardly trained";

  const StepResult bf16 = run_step(dir, "cuda", false, lora, /*updates=*/2);
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/kl_loss"}) {
    ASSERT_TRUE(bf16.actor_metrics.contains(key)) << key;
    EXPECT_TRUE(std::isfinite(bf16.actor_metrics[key][0].get<double>())) << key;
  }
  EXPECT_TRUE(std::isfinite(bf16.critic_metrics["critic/vf_loss"][0].get<double>()));
}

// The offload keys on the device: parameters and AdamW moments rest in host memory between phases and come back
// for each phase bit for bit, so two PPO steps (the second update steps moments that were offloaded after the
// first) give exactly the metrics of the same steps without offload.
TEST(CudaWorkers, OffloadKeysRestStateOnTheHostAndChangeNoBit) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_offload") + "/model");
  std::vector<std::string> offload = kFp32OnTheDevice;
  for (const char* key : {"actor_rollout_ref.actor.fsdp_config.param_offload=true",
                          "actor_rollout_ref.actor.fsdp_config.optimizer_offload=true",
                          "actor_rollout_ref.ref.fsdp_config.param_offload=true",
                          "critic.model.fsdp_config.param_offload=true", "critic.model.fsdp_config.optimizer_offload=true"}) {
    offload.push_back(key);
  }
  const StepResult kept = run_step(dir, "cuda", false, kFp32OnTheDevice, /*updates=*/2);
  const StepResult moved = run_step(dir, "cuda", false, offload, /*updates=*/2);
  EXPECT_EQ(kept.actor_rests_on, "cuda:0");
  EXPECT_EQ(moved.actor_rests_on, "cpu");
  EXPECT_EQ(moved.critic_rests_on, "cpu");
  EXPECT_TRUE(torch::equal(moved.batch.tensor("responses"), kept.batch.tensor("responses")));
  EXPECT_TRUE(torch::equal(moved.batch.tensor("old_log_probs"), kept.batch.tensor("old_log_probs")));
  expect_metrics_near(moved.actor_metrics, kept.actor_metrics, 0.0, "actor");
  expect_metrics_near(moved.critic_metrics, kept.critic_metrics, 0.0, "critic");
}

// verl's GPU defaults: the rollout samples from a bf16 copy of the weights, the actor recomputes log-probs under
// bf16 autocast; the two must describe nearly the same distribution (verl's training/rollout_probs_diff).
TEST(CudaWorkers, DefaultBf16RolloutAndMixedPrecisionRunAndAgree) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_bf16_step") + "/model");
  const StepResult gpu = run_step(dir, "cuda", false, {});
  const auto mask = gpu.batch.tensor("response_mask").to(torch::kFloat64);
  const auto p_actor = gpu.batch.tensor("old_log_probs").to(torch::kFloat64).exp();
  const auto p_rollout = gpu.batch.tensor("rollout_log_probs").to(torch::kFloat64).exp();
  const double diff = ((p_actor - p_rollout).abs() * mask).sum().item<double>() / mask.sum().item<double>();
  EXPECT_LT(diff, 2e-2);
  EXPECT_GT(diff, 0.0);  // bf16 really ran: fp32 would agree to ~1e-7
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/kl_loss"}) {
    ASSERT_TRUE(gpu.actor_metrics.contains(key)) << key;
    EXPECT_TRUE(std::isfinite(gpu.actor_metrics[key][0].get<double>())) << key;
  }
  EXPECT_TRUE(std::isfinite(gpu.critic_metrics["critic/vf_loss"][0].get<double>()));
}

// One update_policy in bf16 mixed precision on the device against the fp32 update on the CPU.
TEST(CudaActor, Bf16MixedPrecisionUpdateIsNearTheFp32Cpu) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_actor_bf16") + "/model");
  auto cfg = tiny_ppo_config(dir, {"actor_rollout_ref.actor.entropy_coeff=0.01", "actor_rollout_ref.actor.use_kl_loss=true",
                                   "actor_rollout_ref.model.enable_gradient_checkpointing=true"})
                 ->actor_rollout_ref.actor;
  const auto batch = ragged_actor_batch();
  struct Result {
    std::vector<torch::Tensor> grads;
    nlohmann::json metrics;
  };
  auto update_on = [&](torch::Device device, torch::ScalarType param_dtype) {
    auto module = model::load_model(dir);
    module->model->gradient_checkpointing = true;  // the recomputation must run in bf16 too
    module->to(device);
    auto params = module->parameters();
    auto opt = workers::build_optimizer(params, cfg.optim);
    workers::DataParallelPPOActor actor(cfg, module, opt.get());
    actor.param_dtype = param_dtype;
    Result r;
    actor.gradient_all_reduce = [&r](const std::vector<torch::Tensor>& ps) {
      for (const auto& p : ps) {
        if (p.grad().defined()) r.grads.push_back(p.grad().to(torch::kCPU).clone());
      }
    };
    r.metrics = actor.update_policy(batch);
    for (const auto& p : params) EXPECT_EQ(p.scalar_type(), torch::kFloat32);  // fp32 masters
    return r;
  };
  const Result cpu = update_on(torch::kCPU, torch::kFloat32);
  const Result gpu = update_on(torch::Device(torch::kCUDA, 0), torch::kBFloat16);
  ASSERT_EQ(cpu.grads.size(), gpu.grads.size());
  auto all = [](const std::vector<torch::Tensor>& ts) {
    std::vector<torch::Tensor> flat;
    for (const auto& t : ts) flat.push_back(t.flatten());
    return torch::cat(flat);
  };
  // bf16 log-probs move the PPO ratio by ~1e-2, enough to flip some tokens across the 0.2 clip boundary, which
  // switches their gradient on or off: measured 0.052 on an H200 (stop 22).
  const double grad_error = relative_error(all(gpu.grads), all(cpu.grads));
  EXPECT_LT(grad_error, 1e-1);
  EXPECT_GT(grad_error, 1e-6);  // bf16 really ran
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/entropy_loss", "actor/kl_loss"}) {
    ASSERT_TRUE(cpu.metrics.contains(key)) << key;
    for (size_t i = 0; i < cpu.metrics[key].size(); ++i) {
      const double want = cpu.metrics[key][i].get<double>(), got = gpu.metrics[key][i].get<double>();
      EXPECT_NEAR(got, want, 5e-2 * std::max(1.0, std::abs(want))) << key << " " << i;
    }
  }
}

}  // namespace
}  // namespace verl::test
