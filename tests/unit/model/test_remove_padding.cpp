// use_remove_padding (CausalLMImpl::remove_padding): the log-prob and value passes run the trunk only over the
// real tokens of the columns some row of the batch uses (packed, model/packed_tokens.h), and give 0 at the response
// window's padding positions, as verl's unpadded forward does. Checked against the dense passes of the same model:
// in fp64 (eager attention) the valid positions and every parameter's gradient agree to 1e-12 (also with gradient
// checkpointing); in fp32 (SDPA) to fp32 rounding. A layer runner records the tokens each layer computed, so the
// test also shows the padding was skipped, and where the pass falls back to the kept columns unpacked.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <tuple>
#include <utility>
#include <vector>

#include "support/tensor_compare.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/packed_tokens.h"
#include "verl/model/transformer.h"
#include "verl/model/used_columns.h"

namespace verl::model {
namespace {

using test::max_abs_diff;

constexpr int64_t kPrompt = 6, kResponse = 5;

// Three rows, prompts of 4 / 3 / 2 tokens left-padded to 6 (columns 0-1 padding in every row), responses of
// 3 / 1 / 2 tokens right-padded to 5 (the last two columns padding in every row): 7 of 11 columns used.
struct PaddedBatch {
  torch::Tensor input_ids, attention_mask, position_ids, responses;
};
PaddedBatch padded_batch(int64_t vocab) {
  const std::vector<int64_t> prompt_lengths = {4, 3, 2}, response_lengths = {3, 1, 2};
  const int64_t B = 3, L = kPrompt + kResponse;
  PaddedBatch b;
  b.input_ids = torch::full({B, L}, vocab - 1, torch::kInt64);
  b.attention_mask = torch::zeros({B, L}, torch::kInt64);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t j = kPrompt - prompt_lengths[i]; j < kPrompt + response_lengths[i]; ++j) {
      b.input_ids[i][j] = (5 * i + 3 * j + 1) % (vocab - 2);
      b.attention_mask[i][j] = 1;
    }
  }
  b.position_ids = position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, kPrompt, kResponse).clone();
  return b;
}

CausalLM padding_model(torch::ScalarType dtype, HeadKind head = HeadKind::LM) {
  CausalLM m(test::tiny_config(Arch::Qwen2), head);
  init_weights(m, 7, /*perturb=*/true);
  if (head == HeadKind::Value) init_value_head(m, 9);
  m->to(dtype);
  m->eval();
  return m;
}

torch::Tensor response_padding(const PaddedBatch& b) { return b.attention_mask.narrow(1, kPrompt, kResponse) == 0; }

ResponseLogProbs log_probs_of(CausalLM& m, const PaddedBatch& b, bool remove_padding) {
  m->remove_padding = remove_padding;
  return response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, /*entropy=*/true,
                            /*sum_pi_squared=*/true);
}

TEST(RemovePadding, UsedColumnsSpanTheFirstToTheLastColumnSomeRowUses) {
  const auto range = [](const std::vector<int64_t>& row0, const std::vector<int64_t>& row1) {
    const ColumnRange r = used_columns(torch::stack({torch::tensor(row0), torch::tensor(row1)}));
    return std::pair{r.begin, r.end};
  };
  EXPECT_EQ(range({0, 0, 1, 1, 0}, {0, 1, 1, 0, 0}), (std::pair<int64_t, int64_t>{1, 4}));
  EXPECT_EQ(range({1, 0, 0, 0, 1}, {0, 0, 0, 0, 0}), (std::pair<int64_t, int64_t>{0, 5}));  // a gap stays
  EXPECT_EQ(range({0, 0, 0}, {0, 0, 0}), (std::pair<int64_t, int64_t>{3, 0}));
}

TEST(RemovePadding, LogProbsEqualTheDensePassAndAreZeroAtPadding) {
  for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
    CausalLM m = padding_model(dtype);
    const PaddedBatch b = padded_batch(m->config.vocab_size);
    const auto dense = log_probs_of(m, b, false);
    const auto packed = log_probs_of(m, b, true);
    const auto padding = response_padding(b);
    const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 1e-5;
    for (const auto& [name, want, got] : {std::tuple{"log_probs", dense.log_probs, packed.log_probs},
                                          std::tuple{"entropy", dense.entropy, packed.entropy},
                                          std::tuple{"sum_pi_squared", dense.sum_pi_squared, packed.sum_pi_squared}}) {
      ASSERT_EQ(got.sizes(), want.sizes()) << name;
      EXPECT_LT(max_abs_diff(got.masked_fill(padding, 0), want.masked_fill(padding, 0)), tolerance)
          << name << " " << dtype;
      EXPECT_TRUE(torch::all(got.masked_select(padding) == 0).item<bool>()) << name << " " << dtype;
      // The dense pass gives the padding positions numbers of their own: zeros there are the packed pass's.
      EXPECT_FALSE(torch::all(want.masked_select(padding) == 0).item<bool>()) << name << " " << dtype;
    }
  }
}

// With a sliding layer the packed pass masks the window as the dense pass does (the window shorter than the rows).
TEST(RemovePadding, SlidingWindowLayersEqualTheDensePass) {
  HFConfig c = test::tiny_config(Arch::Qwen2);
  c.sliding_window = 2;
  c.sliding_layers = {true, false};
  CausalLM m(c, HeadKind::LM);
  init_weights(m, 7, /*perturb=*/true);
  m->to(torch::kFloat64);
  m->eval();
  const PaddedBatch b = padded_batch(c.vocab_size);
  const auto dense = log_probs_of(m, b, false), packed = log_probs_of(m, b, true);
  const auto padding = response_padding(b);
  EXPECT_LT(max_abs_diff(packed.log_probs.masked_fill(padding, 0), dense.log_probs.masked_fill(padding, 0)), 1e-12);
  EXPECT_LT(max_abs_diff(packed.entropy.masked_fill(padding, 0), dense.entropy.masked_fill(padding, 0)), 1e-12);
}

TEST(RemovePadding, GradientsEqualTheDensePass) {
  CausalLM m = padding_model(torch::kFloat64);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  const auto valid = response_padding(b).logical_not().to(torch::kFloat64);
  const auto weights = torch::linspace(-1.0, 1.0, valid.numel(), torch::kFloat64).view(valid.sizes()) * valid;
  std::vector<std::vector<torch::Tensor>> grads;
  // Dense; packed; packed with gradient checkpointing (the packed positions saved for the recomputation).
  for (auto [remove_padding, checkpointing] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}}) {
    m->model->gradient_checkpointing = checkpointing;
    m->zero_grad();
    const auto out = log_probs_of(m, b, remove_padding);
    ((out.log_probs * weights).sum() + 0.3 * (out.entropy * valid).sum()).backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
    grads.push_back(g);
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_LT(max_abs_diff(grads[1][i], grads[0][i]), 1e-12) << "parameter " << i;
    EXPECT_LT(max_abs_diff(grads[2][i], grads[0][i]), 1e-12) << "parameter " << i << " (checkpointed)";
    EXPECT_GT(grads[0][i].abs().max().item<double>(), 0.0) << "parameter " << i << " got no gradient";
  }
}

// forward_kl_topk's reads of the distribution (TopKQuery): the teacher's side (top-k log-probs and ids) and the
// student's (log-probs at given ids, with autograd) equal log_softmax(logits / T) of the model's own forward at the
// positions before each response token, packed or dense, and their gradients agree.
TEST(RemovePadding, TopKReadsEqualTheFullLogitsPackedOrDense) {
  CausalLM m = padding_model(torch::kFloat64);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  const int64_t K = 3;
  const auto valid = response_padding(b).logical_not();
  auto gen = at::detail::createCPUGenerator(5);
  TopKQuery query;
  query.top_k = K;
  query.gather_ids = torch::randint(0, m->config.vocab_size, {3, kResponse, K}, gen, torch::kInt64);
  torch::Tensor reference_log_probs;
  {
    torch::NoGradGuard no_grad;
    m->remove_padding = false;
    const auto logits = m->forward(b.input_ids, b.attention_mask, b.position_ids);
    reference_log_probs = torch::log_softmax(logits.narrow(1, kPrompt - 1, kResponse) / 0.7, -1);
  }
  const auto [reference_top, reference_ids] = reference_log_probs.topk(K, -1);
  const auto reference_gathered = reference_log_probs.gather(-1, query.gather_ids);
  const auto on_valid = [&](const torch::Tensor& t) { return t.masked_select(valid.unsqueeze(-1).expand_as(t)); };
  const auto weights = torch::linspace(-1.0, 1.0, 3 * kResponse * K, torch::kFloat64).view({3, kResponse, K});
  std::vector<std::vector<torch::Tensor>> grads;
  for (bool remove_padding : {false, true}) {
    SCOPED_TRACE(remove_padding ? "packed" : "dense");
    m->remove_padding = remove_padding;
    m->zero_grad();
    const auto out = response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7,
                                        /*with_entropy=*/false, /*with_sum_pi_squared=*/false, query);
    ASSERT_EQ(out.top_k.gathered_log_probs.sizes(), (std::vector<int64_t>{3, kResponse, K}));
    ASSERT_EQ(out.top_k.top_k_ids.sizes(), (std::vector<int64_t>{3, kResponse, K}));
    // fp32 statistics (verl's convention) of an fp64 model.
    EXPECT_LT(
        max_abs_diff(on_valid(out.top_k.gathered_log_probs.detach().to(torch::kFloat64)), on_valid(reference_gathered)),
        1e-5);
    EXPECT_LT(max_abs_diff(on_valid(out.top_k.top_k_log_probs.to(torch::kFloat64)), on_valid(reference_top)), 1e-5);
    EXPECT_TRUE(torch::equal(on_valid(out.top_k.top_k_ids), on_valid(reference_ids)));
    (out.top_k.gathered_log_probs.to(torch::kFloat64) * weights * valid.unsqueeze(-1)).sum().backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
    grads.push_back(g);
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_LT(max_abs_diff(grads[1][i], grads[0][i]), 1e-6) << "parameter " << i;
    EXPECT_GT(grads[0][i].abs().max().item<double>(), 0.0) << "parameter " << i << " got no gradient";
  }
  m->remove_padding = true;
  const auto wrong = torch::zeros({3, kResponse + 1, K}, torch::kInt64);
  TopKQuery bad;
  bad.gather_ids = wrong;
  EXPECT_THROW(
      response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses, 0.7, false, false, bad), Error);
}

TEST(RemovePadding, ValuesEqualTheDensePassAndAreZeroAtPadding) {
  CausalLM m = padding_model(torch::kFloat64, HeadKind::Value);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  m->remove_padding = false;
  const auto dense = response_values(m, b.input_ids, b.attention_mask, b.position_ids, kResponse);
  m->remove_padding = true;
  const auto packed = response_values(m, b.input_ids, b.attention_mask, b.position_ids, kResponse);
  const auto padding = response_padding(b);
  ASSERT_EQ(packed.sizes(), dense.sizes());
  EXPECT_LT(max_abs_diff(packed.masked_fill(padding, 0), dense.masked_fill(padding, 0)), 1e-12);
  EXPECT_TRUE(torch::all(packed.masked_select(padding) == 0).item<bool>());
}

// What each layer computed: token rows (B x T of its input), and whether it ran packed.
using LayerInput = std::pair<int64_t, bool>;

TEST(RemovePadding, TheTrunkComputesOnlyTheRealTokens) {
  CausalLM m = padding_model(torch::kFloat32);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  std::vector<LayerInput> seen;
  m->model->layer_runner = [&](size_t i, const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& mask_bias, const torch::Tensor& packed) {
    seen.push_back({h.size(0) * h.size(1), packed.defined()});
    return m->model->layer_list[i]->forward(h, cos, sin, mask_bias, nullptr, static_cast<int64_t>(i), packed);
  };
  log_probs_of(m, b, false);
  EXPECT_EQ(seen, (std::vector<LayerInput>(2, {33, false})));  // 3 rows x 11 columns
  seen.clear();
  log_probs_of(m, b, true);
  EXPECT_EQ(seen, (std::vector<LayerInput>(2, {15, true})));  // prompts 4 + 3 + 2, responses 3 + 1 + 2

  // One row's prompt fills its six columns: two more real tokens, the same numbers as the dense pass.
  PaddedBatch full_prompt = b;
  full_prompt.attention_mask = b.attention_mask.clone();
  full_prompt.attention_mask[0].narrow(0, 0, kPrompt).fill_(1);
  full_prompt.position_ids = position_ids_from_mask(full_prompt.attention_mask);
  seen.clear();
  const auto packed = log_probs_of(m, full_prompt, true);
  EXPECT_EQ(seen, (std::vector<LayerInput>(2, {17, true})));
  m->remove_padding = false;
  const auto dense = response_log_probs(m, full_prompt.input_ids, full_prompt.attention_mask,
                                        full_prompt.position_ids, full_prompt.responses, 0.7, false);
  const auto padding = response_padding(full_prompt);
  EXPECT_LT(max_abs_diff(packed.log_probs, dense.log_probs.masked_fill(padding, 0)), 1e-5);

  // No response token in any row: the kept columns run unpacked (ranks keep their collectives in step, and the
  // outputs stay on the trunk's graph) over the prompts' used columns and one response column; every output is 0.
  PaddedBatch empty = b;
  empty.attention_mask = b.attention_mask.clone();
  empty.attention_mask.narrow(1, kPrompt, kResponse).zero_();
  seen.clear();
  const auto out = log_probs_of(m, empty, true);
  EXPECT_EQ(seen, (std::vector<LayerInput>(2, {15, false})));  // 3 rows x columns 2-6
  EXPECT_TRUE(torch::all(out.log_probs == 0).item<bool>());
  m->model->layer_runner = nullptr;
}

TEST(RemovePadding, AResponseTokenAfterPaddingRunsTheKeptColumnsUnpacked) {
  CausalLM m = padding_model(torch::kFloat64);
  PaddedBatch b = padded_batch(m->config.vocab_size);
  // Row 1's response token moves one column right: column 6 (its predictor's) is padding, column 7 real.
  b.attention_mask[1][kPrompt] = 0;
  b.attention_mask[1][kPrompt + 1] = 1;
  b.position_ids = position_ids_from_mask(b.attention_mask);
  EXPECT_FALSE(pack_responses(b.attention_mask, kResponse, torch::kCPU).has_value());
  std::vector<LayerInput> seen;
  m->model->layer_runner = [&](size_t i, const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& mask_bias, const torch::Tensor& packed) {
    seen.push_back({h.size(0) * h.size(1), packed.defined()});
    return m->model->layer_list[i]->forward(h, cos, sin, mask_bias, nullptr, static_cast<int64_t>(i), packed);
  };
  const auto kept = log_probs_of(m, b, true);
  EXPECT_EQ(seen, (std::vector<LayerInput>(2, {21, false})));  // 3 rows x columns 2-8
  m->model->layer_runner = nullptr;
  const auto dense = log_probs_of(m, b, false);
  const auto padding = response_padding(b);
  EXPECT_LT(max_abs_diff(kept.log_probs, dense.log_probs.masked_fill(padding, 0)), 1e-12);
}

TEST(RemovePadding, PackedTokensRoundTripAndResponsesPointAtTheirPredictors) {
  const auto mask = torch::tensor({0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1}, torch::kInt64).view({2, 6});
  const PackedTokens p = pack_tokens(mask, torch::kCPU);
  EXPECT_TRUE(torch::equal(p.positions, torch::tensor({1, 2, 3, 5, 6, 8, 9, 10, 11}, torch::kInt64)));
  const auto x = torch::arange(24, torch::kFloat64).view({2, 6, 2});
  const auto round_trip = p.unpack(p.pack(x));
  EXPECT_TRUE(torch::equal(round_trip, x.masked_fill((mask == 0).unsqueeze(-1), 0)));

  // P = 3, R = 3: row 0's responses at columns 3 and 5 (column 4 padding: a hole, so no packing); without the
  // hole, the predictors are the packed tokens just before each response token.
  EXPECT_FALSE(pack_responses(mask, 3, torch::kCPU).has_value());
  const auto contiguous = torch::tensor({0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, torch::kInt64).view({2, 6});
  const auto r = pack_responses(contiguous, 3, torch::kCPU);
  ASSERT_TRUE(r.has_value());
  // Packed: row 0 columns 1-4 (indices 0-3), row 1 columns 1-5 (indices 4-8). Responses: row 0 columns 3, 4;
  // row 1 columns 3, 4, 5.
  EXPECT_TRUE(torch::equal(r->predictors, torch::tensor({1, 2, 5, 6, 7}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(r->window, torch::tensor({0, 1, 3, 4, 5}, torch::kInt64)));
  const auto window = r->to_window(torch::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, torch::kFloat64));
  EXPECT_TRUE(torch::equal(window, torch::tensor({1.0, 2.0, 0.0, 3.0, 4.0, 5.0}, torch::kFloat64).view({2, 3})));
}

}  // namespace
}  // namespace verl::model
