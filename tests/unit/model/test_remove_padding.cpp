// use_remove_padding (CausalLMImpl::remove_padding): the log-prob and value passes run the trunk only over the
// columns some row of the batch uses, and give 0 at the response window's padding positions, as verl's unpadded
// forward does. Checked against the dense passes of the same model: in fp64 (eager attention) the valid positions
// and every parameter's gradient agree to 1e-12; in fp32 (SDPA) to fp32 rounding. A layer runner records the
// sequence length each layer saw, so the test also shows the padding columns were skipped.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <tuple>
#include <utility>
#include <vector>

#include "support/tensor_compare.h"
#include "support/tiny_model.h"
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

TEST(RemovePadding, GradientsEqualTheDensePass) {
  CausalLM m = padding_model(torch::kFloat64);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  const auto valid = response_padding(b).logical_not().to(torch::kFloat64);
  const auto weights = torch::linspace(-1.0, 1.0, valid.numel(), torch::kFloat64).view(valid.sizes()) * valid;
  std::vector<std::vector<torch::Tensor>> grads;
  for (bool remove_padding : {false, true}) {
    m->zero_grad();
    const auto out = log_probs_of(m, b, remove_padding);
    ((out.log_probs * weights).sum() + 0.3 * (out.entropy * valid).sum()).backward();
    std::vector<torch::Tensor> g;
    for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
    grads.push_back(g);
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_LT(max_abs_diff(grads[1][i], grads[0][i]), 1e-12) << "parameter " << i;
    EXPECT_GT(grads[0][i].abs().max().item<double>(), 0.0) << "parameter " << i << " got no gradient";
  }
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

TEST(RemovePadding, TheTrunkSkipsTheColumnsNoRowUses) {
  CausalLM m = padding_model(torch::kFloat32);
  const PaddedBatch b = padded_batch(m->config.vocab_size);
  std::vector<int64_t> lengths;
  m->model->layer_runner = [&](size_t i, const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& mask_bias) {
    lengths.push_back(h.size(1));
    return m->model->layer_list[i]->forward(h, cos, sin, mask_bias, nullptr, static_cast<int64_t>(i));
  };
  log_probs_of(m, b, false);
  EXPECT_EQ(lengths, (std::vector<int64_t>{11, 11}));
  lengths.clear();
  log_probs_of(m, b, true);
  EXPECT_EQ(lengths, (std::vector<int64_t>{7, 7}));  // columns 2-8

  // One row's prompt fills its six columns: only the responses' shared padding is skipped.
  PaddedBatch full_prompt = b;
  full_prompt.attention_mask = b.attention_mask.clone();
  full_prompt.attention_mask[0].narrow(0, 0, kPrompt).fill_(1);
  full_prompt.position_ids = position_ids_from_mask(full_prompt.attention_mask);
  lengths.clear();
  m->remove_padding = false;
  const auto dense = response_log_probs(m, full_prompt.input_ids, full_prompt.attention_mask,
                                        full_prompt.position_ids, full_prompt.responses, 0.7, false);
  const auto packed = log_probs_of(m, full_prompt, true);
  EXPECT_EQ(lengths, (std::vector<int64_t>{11, 11, 9, 9}));  // columns 0-8
  const auto padding = response_padding(full_prompt);
  EXPECT_LT(max_abs_diff(packed.log_probs, dense.log_probs.masked_fill(padding, 0)), 1e-5);

  // No response token in any row: the trunk still runs (ranks keep their collectives in step) over the prompts'
  // used columns and one response column, and every output is 0.
  PaddedBatch empty = b;
  empty.attention_mask = b.attention_mask.clone();
  empty.attention_mask.narrow(1, kPrompt, kResponse).zero_();
  lengths.clear();
  const auto out = log_probs_of(m, empty, true);
  EXPECT_EQ(lengths, (std::vector<int64_t>{5, 5}));  // columns 2-6
  EXPECT_TRUE(torch::all(out.log_probs == 0).item<bool>());
  m->model->layer_runner = nullptr;
}

}  // namespace
}  // namespace verl::model
