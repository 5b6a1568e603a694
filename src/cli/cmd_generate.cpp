// `verl generate --model DIR --data FILE --output OUT.jsonl [key=value ...]`: verl's main_generation.
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/cli/option_values.h"
#include "verl/common/error.h"
#include "verl/common/progress.h"
#include "verl/common/strings.h"
#include "verl/trainer/main_generation.h"

namespace verl::cli {

const char* const kGenerateUsage =
    "usage: verl generate --model DIR --data FILE [--data FILE ...] --output OUT.jsonl [--batch-size 16]\n"
    "                     [key=value ...]\n"
    "\n"
    "Generates responses for a dataset's prompts with the rollout engine the trainer uses. Prompts go through\n"
    "RLHFDataset like training prompts: the model's chat template with the generation prompt over the\n"
    "data.prompt_key messages, data.truncation, data.filter_overlong_prompts. Each response is one line of\n"
    "OUT.jsonl (written atomically when all are done):\n"
    "  {\"row\", \"sample\", \"prompt\", \"prompt_ids\", \"response\", \"response_ids\", \"finish_reason\": \"stop\"|\"length\",\n"
    "   \"response_log_probs\" (with calculate_log_probs), \"data\": {the row's other columns}}\n"
    "\n"
    "Settings are verl's config keys (defaults as in training: temperature 1, n 1, 512 + 512 tokens):\n"
    "  data.prompt_key  data.max_prompt_length  data.max_response_length  data.truncation\n"
    "  data.filter_overlong_prompts  data.apply_chat_template_kwargs(.KEY)\n"
    "  actor_rollout_ref.rollout.{n, temperature, top_k, top_p, do_sample, response_length, ignore_eos,\n"
    "                             calculate_log_probs, seed, max_num_seqs}\n"
    "  multi-turn (docs/multi_turn.md): actor_rollout_ref.rollout.multi_turn.* (enable=true runs verl's tool\n"
    "  agent loop; each line then adds \"messages\" (the whole conversation), \"num_turns\", \"tool_call_counts\",\n"
    "  \"reward_scores\"), actor_rollout_ref.rollout.agent.default_agent_loop, data.return_raw_chat\n"
    "Other keys are rejected. do_sample=false or temperature=0 is greedy decoding. The same settings, files\n"
    "and --batch-size (prompts per engine call) reproduce the same output.\n"
    "\n"
    "example:\n"
    "  verl generate --model models/tiny --data data/test.parquet --output out.jsonl \\\n"
    "      actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.temperature=0.7 data.max_response_length=64\n";

int run_generate_command(const Args& args) {
  trainer::GenerationOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      VERL_CHECK(i + 1 < args.size(), "cli", a, " needs a value");
      return args[++i];
    };
    if (a == "--model") o.model_dir = value();
    else if (a == "--data") o.data_files.push_back(value());
    else if (a == "--output") o.output_path = value();
    else if (a == "--batch-size") o.batch_size = parse_int_option(a, value());
    else if (a.rfind("--", 0) != 0 && a.find('=') != std::string::npos) {
      o.overrides.push_back(a);
    } else {
      std::cerr << "error: unexpected argument '" << a << "' for verl generate\n" << kGenerateUsage;
      return 2;
    }
  }
  if (o.model_dir.empty() || o.data_files.empty() || o.output_path.empty()) {
    std::cerr << "error: verl generate needs --model, --data and --output\n" << kGenerateUsage;
    return 2;
  }
  trainer::GenerationSummary s = trainer::run_generation(o);
  std::cout << "wrote " << s.responses << " responses for " << s.prompts << " prompts to " << o.output_path << " ("
            << s.response_tokens << " tokens in " << format_duration(s.seconds) << ", "
            << format_rate(s.seconds > 0 ? static_cast<double>(s.response_tokens) / s.seconds : 0) << " tok/s)\n";
  return 0;
}

}  // namespace verl::cli
