// Tensor-parallel layers on 2 and 3 ranks (thread communicators) against the same computation on whole
// tensors: outputs, and gradients of a loss every rank computes the same, for column- and row-parallel linears
// (an MLP: column then row, as q/k/v -> o and gate/up -> down) and the vocab-parallel log-probs and entropy.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "support/thread_ranks.h"
#include "verl/parallel/comm.h"
#include "verl/parallel/tensor_parallel.h"

namespace verl::parallel {
namespace {

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  const double diff = (a - b).abs().max().item<double>();
  EXPECT_LT(diff, 1e-5 * std::max(1.0, b.abs().max().item<double>())) << what;
}

class TensorParallelOnRanks : public ::testing::TestWithParam<int> {};

TEST_P(TensorParallelOnRanks, ColumnThenRowParallelMlpMatchesTheWholeMlp) {
  const int tp = GetParam();
  torch::manual_seed(0);
  const int64_t in = 6, hidden = 12, out = 5;
  torch::Tensor x = torch::randn({4, 3, in}, torch::kFloat64);
  torch::Tensor w1 = torch::randn({hidden, in}, torch::kFloat64), b1 = torch::randn({hidden}, torch::kFloat64);
  torch::Tensor w2 = torch::randn({out, hidden}, torch::kFloat64), b2 = torch::randn({out}, torch::kFloat64);
  torch::Tensor upstream = torch::randn({4, 3, out}, torch::kFloat64);

  // Whole: y = silu(x w1^T + b1) w2^T + b2, loss = sum(y * upstream).
  auto [gx, gw1, gb1, gw2, gb2, y_whole] = [&] {
    auto xx = x.clone().requires_grad_(), a = w1.clone().requires_grad_(), ab = b1.clone().requires_grad_();
    auto c = w2.clone().requires_grad_(), cb = b2.clone().requires_grad_();
    torch::Tensor y = torch::nn::functional::linear(torch::silu(torch::nn::functional::linear(xx, a, ab)), c, cb);
    (y * upstream).sum().backward();
    return std::make_tuple(xx.grad(), a.grad(), ab.grad(), c.grad(), cb.grad(), y.detach());
  }();

  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto xx = x.clone().requires_grad_();
    auto a = tp_shard(w1, 0, *comm).requires_grad_(), ab = tp_shard(b1, 0, *comm).requires_grad_();
    auto c = tp_shard(w2, 1, *comm).requires_grad_(), cb = b2.clone().requires_grad_();
    torch::Tensor h = torch::silu(column_parallel_linear(xx, a, ab, comm));
    torch::Tensor y = row_parallel_linear(h, c, cb, comm);
    expect_close(y.detach(), y_whole, "output");
    (y * upstream).sum().backward();
    expect_close(xx.grad(), gx, "grad x");  // all-reduced by the column layer's backward
    expect_close(a.grad(), tp_shard(gw1, 0, *comm), "grad w1 slice");
    expect_close(ab.grad(), tp_shard(gb1, 0, *comm), "grad b1 slice");
    expect_close(c.grad(), tp_shard(gw2, 1, *comm), "grad w2 slice");
    expect_close(cb.grad(), gb2, "grad b2");
  });
}

TEST_P(TensorParallelOnRanks, GatheredColumnOutputIsTheWholeOutput) {
  const int tp = GetParam();
  torch::manual_seed(1);
  torch::Tensor x = torch::randn({2, 4}, torch::kFloat64), w = torch::randn({6, 4}, torch::kFloat64);
  torch::Tensor upstream = torch::randn({2, 6}, torch::kFloat64);
  auto ww = w.clone().requires_grad_();
  torch::Tensor whole = torch::nn::functional::linear(x, ww);
  (whole * upstream).sum().backward();
  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto shard = tp_shard(w, 0, *comm).requires_grad_();
    torch::Tensor y = column_parallel_linear(x, shard, torch::Tensor(), comm, /*gather_output=*/true);
    expect_close(y.detach(), whole.detach(), "gathered output");
    (y * upstream).sum().backward();
    expect_close(shard.grad(), tp_shard(ww.grad(), 0, *comm), "grad slice");
  });
}

TEST_P(TensorParallelOnRanks, VocabParallelLogProbsAndEntropyMatchTheWholeSoftmax) {
  const int tp = GetParam();
  torch::manual_seed(2);
  const int64_t V = 12;
  torch::Tensor logits = torch::randn({3, 5, V}) * 4;
  torch::Tensor labels = torch::randint(0, V, {3, 5}, torch::kInt64);
  torch::Tensor weights = torch::randn({3, 5});
  auto whole = logits.clone().requires_grad_();
  torch::Tensor log_softmax = torch::log_softmax(whole, -1);
  torch::Tensor lp = log_softmax.gather(-1, labels.unsqueeze(-1)).squeeze(-1);
  torch::Tensor entropy = -(log_softmax.exp() * log_softmax).sum(-1);
  ((lp * weights).sum() + 0.3 * entropy.sum()).backward();

  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto shard = tp_shard(logits, -1, *comm).requires_grad_();
    VocabParallelLogProbs out = vocab_parallel_log_probs(shard, labels, comm);
    expect_close(out.log_probs.detach(), lp.detach(), "log-probs");
    expect_close(out.entropy.detach(), entropy.detach(), "entropy");
    ((out.log_probs * weights).sum() + 0.3 * out.entropy.sum()).backward();
    expect_close(shard.grad(), tp_shard(whole.grad(), -1, *comm), "grad of the logits slice");
  });
}

TEST_P(TensorParallelOnRanks, VocabParallelEmbeddingMatchesTheWholeTable) {
  const int tp = GetParam();
  torch::manual_seed(3);
  torch::Tensor table = torch::randn({12, 5}, torch::kFloat64);
  torch::Tensor ids = torch::randint(0, 12, {3, 7}, torch::kInt64);
  torch::Tensor upstream = torch::randn({3, 7, 5}, torch::kFloat64);
  auto whole = table.clone().requires_grad_();
  torch::Tensor expected = torch::embedding(whole, ids);
  (expected * upstream).sum().backward();
  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto shard = tp_shard(table, 0, *comm).requires_grad_();
    torch::Tensor rows = vocab_parallel_embedding(ids, shard, comm);
    expect_close(rows.detach(), expected.detach(), "rows");
    (rows * upstream).sum().backward();
    expect_close(shard.grad(), tp_shard(whole.grad(), 0, *comm), "grad of the table slice");
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, TensorParallelOnRanks, ::testing::Values(2, 3));

TEST(TensorParallel, AWeightThatDoesNotSplitEvenlyIsAnError) {
  test::on_thread_ranks(2, [](const std::shared_ptr<Comm>& comm) {
    EXPECT_THROW(tp_shard(torch::zeros({5, 4}), 0, *comm), std::exception);
  });
}

}  // namespace
}  // namespace verl::parallel
