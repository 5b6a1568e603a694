// Rollout throughput on random weights: prefill tokens/s (prompt 64) and decode tokens/s (32 steps over a
// KV cache) at batch 1, 8 and 64 for a ~25M-parameter Qwen2-shaped model (hidden 512, 6 layers, 8 heads,
// 2 kv heads, intermediate 1408, vocab 8192). Threads: OMP_NUM_THREADS / LibTorch default.
#include <benchmark/benchmark.h>

#include "verl/model/transformer.h"

namespace {

verl::model::CausalLM& bench_model() {
  static verl::model::CausalLM model = [] {
    verl::model::HFConfig c;
    c.arch = verl::model::Arch::Qwen2;
    c.vocab_size = 8192;
    c.hidden_size = 512;
    c.intermediate_size = 1408;
    c.num_hidden_layers = 6;
    c.num_attention_heads = 8;
    c.num_key_value_heads = 2;
    c.head_dim = 64;
    verl::model::CausalLM m(c);
    verl::model::init_weights(m, 0);
    m->eval();
    return m;
  }();
  return model;
}

constexpr int64_t kPrompt = 64, kDecode = 32;

void BM_Prefill(benchmark::State& state) {
  torch::NoGradGuard ng;
  auto& m = bench_model();
  const int64_t B = state.range(0);
  auto ids = torch::randint(0, 8000, {B, kPrompt}, torch::kInt64);
  auto mask = torch::ones_like(ids);
  auto pos = verl::model::position_ids_from_mask(mask);
  for (auto _ : state) {
    auto cache = m->make_cache(B, kPrompt + kDecode);
    auto h = m->hidden_states(ids, mask, pos, &cache);
    auto logits = m->logits(h.narrow(1, kPrompt - 1, 1));
    benchmark::DoNotOptimize(logits.data_ptr());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * kPrompt), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Decode(benchmark::State& state) {
  torch::NoGradGuard ng;
  auto& m = bench_model();
  const int64_t B = state.range(0);
  auto ids = torch::randint(0, 8000, {B, kPrompt}, torch::kInt64);
  auto mask = torch::ones({B, kPrompt + kDecode}, torch::kInt64);
  auto pos = verl::model::position_ids_from_mask(mask);
  for (auto _ : state) {
    state.PauseTiming();
    auto cache = m->make_cache(B, kPrompt + kDecode);
    auto h = m->hidden_states(ids, mask.narrow(1, 0, kPrompt), pos.narrow(1, 0, kPrompt), &cache);
    auto tok = m->logits(h.narrow(1, kPrompt - 1, 1).squeeze(1)).argmax(-1);
    state.ResumeTiming();
    for (int64_t t = 0; t < kDecode; ++t) {
      auto step = m->hidden_states(tok.unsqueeze(1), mask.narrow(1, 0, kPrompt + t + 1),
                                   pos.narrow(1, kPrompt + t, 1), &cache);
      tok = m->logits(step.squeeze(1)).argmax(-1);
    }
    benchmark::DoNotOptimize(tok.data_ptr());
  }
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(B * kDecode), benchmark::Counter::kIsIterationInvariantRate);
}

// The machine's roofline inputs: fp32 GEMM FLOP/s and memory bandwidth (copy of 256 MiB).
void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(torch::mm(a, b).data_ptr());
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MemoryCopy(benchmark::State& state) {
  auto src = torch::ones({64 * 1024 * 1024}), dst = torch::empty_like(src);
  for (auto _ : state) dst.copy_(src);
  // Read + write.
  state.counters["bytes/s"] = benchmark::Counter(2.0 * src.nbytes(), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_Gemm)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MemoryCopy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Prefill)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode)->Arg(1)->Arg(8)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
