// The megatron strategy's model: a tiny model of each family sliced over 2 thread ranks (and 4 for the split
// bookkeeping) against the whole model: logits, response log-probs and entropy, every parameter's gradient
// (gathered from the slices), the clipped-gradient norm, greedy generation token for token, the slice and
// gather round trip, and the errors when the config does not split.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/model_compare.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"
#include "verl/rollout/generator.h"
#include "verl/workers/optimizer.h"

namespace verl::model {
namespace {

HFConfig tensor_parallel_model_tiny(Arch arch) {
  HFConfig c = test::tiny_config(arch);
  c.initializer_range = 0.2;
  if (arch == Arch::Llama) {
    c.attention_bias = true;  // o_proj gets a bias: whole, added once after the sum
    c.mlp_bias = true;
  }
  return c;
}

CausalLM tensor_parallel_model_make_whole(const HFConfig& c, HeadKind head = HeadKind::LM) {
  CausalLM m(c, head);
  init_weights(m, 3, /*perturb=*/true);
  m->to(torch::kFloat64);  // fp64: the comparison then shows the split, not fp32 rounding
  return m;
}

// A ragged left-padded batch: P = 5 prompt positions, R = 4 responses.
using Batch = test::ModelBatch;
using test::max_relative;
Batch tensor_parallel_model_ragged_batch(int64_t vocab) {
  torch::manual_seed(11);
  Batch b;
  b.input_ids = torch::randint(0, vocab - 2, {3, 9}, torch::kInt64);
  b.attention_mask = torch::ones({3, 9}, torch::kInt64);
  b.attention_mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
  b.attention_mask.index_put_({2, torch::indexing::Slice(0, 4)}, 0);
  b.attention_mask.index_put_({0, torch::indexing::Slice(7, 9)}, 0);  // a response cut short by padding
  b.position_ids = position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, 5, 4);
  return b;
}

// The test loss (test::weighted_log_prob_loss) is the same on every rank. The model runs in fp64, so the logits
// match to 1e-10; log-probs are computed in fp32 as verl does, so they and the gradients match to fp32 rounding (a
// wrong slice or a missing reduction is off by O(1)).

class TensorParallelModel : public ::testing::TestWithParam<std::tuple<Arch, bool>> {};

TEST_P(TensorParallelModel, TwoRanksGiveTheWholeModelsLogitsLogProbsAndGradients) {
  auto [arch, tied] = GetParam();
  HFConfig c = tensor_parallel_model_tiny(arch);
  c.tie_word_embeddings = tied;
  CausalLM whole = tensor_parallel_model_make_whole(c);
  const Batch b = tensor_parallel_model_ragged_batch(c.vocab_size);
  // Padded, and packed (use_remove_padding: the slices compute the real tokens only, the LM head's vocabulary-
  // parallel log-probs only the real response tokens).
  for (bool remove_padding : {false, true}) {
    SCOPED_TRACE(remove_padding ? "remove_padding" : "padded");
    whole->remove_padding = remove_padding;  // shard_model copies it to the slices

    auto logits_whole = whole->forward(b.input_ids, b.attention_mask, b.position_ids).detach();
    auto lp_whole = response_log_probs(whole, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true);
    // forward_kl_topk's reads: the top-k anywhere in the vocabulary, the log-probs at the teacher's tokens.
    TopKQuery query;
    query.top_k = 3;
    query.gather_ids =
        (b.responses.unsqueeze(-1) + torch::tensor(std::vector<int64_t>{0, 7, c.vocab_size / 2 + 1})) % c.vocab_size;
    const auto top_k_loss = [&](CausalLM& m) {
      const auto out =
          response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, false, false, query);
      return std::pair{out.top_k, (out.top_k.gathered_log_probs.to(torch::kFloat64) * 0.25).sum()};
    };
    whole->zero_grad();
    const auto whole_top_k = top_k_loss(whole);
    (test::weighted_log_prob_loss(whole, b) + whole_top_k.second).backward();
    std::map<std::string, torch::Tensor> grads_whole;
    for (const auto& item : whole->named_parameters()) grads_whole[item.key()] = item.value().grad().clone();

    test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
      CausalLM part = shard_model(whole, TensorParallelGroup{comm});
      // The slices really are slices: q_proj holds 2 of the 4 heads, the vocabulary half.
      EXPECT_EQ(part->model->layer_list[0]->self_attn->q_proj->weight.size(0), 2 * c.head_dim);
      EXPECT_EQ(part->model->embed_tokens->weight.size(0), c.vocab_size / 2);

      auto logits = part->forward(b.input_ids, b.attention_mask, b.position_ids).detach();
      EXPECT_LT(max_relative(logits, logits_whole), 1e-10);
      auto lp = response_log_probs(part, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, true);
      // Log-probs are taken in fp32 (verl's convention), on slices in another order: fp32 rounding, ~1e-7.
      EXPECT_LT(max_relative(lp.log_probs, lp_whole.log_probs), 1e-6);
      EXPECT_LT(max_relative(lp.entropy, lp_whole.entropy), 1e-6);

      part->zero_grad();
      const auto part_top_k = top_k_loss(part);
      const TopKLogProbs& got = part_top_k.first;
      const TopKLogProbs& want = whole_top_k.first;
      EXPECT_LT(max_relative(got.gathered_log_probs.detach(), want.gathered_log_probs.detach()), 1e-6);
      EXPECT_LT(max_relative(got.top_k_log_probs, want.top_k_log_probs), 1e-6);
      EXPECT_TRUE(torch::equal(got.top_k_ids, want.top_k_ids));
      (test::weighted_log_prob_loss(part, b) + part_top_k.second).backward();
      // Gradients gathered from the slices (gather_full_state of a model holding them) equal the whole model's.
      CausalLM grads(c, HeadKind::LM, TensorParallelGroup{comm});
      grads->to(torch::kFloat64);
      {
        torch::NoGradGuard no_grad;
        auto gp = grads->named_parameters();
        for (const auto& item : part->named_parameters()) gp[item.key()].copy_(item.value().grad());
      }
      for (const auto& [name, g] : gather_full_state(grads)) {
        EXPECT_LT(max_relative(g, grads_whole.at(name)), 1e-6) << name;
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Families, TensorParallelModel,
                         ::testing::Values(std::make_tuple(Arch::Qwen2, false), std::make_tuple(Arch::Qwen3, true),
                                           std::make_tuple(Arch::Llama, false)));

TEST(TensorParallelModelTest, ValueHeadTrunkGivesTheWholeValues) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Qwen2);
  CausalLM whole = tensor_parallel_model_make_whole(c, HeadKind::Value);
  whole->remove_padding = true;  // packed, as the critic runs by default
  const Batch b = tensor_parallel_model_ragged_batch(c.vocab_size);
  auto values_whole = response_values(whole, b.input_ids, b.attention_mask, b.position_ids, 4);
  whole->zero_grad();
  values_whole.sum().backward();
  const auto score_grad = whole->score->weight.grad().clone();
  const auto q_grad = whole->model->layer_list[1]->self_attn->q_proj->weight.grad().clone();
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM part = shard_model(whole, TensorParallelGroup{comm});
    auto values = response_values(part, b.input_ids, b.attention_mask, b.position_ids, 4);
    EXPECT_LT(max_relative(values.detach(), values_whole.detach()), 1e-10);
    part->zero_grad();
    values.sum().backward();
    EXPECT_LT(max_relative(part->score->weight.grad(), score_grad), 1e-10);
    const int64_t rows = q_grad.size(0) / 2;
    EXPECT_LT(max_relative(part->model->layer_list[1]->self_attn->q_proj->weight.grad(),
                           q_grad.narrow(0, comm->rank() * rows, rows)),
              1e-9);
  });
}

// Megatron's sequence parallelism keeps only this rank's chunk of the tokens between the tensor-parallel regions: a
// decoder layer takes the chunk (5 of 9 tokens, the last rank's padded) and gives the whole layer's output there.
TEST(TensorParallelModelTest, SequenceParallelLayerTakesAndGivesThisRanksTokenChunk) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Llama);  // with o_proj's and down_proj's biases
  CausalLM whole = tensor_parallel_model_make_whole(c);
  const int64_t B = 2, T = 9, chunk = 5;
  torch::manual_seed(12);
  const auto x = torch::randn({B, T, c.hidden_size}, torch::kFloat64);
  const auto cos = torch::randn({B, T, c.head_dim}, torch::kFloat64), sin = torch::randn_like(cos);
  const auto causal = torch::ones({T, T}, torch::kBool).triu(1);
  const auto mask = torch::zeros({B, 1, 1, T, T}, torch::kFloat64).masked_fill(causal, -1e30);
  const auto want = whole->model->layer_list[0]->forward(x, cos, sin, mask, nullptr, 0).detach();
  const auto padded_want = torch::cat({want, torch::zeros({B, 2 * chunk - T, c.hidden_size}, torch::kFloat64)}, 1);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM part = shard_model(whole, TensorParallelGroup{comm});
    set_megatron_sequence_parallel(part, true);
    auto x_chunk = torch::cat({x, torch::zeros({B, 2 * chunk - T, c.hidden_size}, torch::kFloat64)}, 1)
                       .narrow(1, comm->rank() * chunk, chunk);
    const auto got = part->model->layer_list[0]->forward(x_chunk, cos, sin, mask, nullptr, 0).detach();
    ASSERT_EQ(got.sizes(), torch::IntArrayRef({B, chunk, c.hidden_size}));
    // The padding rows of the last chunk carry the biases, which the gather at the end drops.
    const int64_t real = comm->rank() == 0 ? chunk : T - chunk;
    EXPECT_LT(max_relative(got.narrow(1, 0, real), padded_want.narrow(1, comm->rank() * chunk, real)), 1e-10);
  });
}

TEST(TensorParallelModelTest, ClippedNormIsTheWholeModelsNorm) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Qwen3);
  CausalLM whole = tensor_parallel_model_make_whole(c);
  const Batch b = tensor_parallel_model_ragged_batch(c.vocab_size);
  whole->zero_grad();
  test::weighted_log_prob_loss(whole, b).backward();
  std::vector<torch::Tensor> params = whole->parameters();
  const double norm_whole = workers::clip_grad_norm(params, 1e-3);
  const auto clipped_embed = whole->model->embed_tokens->weight.grad().clone();
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM part = shard_model(whole, TensorParallelGroup{comm});
    part->zero_grad();
    test::weighted_log_prob_loss(part, b).backward();
    std::vector<torch::Tensor> part_params = part->parameters();
    workers::GradientPlacement placement;
    placement.tensor_parallel = comm.get();
    placement.is_slice = parameter_is_slice(part);
    const double norm = workers::clip_grad_norm(part_params, 1e-3, placement);
    EXPECT_NEAR(norm, norm_whole, 1e-6 * norm_whole);
    const int64_t rows = c.vocab_size / 2;
    EXPECT_LT(max_relative(part->model->embed_tokens->weight.grad(), clipped_embed.narrow(0, comm->rank() * rows, rows)),
              1e-6);
  });
}

TEST(TensorParallelModelTest, GreedyGenerationGivesTheWholeModelsTokens) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Qwen2);
  CausalLM whole(c);
  init_weights(whole, 5, true);  // fp32, as the rollout runs
  whole->eval();
  const Batch b = tensor_parallel_model_ragged_batch(c.vocab_size);
  auto prompts = b.input_ids.narrow(1, 0, 5).clone();
  auto prompt_mask = torch::ones({3, 5}, torch::kInt64);
  prompt_mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
  prompt_mask.index_put_({2, torch::indexing::Slice(0, 4)}, 0);
  rollout::SamplingParams params;
  params.do_sample = false;
  params.max_response_length = 12;
  params.eos_token_ids = {38};
  params.pad_token_id = 39;
  params.calculate_log_probs = true;
  torch::NoGradGuard no_grad;
  auto expected = rollout::generate(whole, prompts, prompt_mask, params);
  // Sampled generation: every rank of the group draws the same tokens from the same seed.
  rollout::SamplingParams sampled = params;
  sampled.do_sample = true;
  sampled.seed = 77;
  std::vector<torch::Tensor> sampled_tokens(2);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    torch::NoGradGuard no_grad_here;
    CausalLM part = shard_model(whole, TensorParallelGroup{comm});
    auto out = rollout::generate(part, prompts, prompt_mask, params);
    EXPECT_TRUE(torch::equal(out.responses, expected.responses));
    EXPECT_TRUE(torch::equal(out.response_mask, expected.response_mask));
    EXPECT_LT(max_relative(out.rollout_log_probs, expected.rollout_log_probs), 1e-5);
    sampled_tokens[static_cast<size_t>(comm->rank())] = rollout::generate(part, prompts, prompt_mask, sampled).responses;
  });
  EXPECT_TRUE(torch::equal(sampled_tokens[0], sampled_tokens[1]));
}

// TP ranks that sample differently (here: different seeds) would drift apart; generation stops at the first step
// with one error on every rank instead.
TEST(TensorParallelModelTest, TensorParallelRanksThatChooseDifferentTokensAreAnError) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Qwen2);
  CausalLM whole(c);
  init_weights(whole, 5, true);
  whole->eval();
  const Batch b = tensor_parallel_model_ragged_batch(c.vocab_size);
  auto prompts = b.input_ids.narrow(1, 0, 5).clone();
  auto prompt_mask = torch::ones({3, 5}, torch::kInt64);
  std::vector<std::string> errors(2);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    torch::NoGradGuard no_grad;
    CausalLM part = shard_model(whole, TensorParallelGroup{comm});
    rollout::SamplingParams params;
    params.max_response_length = 8;
    params.pad_token_id = 39;
    params.seed = 1000 + static_cast<uint64_t>(comm->rank());
    try {
      rollout::generate(part, prompts, prompt_mask, params);
    } catch (const Error& e) {
      errors[static_cast<size_t>(comm->rank())] = e.what();
    }
  });
  for (const auto& e : errors) EXPECT_NE(e.find("chose different tokens at generation step 0"), std::string::npos) << e;
}

TEST(TensorParallelModelTest, SliceThenGatherIsBitExactAndSplitsAreHfNames) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Llama);
  CausalLM whole = tensor_parallel_model_make_whole(c);
  test::on_thread_ranks(4, [&](const std::shared_ptr<parallel::Comm>& comm) {
    // 4 ranks: 1 query head and half a KV head each would not split; use a config with 4 KV heads.
    HFConfig c4 = c;
    c4.num_key_value_heads = 4;
    CausalLM w4 = tensor_parallel_model_make_whole(c4);
    CausalLM part = shard_model(w4, TensorParallelGroup{comm});
    CausalLM back = gather_full_model(part);
    for (const auto& item : w4->named_parameters()) {
      EXPECT_TRUE(torch::equal(back->named_parameters()[item.key()], item.value())) << item.key();
    }
  });
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.self_attn.k_proj.bias"), 0);
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.self_attn.o_proj.weight"), 1);
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.self_attn.o_proj.bias"), -1);
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.mlp.down_proj.weight"), 1);
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.mlp.up_proj.bias"), 0);
  EXPECT_EQ(tensor_parallel_dim("model.layers.3.self_attn.q_norm.weight"), -1);
  EXPECT_EQ(tensor_parallel_dim("lm_head.weight"), 0);
  EXPECT_EQ(tensor_parallel_dim("model.embed_tokens.weight"), 0);
  EXPECT_EQ(tensor_parallel_dim("score.weight"), -1);
}

TEST(TensorParallelModelTest, ConfigsThatDoNotSplitAreErrorsNamingTheField) {
  HFConfig c = tensor_parallel_model_tiny(Arch::Qwen2);
  c.num_key_value_heads = 1;
  c.num_attention_heads = 3;
  c.head_dim = 8;
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    try {
      CausalLM m(c, HeadKind::LM, TensorParallelGroup{comm});
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("num_attention_heads (3)"), std::string::npos) << e.what();
    }
    HFConfig kv = tensor_parallel_model_tiny(Arch::Qwen2);
    kv.num_key_value_heads = 1;
    try {
      CausalLM m(kv, HeadKind::LM, TensorParallelGroup{comm});
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("num_key_value_heads (1)"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace verl::model
