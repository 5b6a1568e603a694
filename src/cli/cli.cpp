#include "verl/cli/cli.h"

#include <algorithm>
#include <exception>
#include <iostream>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/reward/scorers/reward_worker_pool.h"
#include "verl/runtime/cpu_threads.h"
#include "verl/runtime/environment_report.h"
#include "verl/runtime/heap_reuse.h"

namespace verl::cli {

const std::vector<Command>& command_table() {
  static const std::vector<Command> table = {
      {"config", "Show the resolved config (defaults + --config FILE + key=value overrides)", kConfigUsage,
       run_config_command},
      {"score", "Score responses with verl's rule rewards (gsm8k, MATH, math_dapo, ...) from a JSONL file", kScoreUsage,
       run_score_command},
      {"data", "Show, convert and build datasets (parquet, JSONL)", kDataUsage, run_data_command},
      {"tokenize", "Text on stdin -> JSON token ids (--tokenizer DIR)", kTokenizeUsage, run_tokenize_command},
      {"detokenize", "JSON token ids on stdin -> text (--tokenizer DIR)", kDetokenizeUsage, run_detokenize_command},
      {"chat-template", "Render a model's chat template for messages (--tokenizer DIR --messages FILE)",
       kChatTemplateUsage, run_chat_template_command},
      {"model", "Create a random-init HF model folder, or run a forward pass to logits", kModelUsage,
       run_model_command},
      {"report", "Rebuild a run's HTML report (SVG charts) from RUN_DIR/metrics.jsonl", kReportUsage,
       run_report_command},
      {"sft", "Supervised fine-tuning (verl's fsdp_sft_trainer keys, or --config-name sft_trainer_engine)", kSftUsage,
       run_sft_command},
      {"demo", "The embedded default: arithmetic data, tiny model, SFT warm start, then RL", kDemoUsage,
       run_demo_command},
      {"train", "PPO-family RL training (verl's main_ppo): --config FILE and key=value overrides", kTrainUsage,
       run_train_command},
      {"generate", "Responses for a dataset's prompts (chat template, verl's rollout keys) to JSONL", kGenerateUsage,
       run_generate_command},
      {"env", "What this binary runs on: LibTorch, BLAS, CUDA and its devices, MPI, threads (also --version)",
       kEnvUsage, run_env_command},
      {"bench", "Measure the machine (GEMM peak, bandwidth), rollout throughput and a PPO step's MFU", kBenchUsage,
       run_bench_command},
  };
  return table;
}

namespace {

void print_main_help(std::ostream& out) {
  out << "verl.cpp " << VERL_VERSION << ": RL post-training for LLMs (PPO, GRPO and relatives), verl's keys in C++\n\n"
      << "usage: verl <command> [options]\n"
      << "       verl <command> --help\n"
      << "       verl --version\n\n"
      << "commands:\n";
  size_t width = 0;
  for (const auto& command : command_table()) width = std::max(width, std::string(command.name).size());
  for (const auto& command : command_table()) {
    std::string name = command.name;
    out << "  " << name << std::string(width - name.size() + 2, ' ') << command.summary << "\n";
  }
  out << "\nenvironment: VERL_LOG_LEVEL=debug|info|warn|error, OMP_NUM_THREADS=N, VERL_HEAP_REUSE=0 (hand freed\n"
      << "             tensor memory back to the kernel at once: slower, see docs/architecture.md)\n";
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& command : command_table()) names.push_back(command.name);
  return names;
}

}  // namespace

const char* const kEnvUsage =
    "usage: verl env [--json]\n\n"
    "Prints what this binary runs on: the LibTorch it loaded (version, path), its CPU kernels, BLAS and oneDNN,\n"
    "whether CUDA is compiled in and how many devices are visible (CUDA_VISIBLE_DEVICES applies), the MPI library,\n"
    "the intra-op threads (OMP_NUM_THREADS, else all cores) and the embedded Python. --json: one JSON object.\n";

int run_env_command(const Args& args) {
  bool as_json = false;
  for (const auto& arg : args) {
    VERL_CHECK(arg == "--json", "env", "unknown option '", arg, "' (expected --json)");
    as_json = true;
  }
  const runtime::EnvironmentReport report = runtime::read_environment_report();
  std::cout << (as_json ? report.to_json().dump() + "\n" : report.to_text());
  return 0;
}

int main_entry(int argc, char** argv) {
  try {
    init_logging_from_env();
    Args args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      if (args.size() >= 2 && args[0] == "help") {
        for (const auto& command : command_table()) {
          if (args[1] == command.name) {
            std::cout << command.usage;
            return 0;
          }
        }
      }
      print_main_help(args.empty() ? std::cerr : std::cout);
      return args.empty() ? 2 : 0;
    }
    if (args[0] == "--version" || args[0] == "version") {
      runtime::configure_cpu_threads(std::nullopt);
      std::cout << runtime::read_environment_report().to_text();
      return 0;
    }
    // The remote reward manager's worker processes (reward/scorers/reward_worker_pool.h); not a user command.
    if (args[0] == "_reward-worker") return reward::serve_reward_worker(Args(args.begin() + 1, args.end()));
    for (const auto& command : command_table()) {
      if (args[0] != command.name) continue;
      Args rest(args.begin() + 1, args.end());
      for (const auto& arg : rest) {
        if (arg == "--help" || arg == "-h") {
          std::cout << command.usage;
          return 0;
        }
      }
      runtime::configure_cpu_threads(std::nullopt);
      runtime::configure_heap_reuse();
      return command.run(rest);
    }
    std::string near = closest_match(args[0], command_names());
    std::cerr << "error: unknown command '" << args[0] << "'"
              << (near.empty() ? "" : "; did you mean '" + near + "'?") << " valid commands: "
              << join(command_names(), ", ") << " (see verl --help)\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace verl::cli
