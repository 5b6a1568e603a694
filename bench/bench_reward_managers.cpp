// One reward step over a batch with a CPU-bound Python reward function (about 20 ms of pure Python a call, as
// math-verify's parsing can take): the naive manager calls it in the trainer's interpreter one sample after
// another; verl 0.9.1's remote manager spreads the calls over reward.num_workers worker processes. Wall time per
// batch (the calls run in the workers, not on this thread). The workers are the verl binary: $VERL_BINARY, else
// the build folder's verl beside bench/.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "verl/config/config_loader.h"
#include "verl/protocol/data_proto.h"
#include "verl/reward/reward_manager.h"
#include "verl/reward/scorers/reward_worker_pool.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr int64_t kBatch = 16;

const char* const kCpuBoundReward = R"PY(
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    total = 0
    for i in range(300000):
        total += i * i % 7
    return float(solution_str.endswith(ground_truth))
)PY";

struct RewardBenchSetup {
  std::string reward_path;
  std::shared_ptr<const verl::tokenizer::Tokenizer> tokenizer;
  verl::protocol::DataProto batch;
};

const RewardBenchSetup& setup() {
  static const RewardBenchSetup instance = [] {
    char pattern[] = "/tmp/bench_reward_managers_XXXXXX";
    const std::string dir = ::mkdtemp(pattern);
    RewardBenchSetup s;
    s.reward_path = dir + "/reward.py";
    std::ofstream(s.reward_path) << kCpuBoundReward;
    verl::tokenizer::ByteLevelBPESpec spec;
    spec.alphabet = verl::tokenizer::printable_ascii_alphabet();
    spec.special_tokens = {"<|endoftext|>"};
    spec.eos_token = spec.pad_token = "<|endoftext|>";
    verl::tokenizer::write_byte_level_bpe_folder(dir + "/tokenizer", spec);
    s.tokenizer =
        std::make_shared<const verl::tokenizer::Tokenizer>(verl::tokenizer::Tokenizer::from_folder(dir + "/tokenizer"));
    const std::vector<int32_t> ids = s.tokenizer->encode("the answer is 42", /*add_special_tokens=*/false);
    const std::vector<int64_t> response(ids.begin(), ids.end());
    const auto R = static_cast<int64_t>(response.size());
    torch::Tensor responses = torch::tensor(response).repeat({kBatch, 1});
    torch::Tensor prompts = torch::full({kBatch, 1}, response.front(), torch::kInt64);
    std::vector<Json> sources(kBatch, "bench"), truths(kBatch, Json{{"ground_truth", "42"}});
    s.batch = verl::protocol::DataProto::from_dict({{"prompts", prompts},
                                                    {"responses", responses},
                                                    {"attention_mask", torch::ones({kBatch, 1 + R}, torch::kInt64)}},
                                                   {{"data_source", sources}, {"reward_model", truths}});
    const char* binary = std::getenv("VERL_BINARY");
    verl::reward::set_reward_worker_executable(
        binary != nullptr ? binary
                          : (fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "verl").string());
    return s;
  }();
  return instance;
}

std::unique_ptr<verl::reward::RewardManager> make_manager(const std::string& name, int64_t workers) {
  verl::config::ConfigArgs args;
  args.overrides = {"custom_reward_function.path=" + setup().reward_path, "reward.reward_manager.name=" + name,
                    "reward.num_workers=" + std::to_string(workers)};
  return verl::reward::load_reward_manager(verl::config::load_config(args).ppo, setup().tokenizer, 0);
}

void run(benchmark::State& state, const std::string& name, int64_t workers) {
  const auto manager = make_manager(name, workers);  // the workers start here, outside the timing
  for (auto _ : state) {
    auto result = manager->compute(setup().batch);
    benchmark::DoNotOptimize(result.reward_tensor);
  }
  state.counters["samples/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kBatch), benchmark::Counter::kIsRate);
}

void BM_NaiveManager(benchmark::State& state) { run(state, "naive", 1); }
void BM_RemoteManager(benchmark::State& state) { run(state, "remote", state.range(0)); }

}  // namespace

BENCHMARK(BM_NaiveManager)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RemoteManager)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
