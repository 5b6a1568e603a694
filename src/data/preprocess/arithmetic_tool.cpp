// The `arithmetic_tool` synthetic task: "a*b+c" problems a tiny model cannot compute in its head but can with a
// calculator tool (every number and answer below 1000: one token each for the demo tokenizer). RL splits in verl's
// multi-turn layout (gsm8k_multiturn_w_tool's columns), SFT splits mixing tool transcripts with direct answers.
#include <set>
#include <tuple>

#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "seeded_draws.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

const char* const kDataSource = "arithmetic";  // scored by the GSM8K rule, as the `arithmetic` task
const char* const kSystemPrompt = "Use the calculator for arithmetic.";

WriteField string_field(const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; }
WriteField struct_field(const std::string& name, std::vector<WriteField> children) {
  return WriteField{name, FieldKind::kStruct, true, 0, std::move(children)};
}
WriteField messages_field(const std::string& name) {
  return WriteField{name, FieldKind::kList, true, 0,
                    {struct_field("element", {string_field("role"), string_field("content")})}};
}

WriteField reward_model_field() {
  return struct_field("reward_model", {string_field("style"), string_field("ground_truth")});
}

std::vector<WriteField> extra_info_fields() {
  return {string_field("split"), WriteField{"index", FieldKind::kInt64, true, 0, {}}, string_field("answer"),
          string_field("question")};
}

std::vector<WriteField> rl_schema() {
  std::vector<WriteField> extra = extra_info_fields();
  extra.push_back(WriteField{"need_tools_kwargs", FieldKind::kBool, true, 0, {}});
  extra.push_back(struct_field(
      "tools_kwargs", {struct_field("calculator", {struct_field("create_kwargs", {string_field("ground_truth")})})}));
  return {string_field("data_source"), messages_field("prompt"), string_field("ability"), reward_model_field(),
          struct_field("extra_info", std::move(extra))};
}

std::vector<WriteField> sft_schema() {
  std::vector<WriteField> extra = extra_info_fields();
  extra.push_back(WriteField{"uses_tool", FieldKind::kBool, true, 0, {}});
  return {string_field("data_source"), messages_field("prompt"), string_field("response"), reward_model_field(),
          struct_field("extra_info", std::move(extra))};
}

using seeded::Lcg;

ArithmeticToolProblem draw_problem(Lcg& rng) {
  ArithmeticToolProblem p;
  p.a = 10 + rng.below(20);
  p.b = 10 + rng.below(20);
  p.c = 10 + rng.below(90);
  return p;
}

using Key = std::tuple<int64_t, int64_t, int64_t>;
Key key_of(const ArithmeticToolProblem& p) { return Key{p.a, p.b, p.c}; }



io::Value message(const std::string& role, const std::string& content) {
  return io::Value(io::Struct{{"role", io::Value(role)}, {"content", io::Value(content)}});
}

io::Value reward_model(const ArithmeticToolProblem& p) {
  return io::Value(io::Struct{{"style", io::Value("rule")}, {"ground_truth", io::Value(std::to_string(p.answer()))}});
}

io::Struct extra_info(const ArithmeticToolProblem& p, int64_t index, const std::string& split) {
  return io::Struct{{"split", io::Value(split)},
                    {"index", io::Value(index)},
                    {"answer", io::Value("#### " + std::to_string(p.answer()))},
                    {"question", io::Value(p.question())}};
}

io::Value rl_row(const ArithmeticToolProblem& p, int64_t index, const std::string& split) {
  io::Struct extra = extra_info(p, index, split);
  io::Struct create_kwargs{{"ground_truth", io::Value(std::to_string(p.answer()))}};
  io::Struct calculator{{"create_kwargs", io::Value(std::move(create_kwargs))}};
  extra.emplace_back("need_tools_kwargs", io::Value(true));
  extra.emplace_back("tools_kwargs", io::Value(io::Struct{{"calculator", io::Value(std::move(calculator))}}));
  return io::Value(io::Struct{{"data_source", io::Value(kDataSource)},
                              {"prompt", io::Value(io::List{message("system", arithmetic_tool_system_prompt()),
                                                            message("user", arithmetic_tool_user_text(p))})},
                              {"ability", io::Value("math")},
                              {"reward_model", reward_model(p)},
                              {"extra_info", io::Value(std::move(extra))}});
}

io::Value sft_row(const ArithmeticToolProblem& p, bool uses_tool, int64_t index, const std::string& split) {
  io::Struct extra = extra_info(p, index, split);
  extra.emplace_back("uses_tool", io::Value(uses_tool));
  const std::string system = arithmetic_tool_system_prompt() + "\n\n" +
                             tokenizer::chatml_tools_listing(nlohmann::ordered_json::array({calculator_tool_schema()}));
  return io::Value(io::Struct{
      {"data_source", io::Value(kDataSource)},
      {"prompt", io::Value(io::List{message("system", system), message("user", arithmetic_tool_user_text(p))})},
      {"response", io::Value(uses_tool ? arithmetic_tool_transcript(p) : "#### " + std::to_string(p.answer()))},
      {"reward_model", reward_model(p)},
      {"extra_info", io::Value(std::move(extra))}});
}

}  // namespace

std::string ArithmeticToolProblem::expression() const {
  return std::to_string(a) + "*" + std::to_string(b) + "+" + std::to_string(c);
}

std::string ArithmeticToolProblem::question() const { return expression() + "="; }

int64_t ArithmeticToolProblem::answer() const { return a * b + c; }

const nlohmann::ordered_json& calculator_tool_schema() {
  // Keys in the order of verl's OpenAIFunctionToolSchema fields (what model_dump writes); the same schema as
  // examples/multi_turn/calculator_tool_config.yaml.
  static const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({
    "type": "function",
    "function": {
      "name": "calculator",
      "description": "Integer arithmetic with + - * and parentheses.",
      "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string", "description": "For example 12*34+5"}},
        "required": ["expression"]
      }
    }
  })");
  return schema;
}

const std::string& arithmetic_tool_system_prompt() {
  static const std::string text = kSystemPrompt;
  return text;
}

std::string arithmetic_tool_user_text(const ArithmeticToolProblem& problem) {
  return problem.question() + "\n" + arithmetic_instruction();
}

std::string arithmetic_tool_transcript(const ArithmeticToolProblem& problem) {
  const std::string arguments = tokenizer::python_json_dumps({{"expression", problem.expression()}});
  const std::string value = std::to_string(problem.answer());
  return "<tool_call>\n{\"name\": \"calculator\", \"arguments\": " + arguments +
         "}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n" + value +
         "\n</tool_response><|im_end|>\n<|im_start|>assistant\n#### " + value;
}

ArithmeticToolSplits arithmetic_tool_splits(const ArithmeticToolOptions& options) {
  // 36000 distinct problems exist (20 x 20 x 90): the held-out sets must leave most of them for training.
  VERL_CHECK(options.test_size >= 0 && options.sft_val_size >= 0 && options.test_size + options.sft_val_size <= 10000,
             "data", "arithmetic_tool: test size + SFT validation size must be between 0 and 10000, got ",
             options.test_size, " + ", options.sft_val_size);
  VERL_CHECK(options.train_size >= 0 && options.sft_train_size >= 0, "data",
             "arithmetic_tool: --size and the SFT train size must be non-negative");
  VERL_CHECK(options.tool_fraction >= 0 && options.tool_fraction <= 1, "data",
             "arithmetic_tool: the tool fraction must be in [0, 1], got ", options.tool_fraction);
  Lcg rng(options.seed);
  std::set<Key> held_out;
  std::vector<ArithmeticToolProblem> test = seeded::draw_distinct(rng, options.test_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticToolProblem> sft_val = seeded::draw_distinct(rng, options.sft_val_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticToolProblem> train = seeded::draw_outside(rng, options.train_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticToolProblem> sft_train = seeded::draw_outside(rng, options.sft_train_size, held_out, draw_problem, key_of);

  ArithmeticToolSplits splits;
  splits.train.schema = splits.test.schema = rl_schema();
  splits.sft_train.schema = splits.sft_val.schema = sft_schema();
  for (size_t i = 0; i < train.size(); ++i) {
    splits.train.rows.push_back(rl_row(train[i], static_cast<int64_t>(i), "train"));
  }
  for (size_t i = 0; i < test.size(); ++i) splits.test.rows.push_back(rl_row(test[i], static_cast<int64_t>(i), "test"));
  // Which SFT rows show the tool: a fixed share, drawn with the same generator (1e6 buckets).
  const auto threshold = static_cast<int64_t>(options.tool_fraction * 1e6 + 0.5);
  for (size_t i = 0; i < sft_train.size(); ++i) {
    const bool uses_tool = rng.below(1000000) < threshold;
    splits.sft_train.rows.push_back(sft_row(sft_train[i], uses_tool, static_cast<int64_t>(i), "train"));
  }
  for (size_t i = 0; i < sft_val.size(); ++i) {
    const bool uses_tool = rng.below(1000000) < threshold;
    splits.sft_val.rows.push_back(sft_row(sft_val[i], uses_tool, static_cast<int64_t>(i), "val"));
  }
  return splits;
}

void write_arithmetic_tool_dataset(const std::string& dir, const ArithmeticToolOptions& options) {
  write_rl_and_sft_splits(dir, arithmetic_tool_splits(options));
}

}  // namespace verl::data
