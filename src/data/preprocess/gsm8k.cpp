// examples/data_preprocess/gsm8k.py: question + instruction as one user message, ground truth from "#### N".
#include <regex>

#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

const char* const kGsm8kDataSource = "openai/gsm8k";
const char* const kGsm8kInstruction = "Let's think step by step and output the final answer after \"####\".";

WriteField string_field(const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; }

// Struct fields in the order verl's files carry them (the order datasets/pyarrow wrote:
// sorted by name inside structs).
std::vector<WriteField> gsm8k_schema() {
  WriteField message{"element", FieldKind::kStruct, true, 0, {string_field("content"), string_field("role")}};
  return {
      string_field("data_source"),
      WriteField{"prompt", FieldKind::kList, true, 0, {message}},
      string_field("ability"),
      WriteField{"reward_model", FieldKind::kStruct, true, 0, {string_field("ground_truth"), string_field("style")}},
      WriteField{"extra_info",
                 FieldKind::kStruct,
                 true,
                 0,
                 {string_field("answer"), WriteField{"index", FieldKind::kInt64, true, 0, {}}, string_field("question"),
                  string_field("split")}},
  };
}

const std::string& text_field(const io::Value& row, const char* key, const std::string& where, size_t line) {
  const io::Value* v = row.find(key);
  VERL_CHECK(v != nullptr && v->is_string(), "data", where, ": row ", line, " has no string field '", key, "'");
  return v->as_string();
}

}  // namespace

std::string gsm8k_extract_solution(const std::string& answer) {
  static const std::regex pattern("#### (\\-?[0-9\\.\\,]+)");
  std::smatch match;
  VERL_CHECK(std::regex_search(answer, match, pattern), "data", "gsm8k answer without '#### N': ", answer.substr(0, 80));
  std::string solution = match[1].str();
  std::string out;
  for (char c : solution) {
    if (c != ',') out += c;
  }
  return out;
}

PreprocessedDataset preprocess_gsm8k(const std::vector<io::Value>& source, const std::string& split,
                                     const std::string& where) {
  PreprocessedDataset result;
  result.schema = gsm8k_schema();
  result.rows.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    const std::string& question_raw = text_field(source[i], "question", where, i);
    const std::string& answer_raw = text_field(source[i], "answer", where, i);
    std::string solution;
    try {
      solution = gsm8k_extract_solution(answer_raw);
    } catch (const Error& e) {
      VERL_FAIL("data", where, ": row ", i, ": ", e.message());
    }
    io::Struct message{{"content", io::Value(question_raw + " " + kGsm8kInstruction)}, {"role", io::Value("user")}};
    io::Struct row{
        {"data_source", io::Value(kGsm8kDataSource)},
        {"prompt", io::Value(io::List{io::Value(std::move(message))})},
        {"ability", io::Value("math")},
        {"reward_model", io::Value(io::Struct{{"ground_truth", io::Value(solution)}, {"style", io::Value("rule")}})},
        {"extra_info", io::Value(io::Struct{{"answer", io::Value(answer_raw)},
                                            {"index", io::Value(static_cast<int64_t>(i))},
                                            {"question", io::Value(question_raw)},
                                            {"split", io::Value(split)}})},
    };
    result.rows.emplace_back(std::move(row));
  }
  return result;
}

}  // namespace verl::data
