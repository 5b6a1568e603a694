// The model, the rollout and one PPO update on a CUDA device against the CPU (spec: the CUDA issue's tolerance
// table). Each test skips where no device is visible, as on the CPU machines CI uses.
//
// Tolerances, as ||device - reference|| / ||reference|| over the whole tensor (max-abs for gradients):
//   fp32 on the device vs the CPU fp64 reference: 1e-5 (cuBLAS fp32 GEMMs, TF32 off as LibTorch's default);
//   bf16 weights and activations vs the CPU fp64 reference: 3e-2 (bf16 keeps 8 bits of mantissa);
//   one PPO update's gradients, fp32 device vs fp32 CPU: 1e-4 of the largest gradient entry.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gpu/cuda_test.h"
#include "support/actor_fixture.h"
#include "support/run_command.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"
#include "verl/rollout/generator.h"
#include "verl/runtime/cuda_device.h"
#include "verl/workers/dp_actor.h"
#include "verl/workers/optimizer.h"

namespace verl::test {
namespace {

using model::Arch;
using model::AttentionKernel;
using model::CausalLM;
using model::HeadKind;


CausalLM tiny_model(Arch arch, HeadKind head = HeadKind::LM) {
  CausalLM m(tiny_config(arch), head);
  model::init_weights(m, 17, /*perturb=*/true);
  m->eval();
  return m;
}

// A copy of `source` (same weights) on `device` in `dtype`.
CausalLM copy_to(const CausalLM& source, Arch arch, HeadKind head, torch::Device device, torch::ScalarType dtype) {
  CausalLM copy(tiny_config(arch), head);
  {
    torch::NoGradGuard no_grad;
    auto from = source->named_parameters();
    for (auto& p : copy->named_parameters()) p.value().copy_(from[p.key()]);
  }
  copy->to(device, dtype);
  copy->eval();
  return copy;
}

struct Batch {
  torch::Tensor input_ids, attention_mask, position_ids, responses;
};

// Two left-padded rows with 3 response tokens each.
Batch ragged_batch() {
  Batch b;
  b.input_ids = torch::tensor({{39, 39, 4, 9, 2, 17, 30, 5}, {1, 12, 7, 3, 22, 8, 13, 21}}, torch::kInt64);
  b.attention_mask = torch::ones_like(b.input_ids);
  b.attention_mask[0][0] = 0;
  b.attention_mask[0][1] = 0;
  b.position_ids = model::position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, 5, 3).clone();
  return b;
}

TEST(CudaModel, LogProbsEntropyAndValuesMatchTheCpuFp64Reference) {
  REQUIRE_CUDA_DEVICE();
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  const Batch b = ragged_batch();
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    CausalLM lm = tiny_model(arch);
    auto reference = copy_to(lm, arch, HeadKind::LM, torch::kCPU, torch::kFloat64);
    auto ref = model::response_log_probs(reference, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true);
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      const double tolerance = dtype == torch::kFloat32 ? 1e-5 : 3e-2;
      auto on_device = copy_to(lm, arch, HeadKind::LM, cuda, dtype);
      auto out = model::response_log_probs(on_device, b.input_ids.to(cuda), b.attention_mask.to(cuda),
                                           b.position_ids.to(cuda), b.responses.to(cuda), 0.7, true);
      EXPECT_EQ(out.log_probs.scalar_type(), torch::kFloat32);  // log-probs in fp32 whatever the weights
      EXPECT_LT(relative_error(out.log_probs, ref.log_probs), tolerance) << static_cast<int>(arch) << " " << dtype;
      EXPECT_LT(relative_error(out.entropy, ref.entropy), tolerance) << static_cast<int>(arch) << " " << dtype;
    }
    CausalLM critic = tiny_model(arch, HeadKind::Value);
    auto critic_ref = copy_to(critic, arch, HeadKind::Value, torch::kCPU, torch::kFloat64);
    auto values_ref = model::response_values(critic_ref, b.input_ids, b.attention_mask, b.position_ids, 3);
    auto critic_gpu = copy_to(critic, arch, HeadKind::Value, cuda, torch::kFloat32);
    auto values = model::response_values(critic_gpu, b.input_ids.to(cuda), b.attention_mask.to(cuda),
                                         b.position_ids.to(cuda), 3);
    EXPECT_LT(relative_error(values, values_ref), 1e-5) << static_cast<int>(arch);
  }
}

TEST(CudaModel, SdpaEqualsEagerOnTheDevice) {
  REQUIRE_CUDA_DEVICE();
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  const Batch b = ragged_batch();
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      auto m = copy_to(tiny_model(arch), arch, HeadKind::LM, cuda, dtype);
      // Only the positions of real tokens: a left-padding query sees no key at all, and what a kernel returns
      // there (uniform weights, zeros) is never read.
      const auto real = b.attention_mask.to(cuda).to(torch::kBool);
      auto logits = [&](AttentionKernel kernel) {
        model::set_attention_kernel(m, kernel);
        auto all = m->forward(b.input_ids.to(cuda), b.attention_mask.to(cuda), b.position_ids.to(cuda));
        return all.index({real}).to(torch::kFloat32);
      };
      EXPECT_LT(relative_error(logits(AttentionKernel::Sdpa), logits(AttentionKernel::Eager)),
                dtype == torch::kFloat32 ? 1e-5 : 3e-2)
          << static_cast<int>(arch) << " " << dtype;
    }
  }
}

TEST(CudaRollout, GreedyDecodeInFp32GivesTheCpuTokens) {
  REQUIRE_CUDA_DEVICE();
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (Arch arch : {Arch::Llama, Arch::Qwen2, Arch::Qwen3}) {
    CausalLM cpu = tiny_model(arch);
    auto gpu = copy_to(cpu, arch, HeadKind::LM, cuda, torch::kFloat32);
    auto [prompts, mask] = rollout::left_pad({{3, 14, 15}, {9, 26, 5, 35, 8}, {7}}, 39);
    rollout::SamplingParams params;
    params.do_sample = false;
    params.n = 2;
    params.max_response_length = 12;
    params.eos_token_ids = {38};
    params.pad_token_id = 39;
    params.calculate_log_probs = true;
    auto on_cpu = rollout::generate(cpu, prompts, mask, params);
    setenv("VERL_CUDA_GRAPHS", "0", 1);
    auto eager = rollout::generate(gpu, prompts, mask, params);
    unsetenv("VERL_CUDA_GRAPHS");
    auto on_gpu = rollout::generate(gpu, prompts, mask, params);  // the decode step as a CUDA graph
    EXPECT_TRUE(torch::equal(eager.responses.cpu(), on_cpu.responses)) << "eager " << static_cast<int>(arch);
    EXPECT_LT(relative_error(eager.rollout_log_probs, on_cpu.rollout_log_probs), 1e-5) << "eager " << static_cast<int>(arch);
    if (!torch::equal(on_gpu.responses.cpu(), on_cpu.responses)) {
      std::cerr << "graph " << on_gpu.responses.cpu() << "\ncpu " << on_cpu.responses << "\n";
      std::cerr << "graph lp " << on_gpu.rollout_log_probs.cpu() << "\ncpu lp " << on_cpu.rollout_log_probs << "\n";
    }
    EXPECT_TRUE(torch::equal(on_gpu.responses.cpu(), on_cpu.responses)) << static_cast<int>(arch);
    EXPECT_TRUE(torch::equal(on_gpu.attention_mask.cpu(), on_cpu.attention_mask)) << static_cast<int>(arch);
    EXPECT_LT(relative_error(on_gpu.rollout_log_probs, on_cpu.rollout_log_probs), 1e-5) << static_cast<int>(arch);
  }
}

// rollout.gpu_memory_utilization on the device: a share that leaves room for 2.5 prompts' KV caches beyond what
// the process holds makes generate() run passes of 2 prompts, with the one-pass tokens (greedy).
TEST(CudaRollout, GpuMemoryUtilizationSplitsTheBatchIntoPasses) {
  REQUIRE_CUDA_DEVICE();
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  CausalLM cpu = tiny_model(Arch::Qwen2);
  auto gpu = copy_to(cpu, Arch::Qwen2, HeadKind::LM, cuda, torch::kFloat32);
  auto [prompts, mask] = rollout::left_pad({{3, 14, 15}, {9, 26, 5, 35, 8}, {7}, {1, 2}, {4, 4, 4}}, 39);
  rollout::SamplingParams params;
  params.do_sample = false;
  params.n = 2;
  params.max_response_length = 12;
  params.pad_token_id = 39;
  const auto whole = rollout::generate(gpu, prompts, mask, params);  // no share given: one pass
  const auto& c = gpu->config;
  const double per_prompt = 2.0 * (prompts.size(1) + 12) * c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim * 4;
  const double total = static_cast<double>(runtime::cuda_device_info(0).total_memory_bytes);
  params.gpu_memory_utilization = (static_cast<double>(runtime::cuda_memory_in_use(0)) + 2.5 * per_prompt) / total;
  const auto passes = rollout::generate(gpu, prompts, mask, params);
  EXPECT_TRUE(torch::equal(passes.responses.cpu(), whole.responses.cpu()));
  EXPECT_TRUE(torch::equal(passes.attention_mask.cpu(), whole.attention_mask.cpu()));
  EXPECT_EQ(passes.decode_steps, 3 * whole.decode_steps);  // 3 passes (2 + 2 + 1 prompts) of 11 steps each
  params.gpu_memory_utilization = static_cast<double>(runtime::cuda_memory_in_use(0)) / total;  // nothing left
  EXPECT_THROW(rollout::generate(gpu, prompts, mask, params), Error);
}

// The decode step as a CUDA graph (the default on a device) against the eager step (VERL_CUDA_GRAPHS=0), which
// compacts finished rows away: the same tokens when sampling with eos stops in fp32; bf16 runs and stays finite.
TEST(CudaRollout, GraphDecodeGivesTheEagerTokens) {
  REQUIRE_CUDA_DEVICE();
  torch::NoGradGuard no_grad;
  const torch::Device cuda(torch::kCUDA, 0);
  for (Arch arch : {Arch::Llama, Arch::Qwen3}) {
    for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      auto gpu = copy_to(tiny_model(arch), arch, HeadKind::LM, cuda, dtype);
      auto [prompts, mask] = rollout::left_pad({{3, 14, 15}, {9, 26, 5, 35, 8}, {7}, {2, 2, 30}}, 39);
      rollout::SamplingParams params;
      params.do_sample = true;
      params.temperature = 0.9;
      params.n = 3;
      params.max_response_length = 16;
      params.eos_token_ids = {38, 11};
      params.pad_token_id = 39;
      params.calculate_log_probs = true;
      params.seed = 7;
      setenv("VERL_CUDA_GRAPHS", "0", 1);
      auto eager = rollout::generate(gpu, prompts, mask, params);
      unsetenv("VERL_CUDA_GRAPHS");
      auto graph = rollout::generate(gpu, prompts, mask, params);
      EXPECT_LT(graph.response_mask.sum().item<int64_t>(), 12 * 16) << "no row stopped early: eos not exercised";
      EXPECT_TRUE(torch::isfinite(graph.rollout_log_probs).all().item<bool>());
      if (dtype != torch::kFloat32) continue;  // bf16 logits of a different batch shape may flip a sampled token
      EXPECT_TRUE(torch::equal(graph.responses.cpu(), eager.responses.cpu())) << static_cast<int>(arch);
      EXPECT_TRUE(torch::equal(graph.response_mask.cpu(), eager.response_mask.cpu())) << static_cast<int>(arch);
      EXPECT_LT(relative_error(graph.rollout_log_probs, eager.rollout_log_probs), 1e-5) << static_cast<int>(arch);
    }
  }
}

// One update_policy (two mini-batches of two micro-batches, clipping, entropy bonus, KL loss) on the device
// against the same update on the CPU: gradients where data-parallel averaging would run, and the metrics.
TEST(CudaActor, OnePpoUpdateMatchesTheCpu) {
  REQUIRE_CUDA_DEVICE();
  const std::string dir = make_tiny_model(make_temp_dir("cuda_actor") + "/model");
  auto cfg = tiny_ppo_config(dir, {"actor_rollout_ref.actor.entropy_coeff=0.01", "actor_rollout_ref.actor.use_kl_loss=true"})
                 ->actor_rollout_ref.actor;
  const auto batch = ragged_actor_batch();
  struct Result {
    std::vector<torch::Tensor> grads;
    nlohmann::json metrics;
  };
  auto update_on = [&](torch::Device device) {
    auto module = model::load_model(dir);
    module->to(device);
    auto params = module->parameters();
    auto opt = workers::build_optimizer(params, cfg.optim);
    workers::DataParallelPPOActor actor(cfg, module, opt.get());
    Result r;
    actor.gradient_all_reduce = [&r](const std::vector<torch::Tensor>& ps) {
      for (const auto& p : ps) {
        if (p.grad().defined()) r.grads.push_back(p.grad().to(torch::kCPU).clone());
      }
    };
    r.metrics = actor.update_policy(batch);
    return r;
  };
  const Result cpu = update_on(torch::kCPU), gpu = update_on(torch::Device(torch::kCUDA, 0));
  ASSERT_EQ(cpu.grads.size(), gpu.grads.size());
  double largest = 0, worst = 0;
  for (size_t i = 0; i < cpu.grads.size(); ++i) {
    largest = std::max(largest, cpu.grads[i].abs().max().item<double>());
    worst = std::max(worst, (gpu.grads[i] - cpu.grads[i]).abs().max().item<double>());
  }
  EXPECT_LT(worst, 1e-4 * std::max(1.0, largest));
  for (const char* key : {"actor/pg_loss", "actor/loss", "actor/grad_norm", "actor/entropy_loss", "actor/kl_loss"}) {
    ASSERT_TRUE(cpu.metrics.contains(key)) << key;
    for (size_t i = 0; i < cpu.metrics[key].size(); ++i) {
      const double want = cpu.metrics[key][i].get<double>(), got = gpu.metrics[key][i].get<double>();
      EXPECT_NEAR(got, want, 1e-4 * std::max(1.0, std::abs(want))) << key << " " << i;
    }
  }
}

}  // namespace
}  // namespace verl::test
