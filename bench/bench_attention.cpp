// Prefill and training attention: LibTorch's scaled_dot_product_attention (AttentionKernel::Sdpa, the default)
// against the matmul + fp32 softmax reference (Eager), on one qwen2-25m layer's attention (hidden 512, 8 heads,
// 2 kv heads, head size 64) over left-padded batches: forward (prefill, no grad) and forward + backward
// (training). Threads: OMP_NUM_THREADS / LibTorch default.
//   build/bench/bench_attention --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <limits>

#include "verl/bench/model_presets.h"
#include "verl/model/transformer.h"

namespace {

using verl::model::AttentionKernel;

struct Inputs {
  torch::Tensor x, cos, sin, bias;
};

verl::model::Attention& bench_attention() {
  static verl::model::Attention attention = [] {
    verl::model::Attention a(verl::bench::model_preset("qwen2-25m"));
    torch::manual_seed(0);
    torch::NoGradGuard no_grad;
    for (auto& p : a->parameters()) p.normal_(0, 0.02);
    return a;
  }();
  return attention;
}

// [B, T] with the first quarter of row 0 padding; the additive causal + padding bias the decoder builds.
Inputs make_inputs(int64_t B, int64_t T, bool grad) {
  auto& a = bench_attention();
  const int64_t H = a->num_heads * a->head_dim;
  Inputs in;
  in.x = torch::randn({B, T, H}).requires_grad_(grad);
  auto angles = torch::rand({B, T, a->head_dim});
  in.cos = angles.cos();
  in.sin = angles.sin();
  auto allowed = torch::ones({T, T}).tril().to(torch::kBool).expand({B, T, T}).clone();
  allowed.select(0, 0).narrow(1, 0, T / 4).fill_(false);
  in.bias = torch::zeros({B, T, T}).masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest()).view({B, 1, 1, T, T});
  return in;
}

void BM_AttentionForward(benchmark::State& state, AttentionKernel kernel) {
  torch::NoGradGuard ng;
  auto& a = bench_attention();
  a->kernel = kernel;
  const int64_t B = state.range(0), T = state.range(1);
  const Inputs in = make_inputs(B, T, false);
  for (auto _ : state) {
    auto out = a->forward(in.x, in.cos, in.sin, in.bias, nullptr, 0);
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AttentionForwardBackward(benchmark::State& state, AttentionKernel kernel) {
  auto& a = bench_attention();
  a->kernel = kernel;
  const int64_t B = state.range(0), T = state.range(1);
  const Inputs in = make_inputs(B, T, true);
  for (auto _ : state) {
    a->zero_grad();
    a->forward(in.x, in.cos, in.sin, in.bias, nullptr, 0).sum().backward();
    benchmark::DoNotOptimize(in.x.grad().data_ptr());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * T), benchmark::Counter::kIsIterationInvariantRate);
}


}  // namespace

BENCHMARK_CAPTURE(BM_AttentionForward, sdpa, AttentionKernel::Sdpa)->ArgsProduct({{8, 16}, {128, 512}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionForward, eager, AttentionKernel::Eager)->ArgsProduct({{8, 16}, {128, 512}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionForwardBackward, sdpa, AttentionKernel::Sdpa)->ArgsProduct({{8, 16}, {128, 512}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AttentionForwardBackward, eager, AttentionKernel::Eager)->ArgsProduct({{8, 16}, {128, 512}})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
