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

DigitCompletionSplits with_digit_completion_reward_columns(const DigitCompletionSplits& splits) {
  auto string_field = [](const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; };
  std::vector<WriteField> schema = prompt_only_schema();
  schema.push_back(string_field("data_source"));
  schema.push_back(WriteField{"reward_model", FieldKind::kStruct, true, 0,
                              {string_field("ground_truth"), string_field("style")}});
  auto convert = [&](const PreprocessedDataset& in) {
    PreprocessedDataset out;
    out.schema = schema;
    for (const auto& row : in.rows) {
      const io::Value& prompt = *row.find("prompt");
      const std::string& content = prompt.as_list().at(0).find("content")->as_string();
      out.rows.push_back(io::Value(io::Struct{
          {"prompt", prompt},
          {"data_source", io::Value("digit_completion")},
          {"reward_model", io::Value(io::Struct{{"ground_truth", io::Value(content)}, {"style", io::Value("rule")}})}}));
    }
    return out;
  };
  return DigitCompletionSplits{convert(splits.train), convert(splits.test)};
}

}  // namespace verl::data
