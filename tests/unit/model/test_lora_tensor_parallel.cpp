// LoRA under the megatron strategy (model/lora.h on model/tensor_parallel_model.h's slices), 2 thread ranks against
// the whole model with the same adapters (fp64, every projection targeted, B non-zero so A's gradients are too):
//   - add_lora on the slices draws the whole model's A and keeps this rank's part: gathered, the fresh adapters are
//     the 1-rank ones exactly; q/k/v/gate/up keep A whole and B by rows, o/down A by columns and B whole;
//   - logits, log-probs and every adapter gradient (gathered) equal the whole model's; the clipped norm is its norm;
//   - the adapters off (the reference), merged (the rollout) and gather_full_model give the whole model's numbers;
//   - the whole adapter saved by the 1-rank model loads into the slices (load_lora_state, PEFT's folder);
//   - the critic's LoRA (value_lora.h): the whole value model's checkpoint state and PEFT TOKEN_CLS folder load into
//     the slices with its values, and value_lora_full_state gathers the slices back to it exactly.
// The checks were seen to fail with the code perturbed: A's gradient not summed over the TP group (lora.cpp's
// copy_to_tp_region dropped), and every rank given rank 0's slice of a whole adapter (tensor_parallel_part); the
// value model's test with value_lora.cpp's copy_exactly giving every rank rank 0's slice, and with
// value_lora_full_state not gathering the slices.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>

#include "support/model_compare.h"
#include "support/peft_token_cls.h"
#include "support/run_command.h"
#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/model/lora.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"
#include "verl/model/value_lora.h"
#include "verl/workers/optimizer.h"

namespace verl::model {
namespace {

using test::max_relative;

HFConfig lora_tensor_parallel_tiny() {
  HFConfig c = test::tiny_config(Arch::Llama);
  c.initializer_range = 0.2;
  c.attention_bias = true;  // o_proj's bias: added once after the sum, beside the side path
  return c;
}

LoraSpec lora_tensor_parallel_spec() {
  LoraSpec s;
  s.rank = 4;
  s.alpha = 8;
  return s;
}

// fp64 (the comparison then shows the split, not fp32 rounding), with fresh adapters (seed 5).
CausalLM whole_with_adapters() {
  CausalLM m(lora_tensor_parallel_tiny());
  init_weights(m, 3, /*perturb_norms_and_biases=*/true);
  m->to(torch::kFloat64);
  add_lora(m, lora_tensor_parallel_spec(), /*seed=*/5);
  return m;
}

void lora_tensor_parallel_randomize_b(CausalLM& m) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(9);
  for (auto& [name, t] : lora_named_parameters(m)) {
    if (name.find("lora_B") != std::string::npos) {
      t.copy_(torch::empty(t.sizes(), torch::kFloat64).normal_(0.0, 0.3, gen));
    }
  }
}

test::ModelBatch lora_tensor_parallel_ragged_batch(int64_t vocab) {
  torch::manual_seed(11);
  test::ModelBatch b;
  b.input_ids = torch::randint(0, vocab - 2, {3, 9}, torch::kInt64);
  b.attention_mask = torch::ones({3, 9}, torch::kInt64);
  b.attention_mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
  b.attention_mask.index_put_({2, torch::indexing::Slice(0, 4)}, 0);
  b.position_ids = position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, 5, 4);
  return b;
}

torch::Tensor logits(CausalLM& m, const test::ModelBatch& b) {
  torch::NoGradGuard no_grad;
  return m->forward(b.input_ids, b.attention_mask, b.position_ids);
}

TEST(LoraTensorParallel, FreshAdaptersOnSlicesAreTheWholeModelsSliced) {
  CausalLM whole = whole_with_adapters();
  std::map<std::string, torch::Tensor> expected;
  for (auto& [name, t] : lora_named_parameters(whole)) expected[name] = t.detach().clone();
  CausalLM base(lora_tensor_parallel_tiny());
  init_weights(base, 3, true);
  base->to(torch::kFloat64);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    CausalLM part = shard_model(base, TensorParallelGroup{comm});
    add_lora(part, lora_tensor_parallel_spec(), /*seed=*/5);
    const auto& attn = part->model->layer_list[0]->self_attn;
    const auto& mlp = part->model->layer_list[0]->mlp;
    auto factor = [](const torch::nn::Linear& proj, const char* name) {
      for (const auto& item : proj->named_parameters()) {
        if (item.key() == std::string(name) + ".weight") return item.value();
      }
      return torch::Tensor();
    };
    // q (column-parallel, 2 of 4 heads of 8): A [4, 32] whole, B [16, 4]; o (row-parallel): A [4, 16], B [32, 4].
    EXPECT_EQ(factor(attn->q_proj, "lora_A").sizes(), (std::vector<int64_t>{4, 32}));
    EXPECT_EQ(factor(attn->q_proj, "lora_B").sizes(), (std::vector<int64_t>{16, 4}));
    EXPECT_EQ(factor(attn->o_proj, "lora_A").sizes(), (std::vector<int64_t>{4, 16}));
    EXPECT_EQ(factor(attn->o_proj, "lora_B").sizes(), (std::vector<int64_t>{32, 4}));
    EXPECT_EQ(factor(mlp->down_proj, "lora_A").sizes(), (std::vector<int64_t>{4, 24}));
    const auto gathered = lora_full_state(part);
    EXPECT_EQ(gathered.size(), expected.size());
    for (const auto& [name, t] : gathered) {
      ASSERT_TRUE(expected.count(name)) << name;
      EXPECT_TRUE(torch::equal(t, expected.at(name))) << name;
    }
  });
}

TEST(LoraTensorParallel, TwoRanksGiveTheWholeModelsLogitsGradientsAndNorm) {
  CausalLM whole = whole_with_adapters();
  lora_tensor_parallel_randomize_b(whole);
  const test::ModelBatch b = lora_tensor_parallel_ragged_batch(whole->config.vocab_size);
  const auto logits_whole = logits(whole, b);
  torch::Tensor logits_base, logits_merged;
  {
    AdapterDisabled off(whole);
    logits_base = logits(whole, b);
  }
  {
    MergedAdapter merged(whole);
    logits_merged = logits(whole, b);
  }
  EXPECT_GT(max_relative(logits_base, logits_whole), 1e-2);  // the adapters matter
  whole->zero_grad();
  test::weighted_log_prob_loss(whole, b).backward();
  std::map<std::string, torch::Tensor> grads_whole;
  for (auto& [name, t] : lora_named_parameters(whole)) grads_whole[name] = t.grad().clone();
  std::vector<torch::Tensor> whole_adapters = lora_parameters(whole);
  const double norm_whole = workers::clip_grad_norm(whole_adapters, 1e-3);

  const std::string file = test::make_temp_dir("lora_tp_state") + "/adapters.safetensors";
  const std::string peft_dir = test::make_temp_dir("lora_tp_peft");
  save_lora_state(whole, file);
  save_peft_adapter(whole, peft_dir, "base");
  CausalLM base(lora_tensor_parallel_tiny());
  init_weights(base, 3, true);
  base->to(torch::kFloat64);

  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    const TensorParallelGroup tp{comm};
    CausalLM part = shard_model(base, tp);
    add_lora(part, lora_tensor_parallel_spec(), /*seed=*/0);
    load_lora_state(part, file);  // the whole file, sliced
    EXPECT_LT(max_relative(logits(part, b), logits_whole), 1e-10);
    {
      AdapterDisabled off(part);
      EXPECT_LT(max_relative(logits(part, b), logits_base), 1e-10);
    }
    {
      MergedAdapter merged(part);
      EXPECT_LT(max_relative(logits(part, b), logits_merged), 1e-10);
      // The HF save of a LoRA model under TP: the whole model, merged, with the adapters along.
      CausalLM gathered = gather_full_model(part);
      EXPECT_LT(max_relative(logits(gathered, b), logits_merged), 1e-10);
    }
    CausalLM gathered = gather_full_model(part);
    EXPECT_LT(max_relative(logits(gathered, b), logits_whole), 1e-10);

    part->zero_grad();
    test::weighted_log_prob_loss(part, b).backward();
    for (auto& [name, t] : lora_named_parameters(part)) {
      const auto g = gather_parameter(name, t.grad(), tp);
      EXPECT_LT(max_relative(g, grads_whole.at(name)), 1e-6) << name;
    }
    // Only the adapters train; the clipped norm counts the whole factors once and sums the slices' squares.
    std::vector<torch::Tensor> trained;
    std::vector<bool> is_slice;
    const auto all = part->parameters();
    const auto slice_flags = parameter_is_slice(part);
    for (size_t i = 0; i < all.size(); ++i) {
      if (!all[i].requires_grad()) continue;
      trained.push_back(all[i]);
      is_slice.push_back(slice_flags[i]);
    }
    EXPECT_EQ(trained.size(), grads_whole.size());
    workers::GradientPlacement placement;
    placement.tensor_parallel = comm.get();
    placement.is_slice = is_slice;
    EXPECT_NEAR(workers::clip_grad_norm(trained, 1e-3, placement), norm_whole, 1e-6 * norm_whole);

    // PEFT's folder of the whole adapters loads into fresh slices with the same numbers.
    CausalLM fresh = shard_model(base, tp);
    load_peft_adapter(fresh, peft_dir);
    EXPECT_LT(max_relative(logits(fresh, b), logits_whole), 1e-10);
  });
}

TEST(LoraTensorParallel, ValueModelStateLoadsIntoSlicesAndGathersWhole) {
  CausalLM whole(lora_tensor_parallel_tiny(), HeadKind::Value);
  init_weights(whole, 3, /*perturb_norms_and_biases=*/true);
  whole->to(torch::kFloat64);
  add_value_lora(whole, lora_tensor_parallel_spec(), /*seed=*/5);
  lora_tensor_parallel_randomize_b(whole);
  {
    // A value head unlike the base's: a checkpoint without it would give other values.
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(13);
    whole->score->weight.copy_(torch::empty(whole->score->weight.sizes(), torch::kFloat64).normal_(0.0, 0.3, gen));
  }
  const test::ModelBatch b = lora_tensor_parallel_ragged_batch(whole->config.vocab_size);
  auto values = [&](CausalLM& m) {
    torch::NoGradGuard no_grad;
    return response_values(m, b.input_ids, b.attention_mask, b.position_ids, b.responses.size(1));
  };
  const auto values_whole = values(whole);
  const NamedTensors expected = value_lora_full_state(whole);
  const std::string dir = test::make_temp_dir("value_lora_tp");
  save_value_lora_state(whole, dir + "/state.safetensors", "base");
  test::write_token_cls_adapter(expected, dir + "/peft", 4, 8);  // PEFT's TOKEN_CLS folder of the same state
  CausalLM base(lora_tensor_parallel_tiny(), HeadKind::Value);
  init_weights(base, 3, true);
  base->to(torch::kFloat64);
  EXPECT_GT(max_relative(values(base), values_whole), 1e-2);  // the adapters and the head matter

  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    const TensorParallelGroup tp{comm};
    CausalLM part = shard_model(base, tp);
    add_value_lora(part, lora_tensor_parallel_spec(), /*seed=*/0);
    load_value_lora_state(part, dir + "/state.safetensors");  // the whole file, sliced
    EXPECT_LT(max_relative(values(part), values_whole), 1e-10);
    const NamedTensors gathered = value_lora_full_state(part);
    ASSERT_EQ(gathered.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(gathered[i].first, expected[i].first);
      EXPECT_TRUE(torch::equal(gathered[i].second, expected[i].second)) << expected[i].first;
    }
    // Saving slices through the model form would write a rank's part: refused, naming the gather.
    std::string error;
    try {
      save_value_lora_state(part, dir + "/refused.safetensors", "base");
    } catch (const std::exception& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("value_lora_full_state"), std::string::npos) << error;

    CausalLM fresh = shard_model(base, tp);
    load_peft_value_adapter(fresh, dir + "/peft");
    EXPECT_LT(max_relative(values(fresh), values_whole), 1e-10);
  });
}

}  // namespace
}  // namespace verl::model
