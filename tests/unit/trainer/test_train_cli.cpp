// `verl train` misconfigurations fail before any weights load, with one clear line on stderr.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& train_cli_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("train_cli_setup"), 8);
  return instance;
}

CommandResult train_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> all = train_cli_setup().base_overrides(make_temp_dir("train_cli_run"));
  all.insert(all.end(), overrides.begin(), overrides.end());
  // VERL_LOG_LEVEL=warn: the one error line is all stderr should hold.
  return run_command("VERL_LOG_LEVEL=warn " + verl_train_command(all));
}

void train_cli_expect_one_line_error(const CommandResult& result, const std::string& fragment) {
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.err.rfind("error: ", 0), 0u) << result.err;
  EXPECT_NE(result.err.find(fragment), std::string::npos) << result.err;
}

TEST(TrainCli, PastedVerlLaunchPrefixIsIgnored) {
  // verl's launch line pasted as is: the prefix goes with one info line, the overrides after it are read.
  for (const std::string python : {"python3", "python"}) {
    const CommandResult result = run_command(verl_binary() + " train " + python +
                                             " -m verl.trainer.main_ppo data.train_batch_size=0");
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_NE(result.err.find("ignoring the pasted launch prefix '" + python + " -m verl.trainer.main_ppo'"),
              std::string::npos) << result.err;
    EXPECT_NE(result.err.find("data.train_batch_size"), std::string::npos) << result.err;
  }
  // Anywhere else the tokens are still unexpected arguments.
  const CommandResult late = run_command(verl_binary() + " train data.train_batch_size=8 python3 -m x");
  EXPECT_NE(late.err.find("unexpected argument 'python3'"), std::string::npos) << late.err;
}

TEST(TrainCli, BatchSizeThatDoesNotDivideOverDevices) {
  train_cli_expect_one_line_error(
      train_with({"trainer.n_gpus_per_node=3"}),
      "data.train_batch_size (8) x actor_rollout_ref.rollout.n (1) = 8 responses per step must be "
      "divisible by the 3 devices");
}

TEST(TrainCli, MissingDataFile) {
  train_cli_expect_one_line_error(train_with({"data.train_files=/nonexistent/train.parquet"}),
                                  "data.train_files: '/nonexistent/train.parquet' does not exist");
}

TEST(TrainCli, TokenizerLargerThanTheModelVocabulary) {
  const std::string dir = make_temp_dir("train_cli_small_vocab");
  CommandResult init = run_command(verl_binary() + " model init --arch llama --out '" + dir +
                                   "/model' --vocab-size 8 --hidden-size 16 --num-layers 1 --num-heads 2 "
                                   "--num-kv-heads 2 --intermediate-size 32 --tokenizer '" +
                                   train_cli_setup().dir + "/tok'");
  ASSERT_EQ(init.exit_code, 0) << init.err;
  train_cli_expect_one_line_error(train_with({"actor_rollout_ref.model.path=" + dir + "/model"}),
                                  "has 16 tokens but the model's vocab_size is 8");
}

TEST(TrainCli, UnknownLogger) {
  train_cli_expect_one_line_error(train_with({"trainer.logger=[console,wandb]"}), "trainer.logger");
}

TEST(TrainCli, MissingModelFolder) {
  train_cli_expect_one_line_error(train_with({"critic.model.path=/nonexistent/critic"}),
                                  "critic.model.path='/nonexistent/critic' is not a Hugging Face model folder");
}

}  // namespace
}  // namespace verl::test
