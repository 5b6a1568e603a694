// ZeRO-3 (model/fully_sharded_model.h) and megatron TP (model/tensor_parallel_model.h) on CUDA devices equal one
// rank holding the whole model on the device: 2 ranks, in fp64 (so the comparison shows the sharding, not
// rounding). With 2 visible GPUs rank r drives cuda:r, the collectives run over NCCL, and the forward outputs and
// the gradients are compared. With one GPU both ranks share cuda:0 over the thread communicator (NCCL refuses two
// ranks on one GPU) and only the forward is compared: LibTorch runs every backward of one device on one engine
// thread, so a collective inside one rank's backward (ZeRO-3's reduce-scatter hook, TP's all-reduce) would wait
// forever for the other rank's backward queued behind it (seen on an H200: both ranks timed out). In real runs
// each GPU is its own process. The test prints which case ran.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gpu/cuda_test.h"
#include "support/model_compare.h"
#include "support/tiny_model.h"
#include "verl/model/fully_sharded_model.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"
#include "verl/parallel/nccl_comm.h"
#include "verl/runtime/cuda_device.h"

namespace verl::model {
namespace {

using test::max_relative;
using Batch = test::ModelBatch;

// Runs body(comm, device) on 2 thread ranks: over NCCL on cuda:0 / cuda:1 when both exist, else both on cuda:0.
bool two_gpus() { return runtime::cuda_device_count() >= 2; }
torch::Device rank_device(int r) { return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(two_gpus() ? r : 0)); }

void on_two_device_ranks(const std::function<void(const std::shared_ptr<parallel::Comm>&, const torch::Device&)>& body) {
  const bool two_gpus = model::two_gpus();
  if (!two_gpus) std::cout << "[ sharding ] one GPU: forward only (gradients need 2 GPUs)\n";
  std::cout << "[ sharding ] 2 ranks on " << (two_gpus ? "cuda:0 and cuda:1 over NCCL" : "cuda:0, thread communicator")
            << "\n";
  auto hosts = parallel::thread_comms(2, 120.0);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        const torch::Device device = rank_device(r);
        auto comm = two_gpus ? parallel::nccl_comm(hosts[static_cast<size_t>(r)], device) : hosts[static_cast<size_t>(r)];
        body(comm, device);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

HFConfig tiny() {
  HFConfig c = test::tiny_config(Arch::Qwen2);
  c.num_hidden_layers = 3;
  c.head_dim = 8;
  c.initializer_range = 0.2;
  return c;
}

CausalLM whole_on(const HFConfig& c, const torch::Device& device) {
  CausalLM m(c, HeadKind::LM);
  init_weights(m, 3, /*perturb=*/true);
  m->to(device, torch::kFloat64);
  return m;
}

Batch batch_on(int64_t vocab, int seed, const torch::Device& device) {
  Batch b = test::ragged_model_batch(vocab, seed);
  b.input_ids = b.input_ids.to(device);
  b.attention_mask = b.attention_mask.to(device);
  b.position_ids = b.position_ids.to(device);
  b.responses = b.responses.to(device);
  return b;
}

TEST(CudaSharding, ZeroThreeOnTwoRanksEqualsTheWholeModelOnOneDevice) {
  REQUIRE_CUDA_DEVICE();
  const HFConfig c = tiny();
  const torch::Device cuda0(torch::kCUDA, 0);
  CausalLM whole = whole_on(c, cuda0);
  std::vector<Batch> batches = {batch_on(c.vocab_size, 11, cuda0), batch_on(c.vocab_size, 12, cuda0)};
  // Reference: the mean of the whole model's gradients on the two batches, and its log-probs on batch 0.
  std::map<std::string, torch::Tensor> mean_grads;
  for (const auto& b : batches) {
    whole->zero_grad();
    test::weighted_log_prob_loss(whole, b).backward();
    for (const auto& item : whole->named_parameters()) {
      auto g = item.value().grad().cpu() / 2;
      auto [it, inserted] = mean_grads.emplace(item.key(), g);
      if (!inserted) it->second += g;
    }
  }
  torch::Tensor lp_whole;
  {
    torch::NoGradGuard no_grad;
    const Batch& b = batches[0];
    lp_whole = response_log_probs(whole, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, false)
                   .log_probs.cpu();
  }
  // Each rank's copy and batches, made here: initialisation and batches draw from the global RNG.
  std::vector<CausalLM> copies;
  std::vector<Batch> first, own;
  for (int r = 0; r < 2; ++r) {
    const torch::Device device = rank_device(r);
    copies.push_back(whole_on(c, device));  // same seed: the same weights
    first.push_back(batch_on(c.vocab_size, 11, device));
    own.push_back(batch_on(c.vocab_size, 11 + r, device));
  }
  on_two_device_ranks([&](const std::shared_ptr<parallel::Comm>& comm, const torch::Device& device) {
    const auto r = static_cast<size_t>(comm->rank());
    CausalLM m = copies[r];
    FullyShardedModel sharded(m, comm);
    const Batch &b0 = first[r], &mine = own[r];
    {
      torch::NoGradGuard no_grad;
      RootGathered root(&sharded);
      auto lp = response_log_probs(m, b0.input_ids, b0.attention_mask, b0.position_ids, b0.responses, 0.7, false);
      EXPECT_TRUE(lp.log_probs.device() == device);
      EXPECT_LT(max_relative(lp.log_probs.cpu(), lp_whole), 1e-12);
    }
    if (!two_gpus()) return;  // backward collectives need one engine thread per rank (see the top)
    {
      RootGathered root(&sharded);
      test::weighted_log_prob_loss(m, mine).backward();
      root.reduce_gradients();
    }
    // The shards' gradients, gathered, against the reference flattened in FullyShardedModel's unit order (the root's
    // parameters, then each layer's).
    std::vector<std::vector<torch::Tensor>> parts(static_cast<size_t>(c.num_hidden_layers + 1));
    for (const auto& item : whole->named_parameters()) {
      size_t u = 0;
      if (item.key().rfind("model.layers.", 0) == 0) u = std::stoul(item.key().substr(13)) + 1;
      parts[u].push_back(mean_grads.at(item.key()).reshape({-1}));
    }
    for (size_t u = 0; u < sharded.shards().size(); ++u) {
      const torch::Tensor expected = torch::cat(parts[u]);
      ASSERT_TRUE(sharded.shards()[u].grad().defined()) << "unit " << u;
      EXPECT_TRUE(sharded.shards()[u].device() == device);
      torch::Tensor full = comm->all_gather(sharded.shards()[u].grad()).narrow(0, 0, expected.numel()).cpu();
      EXPECT_LT(max_relative(full, expected), 1e-9) << "unit " << u;
    }
  });
}

TEST(CudaSharding, TensorParallelOnTwoRanksEqualsTheWholeModelOnOneDevice) {
  REQUIRE_CUDA_DEVICE();
  const HFConfig c = tiny();
  const torch::Device cuda0(torch::kCUDA, 0);
  CausalLM whole = whole_on(c, cuda0);
  const Batch b = batch_on(c.vocab_size, 11, cuda0);
  auto logits_whole = whole->forward(b.input_ids, b.attention_mask, b.position_ids).detach().cpu();
  auto lp_whole = response_log_probs(whole, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true);
  whole->zero_grad();
  test::weighted_log_prob_loss(whole, b).backward();
  std::map<std::string, torch::Tensor> grads_whole;
  for (const auto& item : whole->named_parameters()) grads_whole[item.key()] = item.value().grad().cpu();

  std::vector<CausalLM> copies;
  std::vector<Batch> batches;
  for (int r = 0; r < 2; ++r) {
    copies.push_back(whole_on(c, rank_device(r)));
    batches.push_back(batch_on(c.vocab_size, 11, rank_device(r)));
  }
  on_two_device_ranks([&](const std::shared_ptr<parallel::Comm>& comm, const torch::Device& device) {
    const auto r = static_cast<size_t>(comm->rank());
    CausalLM part = shard_model(copies[r], TensorParallelGroup{comm});
    EXPECT_EQ(part->model->embed_tokens->weight.size(0), c.vocab_size / 2);
    EXPECT_TRUE(part->model->embed_tokens->weight.device() == device);
    const Batch& bb = batches[r];
    auto logits = part->forward(bb.input_ids, bb.attention_mask, bb.position_ids).detach().cpu();
    EXPECT_LT(max_relative(logits, logits_whole), 1e-10);
    auto lp = response_log_probs(part, bb.input_ids, bb.attention_mask, bb.position_ids, bb.responses, 0.7, true);
    EXPECT_LT(max_relative(lp.log_probs.cpu(), lp_whole.log_probs.cpu()), 1e-6);
    EXPECT_LT(max_relative(lp.entropy.cpu(), lp_whole.entropy.cpu()), 1e-6);
    if (!two_gpus()) return;  // backward collectives need one engine thread per rank (see the top)
    part->zero_grad();
    test::weighted_log_prob_loss(part, bb).backward();
    CausalLM grads(c, HeadKind::LM, TensorParallelGroup{comm});
    grads->to(device, torch::kFloat64);
    {
      torch::NoGradGuard no_grad;
      auto gp = grads->named_parameters();
      for (const auto& item : part->named_parameters()) gp[item.key()].copy_(item.value().grad());
    }
    for (const auto& [name, g] : gather_full_state(grads)) {
      EXPECT_LT(max_relative(g.cpu(), grads_whole.at(name)), 1e-6) << name;
    }
  });
}

}  // namespace
}  // namespace verl::model
