// `verl bench roofline|generate|ppo`: the machine's GEMM peak and memory bandwidth, rollout throughput
// beside its roofline bound, and one PPO step's per-phase throughput and MFU (library code in src/bench/).
#include <iostream>
#include <map>
#include <optional>

#include "verl/cli/option_values.h"
#include "verl/bench/bench_report.h"
#include "verl/bench/generate_bench.h"
#include "verl/bench/ppo_bench.h"
#include "verl/bench/roofline.h"
#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::cli {

const char* const kBenchUsage =
    "usage: verl bench roofline [ROOFLINE OPTIONS] [--json FILE]\n"
    "       verl bench generate [--models NAME,...|--model-dir DIR] [--batches 1,8,64] [--prompt-length 64]\n"
    "                           [--response-length 32] [--greedy] [--repeats 2] [--seed S] [--dtype fp32|bf16]\n"
    "                           [--lora-rank 0] [--lora-alpha 16] [--lora-modes off,merged,side]\n"
    "                           [--quick] [ROOFLINE OPTIONS] [--json FILE]\n"
    "       verl bench ppo [--model NAME|--model-dir DIR] [--batch-size 16] [--n 4] [--prompt-length 64]\n"
    "                      [--prompt-tokens 0] [--response-length 64] [--response-tokens 0]\n"
    "                      [--micro-batch-size 16]\n"
    "                      [--gradient-checkpointing] [--seed S]\n"
    "                      [--repeats 1] [--quick] [ROOFLINE OPTIONS] [--json FILE] [key=value ...]\n"
    "\n"
    "roofline  measures fp32 and bf16 GEMM FLOP/s (torch::mm, all intra-op threads, best of a few sizes) and memory\n"
    "          bandwidth (STREAM-style copy and triad); the other benches measure it too, in the same process,\n"
    "          right before they run, and compare against it.\n"
    "generate  prefill and decode tokens/s of the rollout engine on random weights, beside the roofline bound\n"
    "          (compute: FLOPs per token / GEMM peak; memory: bytes moved per decode step / bandwidth).\n"
    "          Presets: qwen2-25m (25M parameters), qwen2.5-0.5b (Qwen2.5-0.5B's shape), tiny.\n"
    "ppo       one PPO step of a preset (default qwen2-25m) through the real workers: generate, old log-prob,\n"
    "          ref log-prob, values, GAE, update_critic, update_actor; tokens/s and MFU per phase. Extra\n"
    "          verl config overrides (key=value) are applied last. --repeats N > 1: an untimed warm-up step,\n"
    "          then N timed steps; the table shows the fastest, the JSON every step's phase times.\n"
    "          --prompt-tokens K: prompts of K/2..K real tokens left-padded to --prompt-length (a dataset's\n"
    "          batch; tokens and FLOPs count the real tokens). --response-tokens K: each response, generated to\n"
    "          full length, then ends after K/2..K tokens as an EOS would end it (random weights never sample\n"
    "          one), the rest masked, before the training passes.\n"
    "\n"
    "ROOFLINE OPTIONS: --gemm-sizes 256,512,1024,2048  --stream-mib 128 (per array)  --roofline-seconds 0.6\n"
    "                  (per point, split into 5 windows; the best window counts)\n"
    "                  --device cpu|cuda|cuda:N  where every bench runs (on CUDA: GEMMs 2048..8192, 1 GiB\n"
    "                  arrays, bf16 GEMMs too; generate's model in --dtype, ppo's roles with trainer.device=cuda)\n"
    "--quick   small sizes for a smoke run of a few seconds (tiny model, short sequences, short roofline);\n"
    "          options given explicitly still win.\n"
    "--json FILE  appends one JSON record per run to FILE (JSON Lines, rewritten atomically).\n"
    "\n"
    "Threads: OMP_NUM_THREADS (default: all cores). On a shared machine, set OMP_WAIT_POLICY=PASSIVE and read\n"
    "the cpu/wall column: it shows how much CPU the measurement actually got.\n"
    "\n"
    "examples:\n"
    "  verl bench roofline\n"
    "  verl bench generate --models qwen2-25m --batches 1,64 --json bench.jsonl\n"
    "  verl bench ppo --batch-size 8 --n 4\n";

namespace {

constexpr const char* kComponent = "cli";

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  for (const auto& part : split(text, ',')) out.push_back(parse_int_option(flag, part));
  VERL_CHECK(!out.empty(), kComponent, flag, " expects a comma-separated list of integers, got '", text, "'");
  return out;
}

// Options shared by the three benches; each subcommand adds its own flags.
struct CommonFlags {
  std::optional<std::vector<int64_t>> gemm_sizes;
  std::optional<int64_t> stream_mib;
  std::optional<double> roofline_seconds;
  std::string device = "cpu";
  bool quick = false;
  std::string json;

  // Consumes args[i] (and its value) when it is a common flag.
  bool take(const Args& args, size_t& i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      VERL_CHECK(i + 1 < args.size(), kComponent, a, " needs a value");
      return args[++i];
    };
    if (a == "--gemm-sizes") gemm_sizes = parse_int_list(a, value());
    else if (a == "--stream-mib") stream_mib = parse_int_option(a, value());
    else if (a == "--roofline-seconds") roofline_seconds = parse_number_option(a, value());
    else if (a == "--quick") quick = true;
    else if (a == "--device") device = value();
    else if (a == "--json") json = value();
    else return false;
    return true;
  }

  bench::RooflineOptions roofline(bool memory) const {
    bench::RooflineOptions o;
    o.device = device;
    if (device != "cpu") o = bench::cuda_roofline_defaults(o);
    o.memory = memory;
    if (quick) {
      o.gemm_sizes = {64, 128};
      o.stream_elements = int64_t{1} << 20;
      o.seconds_per_point = 0.05;
    }
    if (gemm_sizes) o.gemm_sizes = *gemm_sizes;
    if (stream_mib) {
      VERL_CHECK(*stream_mib > 0, kComponent, "--stream-mib must be positive, got ", *stream_mib);
      o.stream_elements = *stream_mib * (int64_t{1} << 20) / 4;
    }
    if (roofline_seconds) {
      VERL_CHECK(*roofline_seconds > 0, kComponent, "--roofline-seconds must be positive");
      o.seconds_per_point = *roofline_seconds;
    }
    return o;
  }

  void write_json(const nlohmann::json& record) const {
    if (json.empty()) return;
    bench::append_json_record(json, record);
    std::cout << "appended to " << json << "\n";
  }
};

int usage_error(const std::string& message) {
  std::cerr << "error: " << message << "\n" << kBenchUsage;
  return 2;
}

int run_roofline(const Args& args) {
  CommonFlags common;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!common.take(args, i)) return usage_error("unknown option '" + args[i] + "' for verl bench roofline");
  }
  bench::RooflineOptions options = common.roofline(/*memory=*/true);
  options.bf16 = true;  // the standalone roofline also shows what bf16 GEMMs reach on this CPU
  bench::Roofline r = bench::measure_roofline(options);
  std::cout << bench::format_roofline(r);
  nlohmann::json record = {{"bench", "roofline"}, {"timestamp", bench::utc_timestamp()}};
  record.update(bench::to_json(r));
  common.write_json(record);
  return 0;
}

int run_generate(const Args& args) {
  CommonFlags common;
  bench::GenerateBenchOptions o;
  std::optional<std::vector<std::string>> models;
  std::optional<std::vector<int64_t>> batches;
  std::optional<int64_t> prompt_length, response_length;
  for (size_t i = 0; i < args.size(); ++i) {
    if (common.take(args, i)) continue;
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      VERL_CHECK(i + 1 < args.size(), kComponent, a, " needs a value");
      return args[++i];
    };
    if (a == "--models") models = split(value(), ',');
    else if (a == "--model-dir") o.model_dir = value();
    else if (a == "--batches") batches = parse_int_list(a, value());
    else if (a == "--prompt-length") prompt_length = parse_int_option(a, value());
    else if (a == "--response-length") response_length = parse_int_option(a, value());
    else if (a == "--greedy") o.greedy = true;
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--repeats") o.repeats = static_cast<int>(parse_int_option(a, value()));
    else if (a == "--seed") o.seed = static_cast<uint64_t>(parse_int_option(a, value()));
    else if (a == "--lora-rank") o.lora_rank = parse_int_option(a, value());
    else if (a == "--lora-alpha") o.lora_alpha = parse_number_option(a, value());
    else if (a == "--lora-modes") o.lora_modes = split(value(), ',');
    else return usage_error("unknown option '" + a + "' for verl bench generate");
  }
  if (models && !o.model_dir.empty()) return usage_error("give --models or --model-dir, not both");
  if (common.quick) {
    o.models = {"tiny"};
    o.batches = {1, 4};
    o.prompt_length = 8;
    o.response_length = 4;
    o.repeats = 1;
  }
  if (models) o.models = *models;
  if (batches) o.batches = *batches;
  if (prompt_length) o.prompt_length = *prompt_length;
  if (response_length) o.response_length = *response_length;
  o.roofline = common.roofline(/*memory=*/true);
  o.device = common.device;
  bench::GenerateBenchResult r = bench::run_generate_bench(o);
  std::cout << bench::format_generate_bench(r);
  common.write_json(bench::to_json(r));
  return 0;
}

int run_ppo(const Args& args) {
  CommonFlags common;
  bench::PpoBenchOptions o;
  std::map<std::string, int64_t> ints;
  std::optional<std::string> model;
  for (size_t i = 0; i < args.size(); ++i) {
    if (common.take(args, i)) continue;
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      VERL_CHECK(i + 1 < args.size(), kComponent, a, " needs a value");
      return args[++i];
    };
    if (a == "--model") model = value();
    else if (a == "--model-dir") o.model_dir = value();
    else if (a == "--batch-size" || a == "--n" || a == "--prompt-length" || a == "--prompt-tokens" ||
             a == "--response-length" || a == "--response-tokens" || a == "--micro-batch-size" || a == "--seed" ||
             a == "--repeats")
      ints[a] = parse_int_option(a, value());
    else if (a == "--gradient-checkpointing") o.gradient_checkpointing = true;
    else if (a.rfind("--", 0) != 0 && a.find('=') != std::string::npos) o.overrides.push_back(a);
    else return usage_error("unknown option '" + a + "' for verl bench ppo");
  }
  if (model && !o.model_dir.empty()) return usage_error("give --model or --model-dir, not both");
  if (common.quick) {
    o.model = "tiny";
    o.batch_size = 2;
    o.n = 2;
    o.prompt_length = 8;
    o.response_length = 4;
    o.micro_batch_size = 2;
  }
  if (model) o.model = *model;
  if (ints.count("--batch-size")) o.batch_size = ints["--batch-size"];
  if (ints.count("--n")) o.n = ints["--n"];
  if (ints.count("--prompt-length")) o.prompt_length = ints["--prompt-length"];
  if (ints.count("--prompt-tokens")) o.prompt_tokens = ints["--prompt-tokens"];
  if (ints.count("--response-length")) o.response_length = ints["--response-length"];
  if (ints.count("--response-tokens")) o.response_tokens = ints["--response-tokens"];
  if (ints.count("--micro-batch-size")) o.micro_batch_size = ints["--micro-batch-size"];
  if (ints.count("--seed")) o.seed = static_cast<uint64_t>(ints["--seed"]);
  if (ints.count("--repeats")) o.repeats = static_cast<int>(ints["--repeats"]);
  o.roofline = common.roofline(/*memory=*/false);
  o.device = common.device;
  bench::PpoBenchResult r = bench::run_ppo_bench(o);
  std::cout << bench::format_ppo_bench(r);
  common.write_json(bench::to_json(r));
  return 0;
}

}  // namespace

int run_bench_command(const Args& args) {
  if (args.empty()) return usage_error("expected 'verl bench roofline|generate|ppo ...'");
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "roofline") return run_roofline(rest);
  if (args[0] == "generate") return run_generate(rest);
  if (args[0] == "ppo") return run_ppo(rest);
  return usage_error("unknown bench '" + args[0] + "'; expected roofline, generate or ppo");
}

}  // namespace verl::cli
