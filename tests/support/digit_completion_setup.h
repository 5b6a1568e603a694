// Test helper: everything a `verl train` run on verl's digit-completion task needs, made with the binary:
//   DIR/raw/{train,test}.parquet   `verl data preprocess digit_completion --seed 0` (prompt column only, as verl)
//   DIR/data/{train,test}.jsonl    the same prompts with data_source "digit_completion" and
//                                  reward_model.ground_truth = the prompt (the scorer derives the answer)
//   DIR/model                      `verl model init --arch llama` with the char tokenizer (support/char_tokenizer.h)
//                                  and its special ids (bos S=0, eos E=1, pad P=2)
#pragma once

#include <string>
#include <vector>

#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {

struct DigitCompletionSetup {
  std::string dir, train_file, val_file, model_dir;
  // data.*, model paths and small batch sizes for one CPU process (append your own overrides after these).
  std::vector<std::string> base_overrides(const std::string& run_dir) const;
};

// val_rows: how many test prompts to keep (validation cost); the model's shape (intermediate_size 0: twice the
// hidden size; verl's own run: hidden 128, 4 layers, 4 heads, intermediate 344). Throws when a command fails.
DigitCompletionSetup make_digit_completion_setup(const std::string& dir, int val_rows = 32, int hidden_size = 32,
                                                 int num_layers = 1, int num_heads = 2, int intermediate_size = 0);

// Another model for the setup's tokenizer and task: `verl model init <init_flags>` (arch and shape; vocabulary 16
// and seed 1 are given here) in DIR/<name>, with the setup's special ids. Returns the folder.
std::string make_digit_completion_model(const DigitCompletionSetup& setup, const std::string& name,
                                        const std::string& init_flags);

// A distillation teacher for the setup: `model_dir`'s network with its LM head (the tied embedding when there is
// none) times `sharpen`, saved in a fresh temp folder `name` (a sharper distribution over the same vocabulary).
std::string make_sharpened_teacher(const std::string& model_dir, double sharpen, const std::string& name);

// "verl train <overrides...>" quoted for the shell.
std::string verl_train_command(const std::vector<std::string>& overrides);

// One `verl train` run: its exit and output, and RUN_DIR/metrics.jsonl when it exited 0 (empty otherwise).
struct TrainRun {
  CommandResult result;
  trainer::MetricHistory history;
};
TrainRun run_verl_train(const std::vector<std::string>& overrides, const std::string& run_dir);

}  // namespace verl::test
