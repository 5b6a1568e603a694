#include "verl/data/preprocess/preprocess.h"

#include <algorithm>
#include <filesystem>

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::data {

const std::vector<std::string>& preprocess_dataset_names() {
  static const std::vector<std::string> names = {
      "gsm8k", "math", "digit_completion", "arithmetic", "gsm8k_multiturn_w_tool", "gsm8k_multiturn_w_interaction",
      "arithmetic_tool"};
  return names;
}

void check_preprocess_dataset(const std::string& dataset) {
  const auto& names = preprocess_dataset_names();
  VERL_CHECK(contains(names, dataset), "data", "unknown dataset '", dataset, "'; valid: ", join(names, ", "));
}

PreprocessedDataset preprocess_dataset(const std::string& dataset, const std::vector<io::Value>& source,
                                       const std::string& split, const std::string& where) {
  if (dataset == "gsm8k") return preprocess_gsm8k(source, split, where);
  if (dataset == "gsm8k_multiturn_w_tool") return preprocess_gsm8k_multiturn_w_tool(source, split, where);
  if (dataset == "gsm8k_multiturn_w_interaction") return preprocess_gsm8k_multiturn_w_interaction(source, split, where);
  if (dataset == "math") return preprocess_math(source, split, where);
  check_preprocess_dataset(dataset);
  VERL_FAIL("data", "dataset '", dataset, "' is generated, not read from --input: use --output-dir");
}

void write_parquet_splits(const std::string& dir,
                          const std::vector<std::pair<std::string, const PreprocessedDataset*>>& splits) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  VERL_CHECK(!ec, "data", dir, ": cannot create folder (", ec.message(), ")");
  for (const auto& [name, split] : splits) {
    io::parquet::write_parquet(dir + "/" + name + ".parquet", split->rows, split->schema);
  }
}

void write_rl_and_sft_splits(const std::string& dir, const RlAndSftSplits& splits) {
  write_parquet_splits(dir, {{"train", &splits.train},
                             {"test", &splits.test},
                             {"sft_train", &splits.sft_train},
                             {"sft_val", &splits.sft_val}});
}

}  // namespace verl::data
