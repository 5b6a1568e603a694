// verl's arithmetic-sequence / digit-completion toy task data: all prompts, a seeded shuffle, an 80/20 split.
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

std::vector<WriteField> prompt_only_schema() {
  WriteField message{"element", FieldKind::kStruct, true, 0,
                     {WriteField{"content", FieldKind::kString, true, 0, {}},
                      WriteField{"role", FieldKind::kString, true, 0, {}}}};
  return {WriteField{"prompt", FieldKind::kList, true, 0, {message}}};
}

io::Value prompt_row(const std::string& content) {
  io::Struct message{{"content", io::Value(content)}, {"role", io::Value("user")}};
  return io::Value(io::Struct{{"prompt", io::Value(io::List{io::Value(std::move(message))})}});
}

}  // namespace

DigitCompletionSplits digit_completion_splits(uint64_t seed, int max_number, int max_diff, int max_num_in_response) {
  VERL_CHECK(max_number > 0 && max_diff >= 0 && max_num_in_response >= 0, "data",
             "digit_completion needs max_number > 0, max_diff >= 0, max_num_in_response >= 0");
  std::vector<std::string> prompts;
  for (int a = 0; a <= max_number; ++a) {
    for (int diff = 0; diff <= max_diff; ++diff) {
      int b = (a + diff) % max_number;
      for (int k = 0; k <= max_num_in_response; ++k) {
        prompts.push_back(std::to_string(a) + "," + std::to_string(b) + ":" + std::to_string(max_number) + "," +
                          std::to_string(k));
      }
    }
  }
  // Fisher-Yates with a fixed 64-bit LCG so the split is the same on every platform.
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  for (size_t i = prompts.size(); i > 1; --i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t j = static_cast<size_t>((state >> 33) % i);
    std::swap(prompts[i - 1], prompts[j]);
  }
  const size_t train_size = prompts.size() * 8 / 10;
  DigitCompletionSplits splits;
  splits.train.schema = prompt_only_schema();
  splits.test.schema = prompt_only_schema();
  for (size_t i = 0; i < prompts.size(); ++i) {
    (i < train_size ? splits.train : splits.test).rows.push_back(prompt_row(prompts[i]));
  }
  return splits;
}

}  // namespace verl::data
