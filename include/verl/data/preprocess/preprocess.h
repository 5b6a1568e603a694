// verl's example dataset builders (examples/data_preprocess/gsm8k.py, math_dataset.py), torch-free: source
// JSONL rows in, verl-format rows out (data_source, prompt, ability, reward_model, extra_info).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verl/io/parquet/writer.h"
#include "verl/io/value.h"

namespace verl::data {

struct PreprocessedDataset {
  std::vector<io::Value> rows;
  std::vector<io::parquet::WriteField> schema;
};

// The dataset names preprocess_dataset accepts.
const std::vector<std::string>& preprocess_dataset_names();
// Fails (listing the valid names) unless `dataset` is one of them.
void check_preprocess_dataset(const std::string& dataset);

// `dataset`: "gsm8k" or "math" (an unknown name is an error listing both). `where` names the input in errors.
PreprocessedDataset preprocess_dataset(const std::string& dataset, const std::vector<io::Value>& source,
                                       const std::string& split, const std::string& where);

// gsm8k: ground truth from the first "#### N" in the answer, commas removed (verl's extract_solution).
std::string gsm8k_extract_solution(const std::string& answer);
PreprocessedDataset preprocess_gsm8k(const std::vector<io::Value>& source, const std::string& split,
                                     const std::string& where);

// MATH: verl's last_boxed_only_string (empty optional when none) and remove_boxed.
bool math_last_boxed_only_string(const std::string& text, std::string& boxed);
std::string math_remove_boxed(const std::string& boxed);
PreprocessedDataset preprocess_math(const std::vector<io::Value>& source, const std::string& split,
                                    const std::string& where);

// verl's digit-completion toy task (tests/special_e2e/envs/digit_completion): every prompt
// "{a},{b}:{max_number},{k}" for a in [0, max_number], diff in [0, max_diff], k in [0, max_num_in_response],
// b = (a + diff) % max_number, as a one-message `prompt` column; shuffled with `seed` and split 80/20.
struct DigitCompletionSplits {
  PreprocessedDataset train, test;
};
DigitCompletionSplits digit_completion_splits(uint64_t seed, int max_number = 9, int max_diff = 9,
                                              int max_num_in_response = 9);

}  // namespace verl::data
