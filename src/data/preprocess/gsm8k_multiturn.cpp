// verl's multi-turn GSM8K datasets: examples/data_preprocess/gsm8k_multiturn_w_tool.py (a system and a user
// message, the calc_gsm8k_reward tool's create_kwargs, interaction_kwargs) and gsm8k_multiturn_w_interaction.py
// (interaction_kwargs naming the "gsm8k" interaction). Columns and struct fields in the order the scripts'
// dicts give them (the order datasets writes).
#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

const char* const kDataSource = "openai/gsm8k";
// Both scripts' instruction (backquotes, unlike gsm8k.py's double quotes).
const char* const kInstruction = "Let's think step by step and output the final answer after `####`.";

const char* const kToolSystemPrompt =
    "You are a math expert. You are given a question and you need to solve it step by step. "
    "Reasoning step by step before any tool call. "
    "You should use the `calc_gsm8k_reward` tool after step by step solving the question, "
    "before generate final answer at least once and refine your answer if necessary. "
    "Put your final answer in the format of `#### <answer>`.";

const char* const kInteractionSystemPrompt =
    "You are a math expert. You are given a question and you need to solve it step by step. "
    "You should rethinking carefully if user point out your answer is wrong. "
    "Put your final answer in the format of `#### <answer>`.";

WriteField string_field(const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; }
WriteField struct_field(const std::string& name, std::vector<WriteField> children) {
  return WriteField{name, FieldKind::kStruct, true, 0, std::move(children)};
}

enum class Variant { kTool, kInteraction };

std::vector<WriteField> schema(Variant variant) {
  WriteField message = struct_field("element", {string_field("role"), string_field("content")});
  std::vector<WriteField> extra = {string_field("split"), WriteField{"index", FieldKind::kInt64, true, 0, {}},
                                   string_field("answer"), string_field("question")};
  if (variant == Variant::kTool) {
    extra.push_back(WriteField{"need_tools_kwargs", FieldKind::kBool, true, 0, {}});
    extra.push_back(struct_field(
        "tools_kwargs",
        {struct_field("calc_gsm8k_reward", {struct_field("create_kwargs", {string_field("ground_truth")})})}));
    extra.push_back(struct_field("interaction_kwargs", {string_field("query"), string_field("ground_truth")}));
  } else {
    extra.push_back(
        struct_field("interaction_kwargs", {string_field("name"), string_field("query"), string_field("ground_truth")}));
  }
  return {string_field("data_source"),
          WriteField{"prompt", FieldKind::kList, true, 0, {message}},
          string_field("ability"),
          struct_field("reward_model", {string_field("style"), string_field("ground_truth")}),
          struct_field("extra_info", std::move(extra))};
}

const std::string& text_field(const io::Value& row, const char* key, const std::string& where, size_t line) {
  const io::Value* v = row.find(key);
  VERL_CHECK(v != nullptr && v->is_string(), "data", where, ": row ", line, " has no string field '", key, "'");
  return v->as_string();
}

io::Value message(const char* role, const std::string& content) {
  return io::Value(io::Struct{{"role", io::Value(role)}, {"content", io::Value(content)}});
}

PreprocessedDataset preprocess(Variant variant, const std::vector<io::Value>& source, const std::string& split,
                               const std::string& where) {
  PreprocessedDataset result;
  result.schema = schema(variant);
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
    const std::string question = question_raw + " " + kInstruction;
    io::Struct extra{{"split", io::Value(split)},
                     {"index", io::Value(static_cast<int64_t>(i))},
                     {"answer", io::Value(answer_raw)},
                     {"question", io::Value(question_raw)}};
    if (variant == Variant::kTool) {
      io::Struct create_kwargs{{"ground_truth", io::Value(solution)}};
      io::Struct tool{{"create_kwargs", io::Value(std::move(create_kwargs))}};
      extra.emplace_back("need_tools_kwargs", io::Value(true));
      extra.emplace_back("tools_kwargs", io::Value(io::Struct{{"calc_gsm8k_reward", io::Value(std::move(tool))}}));
      extra.emplace_back("interaction_kwargs",
                         io::Value(io::Struct{{"query", io::Value(question)}, {"ground_truth", io::Value(solution)}}));
    } else {
      extra.emplace_back("interaction_kwargs", io::Value(io::Struct{{"name", io::Value("gsm8k")},
                                                                    {"query", io::Value(question)},
                                                                    {"ground_truth", io::Value(solution)}}));
    }
    const char* system = variant == Variant::kTool ? kToolSystemPrompt : kInteractionSystemPrompt;
    io::Struct row{
        {"data_source", io::Value(kDataSource)},
        {"prompt", io::Value(io::List{message("system", system), message("user", question)})},
        {"ability", io::Value("math")},
        {"reward_model", io::Value(io::Struct{{"style", io::Value("rule")}, {"ground_truth", io::Value(solution)}})},
        {"extra_info", io::Value(std::move(extra))},
    };
    result.rows.emplace_back(std::move(row));
  }
  return result;
}

}  // namespace

PreprocessedDataset preprocess_gsm8k_multiturn_w_tool(const std::vector<io::Value>& source, const std::string& split,
                                                      const std::string& where) {
  return preprocess(Variant::kTool, source, split, where);
}

PreprocessedDataset preprocess_gsm8k_multiturn_w_interaction(const std::vector<io::Value>& source,
                                                             const std::string& split, const std::string& where) {
  return preprocess(Variant::kInteraction, source, split, where);
}

}  // namespace verl::data
