// ZeRO-3 with fsdp_config.mixed_precision.reduce_dtype=bf16 on 2 thread ranks: gradients are reduce-scattered in
// bf16. Both ranks run the same batch, so each rank's gradient is the same g and the bf16 mean of two bf16(g) is
// bf16(g) exactly: the shards' gradients must be the fp32 run's (which is g) rounded to bf16, fp32 again, and so
// differ from it.
#include <gtest/gtest.h>

#include "support/model_compare.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"

namespace verl::model {
namespace {

std::vector<torch::Tensor> shard_gradients(const CausalLM& whole, const test::ModelBatch& batch,
                                           torch::ScalarType reduce_dtype) {
  std::vector<std::vector<torch::Tensor>> per_rank(2);
  std::vector<CausalLM> copies;
  for (int r = 0; r < 2; ++r) {
    CausalLM m(whole->config, whole->head);
    torch::NoGradGuard no_grad;
    auto dst = m->named_parameters();
    for (const auto& item : whole->named_parameters()) dst[item.key()].copy_(item.value());
    copies.push_back(m);
  }
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM m = copies[static_cast<size_t>(comm->rank())];
    FullyShardedModel sharded(m, comm, nullptr, reduce_dtype);
    {
      RootGathered root(&sharded);
      test::weighted_log_prob_loss(m, batch).backward();
      root.reduce_gradients();
    }
    for (const auto& s : sharded.shards()) per_rank[static_cast<size_t>(comm->rank())].push_back(s.grad().clone());
  });
  std::vector<torch::Tensor> out = per_rank[0];
  out.insert(out.end(), per_rank[1].begin(), per_rank[1].end());
  return out;
}

TEST(FullyShardedReduceDtype, Bf16ReductionIsTheFp32GradientRoundedToBf16) {
  HFConfig c = test::tiny_config(Arch::Qwen2);
  c.initializer_range = 0.2;
  CausalLM whole(c, HeadKind::LM);
  init_weights(whole, 7, /*perturb=*/true);
  const auto batch = test::ragged_model_batch(c.vocab_size, 5);
  const auto fp32 = shard_gradients(whole, batch, torch::kFloat32);
  const auto bf16 = shard_gradients(whole, batch, torch::kBFloat16);
  ASSERT_EQ(fp32.size(), bf16.size());
  double off = 0;
  for (size_t i = 0; i < fp32.size(); ++i) {
    EXPECT_EQ(bf16[i].scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::equal(bf16[i], fp32[i].to(torch::kBFloat16).to(torch::kFloat32))) << "shard " << i;
    off = std::max(off, (bf16[i] - fp32[i]).abs().max().item<double>());
  }
  EXPECT_GT(off, 0.0);
}

}  // namespace
}  // namespace verl::model
