// ZeRO-3 (model/fully_sharded_model.h) on 2 and 3 thread ranks against the whole model: each rank runs its own
// batch; the shards' gradients, gathered, must be the mean of the whole model's gradients on those batches (a
// missing reduction, a sum instead of a mean or a misplaced run is off by O(1)); log-probs equal the whole model's;
// gather_all restores every parameter; the clip norm is the whole gradient's; shard files round-trip and merge
// into the whole model; the errors name the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/model_compare.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/fully_sharded_model.h"
#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"
#include "verl/workers/optimizer.h"

namespace verl::model {
namespace {

namespace fs = std::filesystem;

HFConfig fully_sharded_model_tiny(Arch arch) {
  HFConfig c = test::tiny_config(arch);
  c.num_hidden_layers = 3;
  c.head_dim = 8;
  c.initializer_range = 0.2;
  return c;
}

CausalLM make_whole(const HFConfig& c, HeadKind head = HeadKind::LM, uint64_t seed = 3) {
  CausalLM m(c, head);
  init_weights(m, seed, /*perturb=*/true);
  m->to(torch::kFloat64);  // fp64: the comparison shows the sharding, not fp32 rounding
  return m;
}

CausalLM copy_of(const CausalLM& whole) {
  CausalLM m(whole->config, whole->head);
  m->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  auto dst = m->named_parameters();
  for (const auto& item : whole->named_parameters()) dst[item.key()].copy_(item.value());
  return m;
}

using Batch = test::ModelBatch;
using test::max_relative;
// Made on the main thread (global RNG).
Batch ragged_batch(int64_t vocab, int seed) { return test::ragged_model_batch(vocab, seed); }

// Flattened per unit as FullyShardedModel lays it out: the root (every name outside model.layers), then each layer.
std::vector<torch::Tensor> flat_units(const std::vector<std::pair<std::string, torch::Tensor>>& named, int64_t layers) {
  std::vector<std::vector<torch::Tensor>> parts(static_cast<size_t>(layers + 1));
  for (const auto& [name, t] : named) {
    size_t u = 0;
    if (name.rfind("model.layers.", 0) == 0) u = std::stoul(name.substr(13)) + 1;
    parts[u].push_back(t.reshape({-1}));
  }
  std::vector<torch::Tensor> out;
  for (auto& p : parts) out.push_back(torch::cat(p));
  return out;
}

class FullyShardedModelTest : public ::testing::TestWithParam<std::tuple<Arch, bool, int>> {};

TEST_P(FullyShardedModelTest, ShardGradientsAreTheMeanOfTheWholeModelsOverTheRanksBatches) {
  auto [arch, tied, ranks] = GetParam();
  HFConfig c = fully_sharded_model_tiny(arch);
  c.tie_word_embeddings = tied;
  CausalLM whole = make_whole(c);
  std::vector<Batch> batches;
  for (int r = 0; r < ranks; ++r) batches.push_back(ragged_batch(c.vocab_size, 11 + r));

  // Reference: the whole model's gradient on each rank's batch, averaged; and its log-probs on rank 0's batch.
  std::vector<std::pair<std::string, torch::Tensor>> mean_grads;
  for (const auto& item : whole->named_parameters()) mean_grads.emplace_back(item.key(), torch::zeros_like(item.value()));
  for (const auto& b : batches) {
    whole->zero_grad();
    test::weighted_log_prob_loss(whole, b).backward();
    size_t k = 0;
    for (const auto& item : whole->named_parameters()) mean_grads[k++].second += item.value().grad() / ranks;
  }
  const auto expected = flat_units(mean_grads, c.num_hidden_layers);
  torch::Tensor lp_whole;
  {
    torch::NoGradGuard no_grad;
    lp_whole = response_log_probs(whole, batches[0].input_ids, batches[0].attention_mask, batches[0].position_ids,
                                  batches[0].responses, 0.7, false)
                   .log_probs;
  }
  std::vector<CausalLM> copies;
  for (int r = 0; r < ranks; ++r) copies.push_back(copy_of(whole));

  test::on_thread_ranks(ranks, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM m = copies[static_cast<size_t>(comm->rank())];
    FullyShardedModel sharded(m, comm);
    // At rest the module holds nothing; the shards hold 1/N (padded).
    EXPECT_EQ(m->model->layer_list[0]->mlp->up_proj->weight.numel(), 0);
    EXPECT_EQ(sharded.shards().size(), static_cast<size_t>(c.num_hidden_layers + 1));
    EXPECT_LE(sharded.shard_numel() * ranks, sharded.model_numel() + ranks * (c.num_hidden_layers + 1));

    {
      torch::NoGradGuard no_grad;
      RootGathered root(&sharded);
      const Batch& b = batches[0];
      auto lp = response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, false);
      EXPECT_LT(max_relative(lp.log_probs, lp_whole), 1e-12);
    }
    EXPECT_EQ(m->model->embed_tokens->weight.numel(), 0);  // released again

    {
      RootGathered root(&sharded);
      test::weighted_log_prob_loss(m, batches[static_cast<size_t>(comm->rank())]).backward();
      root.reduce_gradients();
    }
    for (size_t u = 0; u < sharded.shards().size(); ++u) {
      ASSERT_TRUE(sharded.shards()[u].grad().defined()) << "unit " << u;
      torch::Tensor full = comm->all_gather(sharded.shards()[u].grad()).narrow(0, 0, expected[u].numel());
      EXPECT_LT(max_relative(full, expected[u]), 1e-9) << "unit " << u;
    }

    // The clip norm is the norm of the whole (mean) gradient (per-tensor norms are taken in fp32, as torch does).
    double whole_norm = 0;
    for (const auto& e : expected) whole_norm += e.pow(2).sum().item<double>();
    workers::GradientPlacement placement;
    placement.sharded = &sharded.shard_group();
    const double norm = workers::clip_grad_norm(sharded.shards(), 1e9, placement);
    EXPECT_NEAR(norm, std::sqrt(whole_norm), 1e-6 * std::sqrt(whole_norm));

    // gather_all: every parameter whole and equal to the original.
    {
      auto all = sharded.gather_all();
      for (const auto& item : whole->named_parameters()) {
        EXPECT_TRUE(torch::equal(m->named_parameters()[item.key()], item.value())) << item.key();
      }
    }
    EXPECT_EQ(m->named_parameters()["model.norm.weight"].numel(), 0);
  });
}

INSTANTIATE_TEST_SUITE_P(Families, FullyShardedModelTest,
                         ::testing::Values(std::make_tuple(Arch::Qwen2, false, 2), std::make_tuple(Arch::Qwen3, true, 3),
                                           std::make_tuple(Arch::Llama, false, 3)));

TEST(FullyShardedModel, ValueHeadGradientsReachTheShards) {
  HFConfig c = fully_sharded_model_tiny(Arch::Qwen2);
  CausalLM whole = make_whole(c, HeadKind::Value);
  const Batch b = ragged_batch(c.vocab_size, 5);
  whole->zero_grad();
  response_values(whole, b.input_ids, b.attention_mask, b.position_ids, 4).sum().backward();
  std::vector<std::pair<std::string, torch::Tensor>> grads;
  for (const auto& item : whole->named_parameters()) grads.emplace_back(item.key(), item.value().grad());
  const auto expected = flat_units(grads, c.num_hidden_layers);
  std::vector<CausalLM> copies = {copy_of(whole), copy_of(whole)};
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM m = copies[static_cast<size_t>(comm->rank())];
    FullyShardedModel sharded(m, comm);
    RootGathered root(&sharded);
    response_values(m, b.input_ids, b.attention_mask, b.position_ids, 4).sum().backward();
    root.reduce_gradients();
    for (size_t u = 0; u < sharded.shards().size(); ++u) {
      torch::Tensor full = comm->all_gather(sharded.shards()[u].grad()).narrow(0, 0, expected[u].numel());
      EXPECT_LT(max_relative(full, expected[u]), 1e-9) << "unit " << u;
    }
  });
}

TEST(FullyShardedModel, ShardFilesRoundTripAndMergeIntoTheWholeModel) {
  HFConfig c = fully_sharded_model_tiny(Arch::Qwen2);
  CausalLM whole = make_whole(c);
  const fs::path dir = fs::temp_directory_path() / ("verl_zero3_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto file = [&](int r) { return (dir / ("rank_" + std::to_string(r) + ".safetensors")).string(); };
  std::vector<CausalLM> saved = {copy_of(whole), copy_of(whole), copy_of(whole)};
  std::vector<CausalLM> other = {make_whole(c, HeadKind::LM, 9), make_whole(c, HeadKind::LM, 9),
                                 make_whole(c, HeadKind::LM, 9)};
  test::on_thread_ranks(3, [&](const std::shared_ptr<parallel::Comm>& comm) {
    FullyShardedModel a(saved[static_cast<size_t>(comm->rank())], comm);
    a.save_shard_state(file(comm->rank()));
    comm->barrier();
    EXPECT_TRUE(is_shard_state_file(file(comm->rank())));
    // Loaded into a model that started elsewhere: the gathered parameters are the saved ones, bit for bit.
    CausalLM m = other[static_cast<size_t>(comm->rank())];
    FullyShardedModel b(m, comm);
    b.load_shard_state(file(comm->rank()));
    auto all = b.gather_all();
    for (const auto& item : whole->named_parameters()) {
      EXPECT_TRUE(torch::equal(m->named_parameters()[item.key()], item.value())) << item.key();
    }
  });
  CausalLM merged = make_whole(c, HeadKind::LM, 9);
  load_merged_shard_files(merged, {file(0), file(1), file(2)});
  for (const auto& item : whole->named_parameters()) {
    EXPECT_TRUE(torch::equal(merged->named_parameters()[item.key()], item.value())) << item.key();
  }
  // Two of the three files cannot make the model whole.
  try {
    load_merged_shard_files(merged, {file(0), file(1)});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank files hold"), std::string::npos) << e.what();
  }
  // A file from a group of 3 on a group of 2 ranks: an error naming the file.
  std::vector<CausalLM> two = {copy_of(whole), copy_of(whole)};
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    FullyShardedModel s(two[static_cast<size_t>(comm->rank())], comm);
    try {
      s.load_shard_state(file(comm->rank()));
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("holds shards over 3 ranks; this run shards over 2"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(file(comm->rank())), std::string::npos) << e.what();
    }
  });
  fs::remove_all(dir);
}

}  // namespace
}  // namespace verl::model
