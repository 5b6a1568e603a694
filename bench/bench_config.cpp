// Config composition cost (parse the built-in defaults, apply overrides, resolve, type): paid once per
// process start, so it only has to stay far below a second.
#include <benchmark/benchmark.h>

#include "verl/config/config_loader.h"

static void BM_LoadDefaultConfigWithOverrides(benchmark::State& state) {
  verl::config::ConfigArgs args;
  args.overrides = {"actor_rollout_ref.actor.optim.lr=3e-6", "algorithm.adv_estimator=grpo", "trainer.logger=[console]"};
  for (auto _ : state) {
    auto loaded = verl::config::load_config(args);
    benchmark::DoNotOptimize(loaded.ppo.actor_rollout_ref.actor.optim.lr);
  }
}
BENCHMARK(BM_LoadDefaultConfigWithOverrides);

BENCHMARK_MAIN();
