// Tensor-parallel layers on 2 and 3 ranks (thread communicators) against the same computation on whole
// tensors: outputs, and gradients of a loss every rank computes the same, for column- and row-parallel linears
// (an MLP: column then row, as q/k/v -> o and gate/up -> down) and the vocab-parallel log-probs and entropy; the
// same MLP and the embedding under Megatron's sequence parallelism (token chunks between the regions).
#include <gtest/gtest.h>

#include <algorithm>
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

// Megatron's sequence parallelism: the MLP between chunks of the 7 tokens (4 + 3 on 2 ranks, 3 + 3 + 1 on 3: the
// last chunks padded), its output gathered and used the same on every rank: the whole MLP's output and gradients.
TEST_P(TensorParallelOnRanks, SequenceParallelMlpOnTokenChunksMatchesTheWholeMlp) {
  const int tp = GetParam();
  torch::manual_seed(4);
  const int64_t n = 7, in = 6, hidden = 12, out = 5;
  torch::Tensor x = torch::randn({2, n, in}, torch::kFloat64);
  torch::Tensor w1 = torch::randn({hidden, in}, torch::kFloat64), w2 = torch::randn({out, hidden}, torch::kFloat64);
  torch::Tensor b2 = torch::randn({out}, torch::kFloat64), upstream = torch::randn({2, n, out}, torch::kFloat64);
  auto xx = x.clone().requires_grad_(), a = w1.clone().requires_grad_(), c = w2.clone().requires_grad_();
  auto cb = b2.clone().requires_grad_();
  torch::Tensor y_whole = torch::nn::functional::linear(torch::silu(torch::nn::functional::linear(xx, a)), c, cb);
  (y_whole * upstream).sum().backward();

  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto x_in = x.clone().requires_grad_();
    auto a_shard = tp_shard(w1, 0, *comm).requires_grad_(), c_shard = tp_shard(w2, 1, *comm).requires_grad_();
    auto bias = b2.clone().requires_grad_();
    const torch::Tensor chunk = scatter_to_sequence_parallel_region(x_in, 1, comm);
    EXPECT_EQ(chunk.size(1), (n + tp - 1) / tp);
    const torch::Tensor gathered = gather_from_sequence_parallel_region(chunk, 1, comm, /*sum_gradient=*/true);
    EXPECT_EQ(gathered.size(1), chunk.size(1) * tp);  // the padded length: the MLP runs on the padding too
    const torch::Tensor h = torch::silu(torch::nn::functional::linear(gathered, a_shard));
    const torch::Tensor y_chunk = row_parallel_linear_to_sequence_chunks(h, c_shard, bias, 1, comm);
    EXPECT_EQ(y_chunk.sizes(), torch::IntArrayRef({2, chunk.size(1), out}));
    const torch::Tensor y =
        gather_from_sequence_parallel_region(y_chunk, 1, comm, /*sum_gradient=*/false).narrow(1, 0, n);
    expect_close(y.detach(), y_whole.detach(), "output");
    (y * upstream).sum().backward();
    expect_close(x_in.grad(), xx.grad(), "grad x");  // each rank's chunk, all-gathered by the scatter's backward
    expect_close(a_shard.grad(), tp_shard(a.grad(), 0, *comm), "grad w1 slice");
    expect_close(c_shard.grad(), tp_shard(c.grad(), 1, *comm), "grad w2 slice");
    expect_close(bias.grad(), cb.grad(), "grad b2");  // added to each rank's tokens, summed over the group
  });
}

TEST_P(TensorParallelOnRanks, VocabParallelEmbeddingScatteredIsThisRanksChunkOfTheWholeRows) {
  const int tp = GetParam();
  torch::manual_seed(5);
  torch::Tensor table = torch::randn({12, 5}, torch::kFloat64);
  torch::Tensor ids = torch::randint(0, 12, {3, 7}, torch::kInt64);
  torch::Tensor upstream = torch::randn({3, 7, 5}, torch::kFloat64);
  auto whole = table.clone().requires_grad_();
  torch::Tensor expected = torch::embedding(whole, ids);
  (expected * upstream).sum().backward();
  test::on_thread_ranks(tp, [&](const std::shared_ptr<Comm>& comm) {
    auto shard = tp_shard(table, 0, *comm).requires_grad_();
    torch::Tensor chunk = vocab_parallel_embedding(ids, shard, comm, /*scatter_dim=*/1);
    const int64_t length = (7 + tp - 1) / tp, start = comm->rank() * length;
    ASSERT_EQ(chunk.size(1), length);
    const int64_t real = std::max<int64_t>(0, std::min<int64_t>(length, 7 - start));  // the rest is padding: 0
    expect_close(chunk.narrow(1, 0, real).detach(), expected.narrow(1, start, real).detach(), "rows");
    if (real < length) EXPECT_EQ(chunk.narrow(1, real, length - real).abs().max().item<double>(), 0.0);
    torch::Tensor rows = gather_from_sequence_parallel_region(chunk, 1, comm, /*sum_gradient=*/false).narrow(1, 0, 7);
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
