// examples/data_preprocess/math_dataset.py: problem + instruction as one user message, ground truth from the
// solution's last \boxed{...}. Source columns other than problem / solution stay, ahead of verl's columns
// (datasets.map keeps them).
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

const char* const kMathDataSource = "DigitalLearningGmbH/MATH-lighteval";
const char* const kMathInstruction = "Let's think step by step and output the final answer within \\boxed{}.";

WriteField string_field(const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; }

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

bool math_last_boxed_only_string(const std::string& text, std::string& boxed) {
  size_t idx = text.rfind("\\boxed");
  const std::string spaced = "\\boxed ";
  size_t spaced_at = text.rfind(spaced);
  if (spaced_at != std::string::npos) {
    // "\boxed " + the text after the last "\boxed " up to the first '$'.
    std::string rest = text.substr(spaced_at + spaced.size());
    boxed = spaced + rest.substr(0, rest.find('$'));
    return true;
  }
  if (idx == std::string::npos) {
    idx = text.rfind("\\fbox");
    if (idx == std::string::npos) return false;
  }
  int open = 0;
  for (size_t i = idx; i < text.size(); ++i) {
    if (text[i] == '{') ++open;
    if (text[i] == '}') {
      --open;
      if (open == 0) {
        boxed = text.substr(idx, i + 1 - idx);
        return true;
      }
    }
  }
  return false;
}

std::string math_remove_boxed(const std::string& boxed) {
  if (boxed.find("\\boxed ") != std::string::npos) {
    VERL_CHECK(starts_with(boxed, "\\boxed "), "data", "remove_boxed: '", boxed, "' does not start with \\boxed ");
    return boxed.substr(7);
  }
  VERL_CHECK(starts_with(boxed, "\\boxed{") && !boxed.empty() && boxed.back() == '}', "data", "remove_boxed: '",
             boxed, "' is not \\boxed{...}");
  return boxed.substr(7, boxed.size() - 8);
}

PreprocessedDataset preprocess_math(const std::vector<io::Value>& source, const std::string& split,
                                    const std::string& where) {
  PreprocessedDataset result;
  // Kept source columns, in source order (taken from the first row; every row must have the same keys).
  std::vector<std::string> kept;
  if (!source.empty()) {
    VERL_CHECK(source[0].is_struct(), "data", where, ": row 0 is not an object");
    for (const auto& field : source[0].as_struct()) {
      if (field.first != "problem" && field.first != "solution") kept.push_back(field.first);
    }
  }
  for (const auto& name : kept) result.schema.push_back(string_field(name));
  WriteField message{"element", FieldKind::kStruct, true, 0, {string_field("content"), string_field("role")}};
  result.schema.push_back(string_field("data_source"));
  result.schema.push_back(WriteField{"prompt", FieldKind::kList, true, 0, {message}});
  result.schema.push_back(string_field("ability"));
  result.schema.push_back(
      WriteField{"reward_model", FieldKind::kStruct, true, 0, {string_field("ground_truth"), string_field("style")}});
  result.schema.push_back(WriteField{
      "extra_info", FieldKind::kStruct, true, 0, {WriteField{"index", FieldKind::kInt64, true, 0, {}}, string_field("split")}});

  for (size_t i = 0; i < source.size(); ++i) {
    const io::Value& in = source[i];
    VERL_CHECK(in.is_struct(), "data", where, ": row ", i, " is not an object");
    const io::Value* problem = in.find("problem");
    const io::Value* solution = in.find("solution");
    VERL_CHECK(problem && problem->is_string() && solution && solution->is_string(), "data", where, ": row ", i,
               " needs string fields 'problem' and 'solution'");
    std::string boxed;
    VERL_CHECK(math_last_boxed_only_string(solution->as_string(), boxed), "data", where, ": row ", i,
               ": solution has no \\boxed{...}");
    std::string ground_truth;
    try {
      ground_truth = math_remove_boxed(boxed);
    } catch (const Error& e) {
      VERL_FAIL("data", where, ": row ", i, ": ", e.message());
    }
    io::Struct row;
    for (const auto& name : kept) {
      const io::Value* v = in.find(name);
      VERL_CHECK(v == nullptr || v->is_null() || v->is_string(), "data", where, ": row ", i, " field '", name,
                 "' is not a string");
      row.emplace_back(name, v ? *v : io::Value());
    }
    io::Struct message_row{{"content", io::Value(problem->as_string() + " " + kMathInstruction)},
                           {"role", io::Value("user")}};
    row.emplace_back("data_source", io::Value(kMathDataSource));
    row.emplace_back("prompt", io::Value(io::List{io::Value(std::move(message_row))}));
    row.emplace_back("ability", io::Value("math"));
    row.emplace_back("reward_model",
                     io::Value(io::Struct{{"ground_truth", io::Value(ground_truth)}, {"style", io::Value("rule")}}));
    row.emplace_back("extra_info", io::Value(io::Struct{{"index", io::Value(static_cast<int64_t>(i))},
                                                        {"split", io::Value(split)}}));
    result.rows.emplace_back(std::move(row));
  }
  return result;
}

}  // namespace verl::data
