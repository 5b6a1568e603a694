// The `arithmetic` synthetic task: seeded integer problems answered "#### N" (scored by verl's GSM8K scorer),
// RL splits in verl's schema and SFT splits with prompt / response columns.
#include <set>
#include <tuple>

#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "seeded_draws.h"

namespace verl::data {

namespace {

using io::parquet::FieldKind;
using io::parquet::WriteField;

const char* const kArithmeticDataSource = "arithmetic";

WriteField string_field(const std::string& name) { return WriteField{name, FieldKind::kString, true, 0, {}}; }

WriteField reward_model_field() {
  return WriteField{"reward_model", FieldKind::kStruct, true, 0, {string_field("ground_truth"), string_field("style")}};
}

WriteField extra_info_field() {
  return WriteField{"extra_info",
                    FieldKind::kStruct,
                    true,
                    0,
                    {string_field("answer"), WriteField{"index", FieldKind::kInt64, true, 0, {}},
                     string_field("question"), string_field("split")}};
}

std::vector<WriteField> rl_schema() {
  WriteField message{"element", FieldKind::kStruct, true, 0, {string_field("content"), string_field("role")}};
  return {string_field("data_source"), WriteField{"prompt", FieldKind::kList, true, 0, {message}},
          string_field("ability"), reward_model_field(), extra_info_field()};
}

std::vector<WriteField> sft_schema() {
  return {string_field("data_source"), string_field("prompt"), string_field("response"), reward_model_field(),
          extra_info_field()};
}

using seeded::Lcg;

ArithmeticProblem draw_problem(Lcg& rng) {
  static const char kOps[3] = {'+', '-', '*'};
  ArithmeticProblem p;
  p.op = kOps[rng.below(3)];
  p.a = rng.below(100);
  p.b = rng.below(p.op == '*' ? 10 : 100);
  return p;
}

using Key = std::tuple<char, int64_t, int64_t>;
Key key_of(const ArithmeticProblem& p) { return Key{p.op, p.a, p.b}; }

io::Value extra_info(const ArithmeticProblem& p, int64_t index, const std::string& split) {
  return io::Value(io::Struct{{"answer", io::Value("#### " + std::to_string(p.answer()))},
                              {"index", io::Value(index)},
                              {"question", io::Value(p.question())},
                              {"split", io::Value(split)}});
}

io::Value reward_model(const ArithmeticProblem& p) {
  return io::Value(io::Struct{{"ground_truth", io::Value(std::to_string(p.answer()))}, {"style", io::Value("rule")}});
}

io::Value rl_row(const ArithmeticProblem& p, int64_t index, const std::string& split) {
  io::Struct message{{"content", io::Value(arithmetic_prompt_text(p))}, {"role", io::Value("user")}};
  return io::Value(io::Struct{{"data_source", io::Value(kArithmeticDataSource)},
                              {"prompt", io::Value(io::List{io::Value(std::move(message))})},
                              {"ability", io::Value("math")},
                              {"reward_model", reward_model(p)},
                              {"extra_info", extra_info(p, index, split)}});
}

io::Value sft_row(const ArithmeticProblem& p, int64_t index, const std::string& split) {
  return io::Value(io::Struct{{"data_source", io::Value(kArithmeticDataSource)},
                              {"prompt", io::Value(arithmetic_prompt_text(p))},
                              {"response", io::Value("#### " + std::to_string(p.answer()))},
                              {"reward_model", reward_model(p)},
                              {"extra_info", extra_info(p, index, split)}});
}



}  // namespace

std::string ArithmeticProblem::question() const {
  return std::to_string(a) + std::string(1, op) + std::to_string(b) + "=";
}

int64_t ArithmeticProblem::answer() const {
  switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    default: VERL_FAIL("data", "arithmetic: unknown operation '", std::string(1, op), "'");
  }
}

const std::string& arithmetic_instruction() {
  static const std::string text = "Answer after ####.";
  return text;
}

std::string arithmetic_prompt_text(const ArithmeticProblem& problem) {
  return problem.question() + "\n" + arithmetic_instruction();
}

ArithmeticSplits arithmetic_splits(const ArithmeticOptions& options) {
  // 21000 distinct problems exist (10000 sums, 10000 differences, 1000 products); the held-out sets must
  // leave most of them for training.
  VERL_CHECK(options.test_size >= 0 && options.sft_val_size >= 0 && options.test_size + options.sft_val_size <= 10000,
             "data", "arithmetic: test size + SFT validation size must be between 0 and 10000, got ",
             options.test_size, " + ", options.sft_val_size);
  VERL_CHECK(options.train_size >= 0 && options.sft_train_size >= 0, "data",
             "arithmetic: --size and the SFT train size must be non-negative");
  Lcg rng(options.seed);
  std::set<Key> held_out;
  std::vector<ArithmeticProblem> test = seeded::draw_distinct(rng, options.test_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticProblem> sft_val = seeded::draw_distinct(rng, options.sft_val_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticProblem> train = seeded::draw_outside(rng, options.train_size, held_out, draw_problem, key_of);
  std::vector<ArithmeticProblem> sft_train = seeded::draw_outside(rng, options.sft_train_size, held_out, draw_problem, key_of);

  ArithmeticSplits splits;
  splits.train.schema = rl_schema();
  splits.test.schema = rl_schema();
  splits.sft_train.schema = sft_schema();
  splits.sft_val.schema = sft_schema();
  for (size_t i = 0; i < train.size(); ++i) splits.train.rows.push_back(rl_row(train[i], static_cast<int64_t>(i), "train"));
  for (size_t i = 0; i < test.size(); ++i) splits.test.rows.push_back(rl_row(test[i], static_cast<int64_t>(i), "test"));
  for (size_t i = 0; i < sft_train.size(); ++i) {
    splits.sft_train.rows.push_back(sft_row(sft_train[i], static_cast<int64_t>(i), "train"));
  }
  for (size_t i = 0; i < sft_val.size(); ++i) {
    splits.sft_val.rows.push_back(sft_row(sft_val[i], static_cast<int64_t>(i), "val"));
  }
  return splits;
}

void write_arithmetic_dataset(const std::string& dir, const ArithmeticOptions& options) {
  write_rl_and_sft_splits(dir, arithmetic_splits(options));
}

}  // namespace verl::data
