// The `verl` command line: one table of subcommands (name, one-line summary, usage, entry point).
// Each subcommand lives in its own src/cli/cmd_<name>.cpp.
#pragma once

#include <string>
#include <vector>

namespace verl::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;  // one line for `verl --help`
  const char* usage;    // full text for `verl <name> --help`
  int (*run)(const Args& args);
};

const std::vector<Command>& command_table();

// Runs the CLI. Errors thrown by commands become one `error: ...` line on stderr and exit code 1;
// usage mistakes exit 2.
int main_entry(int argc, char** argv);

// Subcommand entry points (declared here so the table in cli.cpp is the only place that lists them).
int run_config_command(const Args& args);
extern const char* const kConfigUsage;
int run_score_command(const Args& args);
extern const char* const kScoreUsage;
int run_data_command(const Args& args);
extern const char* const kDataUsage;
int run_tokenize_command(const Args& args);
int run_detokenize_command(const Args& args);
int run_chat_template_command(const Args& args);
extern const char* const kTokenizeUsage, *const kDetokenizeUsage, *const kChatTemplateUsage;
int run_model_command(const Args& args);
extern const char* const kModelUsage;
int run_report_command(const Args& args);
extern const char* const kReportUsage;
int run_sft_command(const Args& args);
int run_demo_command(const Args& args);
extern const char* const kSftUsage, *const kDemoUsage;
int run_train_command(const Args& args);
extern const char* const kTrainUsage;
int run_generate_command(const Args& args);
extern const char* const kGenerateUsage;
int run_env_command(const Args& args);
extern const char* const kEnvUsage;
int run_bench_command(const Args& args);
extern const char* const kBenchUsage;

}  // namespace verl::cli
