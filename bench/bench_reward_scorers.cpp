// Rule reward cost per sample: the reward step scores every response of a batch on the driver, so a scorer
// must stay far below a millisecond for typical ~1000-character responses.
#include <benchmark/benchmark.h>

#include <string>

#include "verl/reward/scorers/default_compute_score.h"

namespace {

// A GSM8K-style chain of thought of about `chars` characters ending in a final answer line.
std::string long_response(size_t chars, const std::string& ending) {
  std::string text;
  while (text.size() < chars) text += "She sells 16 - 3 - 4 = 9 eggs, and 9 * $2 = $18 per day. ";
  return text + ending;
}

void BM_Score(benchmark::State& state, const char* data_source, const std::string& ending, const char* truth) {
  const std::string response = long_response(static_cast<size_t>(state.range(0)), ending);
  for (auto _ : state) {
    auto result = verl::reward::default_compute_score(data_source, response, truth);
    benchmark::DoNotOptimize(result.score);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * response.size()));
}

void BM_Gsm8k(benchmark::State& state) { BM_Score(state, "openai/gsm8k", "\n#### 18", "18"); }
void BM_Math(benchmark::State& state) {
  BM_Score(state, "DigitalLearningGmbH/MATH-lighteval", " so $\\boxed{\\dfrac{1}{2}}$.", "\\frac{1}{2}");
}
void BM_MathDapo(benchmark::State& state) { BM_Score(state, "math_dapo", "\nAnswer: $\\frac{1}{2}$", "\\frac12"); }

}  // namespace

BENCHMARK(BM_Gsm8k)->Arg(1000)->Arg(10000);
BENCHMARK(BM_Math)->Arg(1000)->Arg(10000);
BENCHMARK(BM_MathDapo)->Arg(1000)->Arg(10000);

BENCHMARK_MAIN();
