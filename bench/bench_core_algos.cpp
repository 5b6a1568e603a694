// Driver-side algorithm cost per training step (float32, CPU): advantage estimators on a batch of
// B responses x R tokens with groups of n = 8, and the vanilla policy loss forward + backward. These run
// once per step on the driver, so they must stay far below the step time.
#include <benchmark/benchmark.h>

#include "verl/algo/core_algos.h"

namespace {

struct Batch {
  torch::Tensor rewards, values, mask;
  std::vector<std::string> uids;
};

Batch make_batch(int64_t B, int64_t R) {
  torch::manual_seed(0);
  Batch b;
  b.rewards = torch::randn({B, R});
  b.values = torch::randn({B, R});
  b.mask = (torch::rand({B, R}) > 0.1).to(torch::kFloat);
  for (int64_t i = 0; i < B; ++i) b.uids.push_back("prompt-" + std::to_string(i / 8));
  return b;
}

void BM_Advantage(benchmark::State& state, const std::string& estimator) {
  Batch b = make_batch(state.range(0), state.range(1));
  verl::algo::AdvantageInputs in{b.rewards, b.mask, b.values, torch::zeros({state.range(0)}), b.uids};
  for (auto _ : state) {
    auto out = verl::algo::compute_advantage(estimator, in);
    benchmark::DoNotOptimize(out.first.data_ptr());
  }
}

void BM_GrpoVectorized(benchmark::State& state) {
  Batch b = make_batch(state.range(0), state.range(1));
  for (auto _ : state) {
    auto out = verl::algo::compute_grpo_vectorized_outcome_advantage(b.rewards, b.mask, b.uids);
    benchmark::DoNotOptimize(out.first.data_ptr());
  }
}

void BM_VanillaPolicyLossBackward(benchmark::State& state) {
  Batch b = make_batch(state.range(0), state.range(1));
  torch::Tensor old_lp = -torch::rand({state.range(0), state.range(1)});
  for (auto _ : state) {
    torch::Tensor lp = (old_lp + 0.1 * b.values).set_requires_grad(true);
    auto out = verl::algo::compute_policy_loss_vanilla(old_lp, lp, b.rewards, b.mask);
    out.pg_loss.backward();
    benchmark::DoNotOptimize(lp.grad().data_ptr());
  }
}

}  // namespace

BENCHMARK_CAPTURE(BM_Advantage, gae, std::string("gae"))->Args({1024, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advantage, grpo, std::string("grpo"))->Args({1024, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advantage, rloo, std::string("rloo"))->Args({1024, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Advantage, reinforce_plus_plus, std::string("reinforce_plus_plus"))
    ->Args({1024, 1024})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GrpoVectorized)->Args({1024, 1024})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VanillaPolicyLossBackward)->Args({1024, 1024})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
