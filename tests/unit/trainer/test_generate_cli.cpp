// `verl generate` as a user runs it, on the digit-completion task's character tokenizer and a tiny random
// Llama made by `verl model init` (support/digit_completion_setup.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/digit_completion_setup.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "verl/io/safetensors.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("generate_cli_setup"), 6);
  return instance;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

CommandResult generate(const std::string& output, const std::vector<std::string>& overrides,
                       const std::string& extra = "") {
  std::string command = "VERL_LOG_LEVEL=warn " + verl_binary() + " generate --model " + quote(setup().model_dir) +
                        " --data " + quote(setup().val_file) + " --output " + quote(output) + " " + extra;
  for (const auto& o : overrides) command += " " + quote(o);
  return run_command(command);
}

// The user message of every row of a verl-schema JSONL file.
std::vector<std::string> prompt_contents(const std::string& path) {
  std::vector<std::string> contents;
  for (const auto& row : read_json_lines(path)) contents.push_back(row["prompt"][0]["content"].get<std::string>());
  return contents;
}

// The character tokenizer's ids: S=0 E=1 P=2 U=3, '0'..'9' = 4..13, ',' = 14, ':' = 15.
int generate_cli_char_id(char c) {
  if (c >= '0' && c <= '9') return 4 + (c - '0');
  if (c == ',') return 14;
  if (c == ':') return 15;
  return std::string("SEPU").find(c);
}

void expect_one_line_error(const CommandResult& r, const std::string& fragment) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

const std::vector<std::string> kBase = {"data.max_prompt_length=16", "data.max_response_length=6"};

std::vector<std::string> generate_cli_with(std::vector<std::string> more) {
  std::vector<std::string> all = kBase;
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

TEST(GenerateCli, NSamplesPerPromptThroughTheChatTemplate) {
  const std::string dir = make_temp_dir("generate_cli_n");
  auto r = generate(dir + "/out.jsonl", generate_cli_with({"actor_rollout_ref.rollout.n=3"}), "--batch-size 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 18 responses for 6 prompts"), std::string::npos) << r.out;
  const std::vector<std::string> contents = prompt_contents(setup().val_file);
  ASSERT_EQ(contents.size(), 6u);
  const auto lines = read_json_lines(dir + "/out.jsonl");
  ASSERT_EQ(lines.size(), 18u);
  for (size_t j = 0; j < lines.size(); ++j) {
    const auto& line = lines[j];
    const size_t row = j / 3;
    EXPECT_EQ(line["row"], row);
    EXPECT_EQ(line["sample"], j % 3);
    // The chat template (contents, then "S" as the generation prompt), encoded character by character.
    const std::string expected_prompt = contents[row] + "S";
    EXPECT_EQ(line["prompt"], expected_prompt);
    std::vector<int> expected_ids;
    for (char c : expected_prompt) expected_ids.push_back(generate_cli_char_id(c));
    EXPECT_EQ(line["prompt_ids"].get<std::vector<int>>(), expected_ids);
    // Responses: at most 6 tokens, "stop" exactly when the last one is the eos id 1 (no earlier eos).
    const auto ids = line["response_ids"].get<std::vector<int>>();
    ASSERT_GE(ids.size(), 1u);
    ASSERT_LE(ids.size(), 6u);
    EXPECT_EQ(std::count(ids.begin(), ids.end() - 1, 1), 0);
    EXPECT_EQ(line["finish_reason"], ids.back() == 1 ? "stop" : "length");
    if (line["finish_reason"] == "length") EXPECT_EQ(ids.size(), 6u);
    // The text skips special tokens (S E P U) and maps the others back to their characters.
    std::string text;
    for (int id : ids) {
      if (id >= 4 && id <= 13) text += static_cast<char>('0' + id - 4);
      if (id == 14) text += ',';
      if (id == 15) text += ':';
    }
    EXPECT_EQ(line["response"], text);
    // The row's other columns ride along.
    EXPECT_EQ(line["data"]["data_source"], "digit_completion");
    EXPECT_EQ(line["data"]["reward_model"]["ground_truth"], contents[row]);
  }
}

TEST(GenerateCli, GreedyIsReproducibleAndEqualsTheArgmaxOfAFullForward) {
  const std::string dir = make_temp_dir("generate_cli_greedy");
  const auto overrides =
      generate_cli_with({"actor_rollout_ref.rollout.do_sample=false", "actor_rollout_ref.rollout.n=2",
                         "actor_rollout_ref.rollout.ignore_eos=true"});
  ASSERT_EQ(generate(dir + "/a.jsonl", overrides).exit_code, 0);
  auto r = generate(dir + "/b.jsonl", overrides, "--batch-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir + "/a.jsonl"), read_file(dir + "/b.jsonl"));  // greedy does not depend on batching
  const auto lines = read_json_lines(dir + "/a.jsonl");
  ASSERT_EQ(lines.size(), 12u);
  // Teacher forcing: `verl model forward` (no KV cache) over prompt + response; each response token must be
  // the argmax of the logits one position earlier.
  nlohmann::json input = {{"input_ids", nlohmann::json::array()}};
  for (const auto& line : lines) {
    auto ids = line["prompt_ids"].get<std::vector<int>>();
    const auto resp = line["response_ids"].get<std::vector<int>>();
    EXPECT_EQ(resp.size(), 6u);  // ignore_eos: full length
    ids.insert(ids.end(), resp.begin(), resp.end());
    input["input_ids"].push_back(ids);
  }
  for (size_t j = 0; j < lines.size(); j += 2) EXPECT_EQ(lines[j]["response_ids"], lines[j + 1]["response_ids"]);
  write_file(dir + "/ids.json", input.dump());
  auto f = run_command(verl_binary() + " model forward --model " + quote(setup().model_dir) + " --input " +
                       quote(dir + "/ids.json") + " --output " + quote(dir + "/logits.safetensors"));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  io::SafetensorsFile logits(dir + "/logits.safetensors");
  for (size_t j = 0; j < lines.size(); ++j) {
    const auto& view = logits.get("logits_" + std::to_string(j));
    const int64_t V = view.shape[1], P = lines[j]["prompt_ids"].size();
    const auto resp = lines[j]["response_ids"].get<std::vector<int>>();
    for (size_t t = 0; t < resp.size(); ++t) {
      const float* row = reinterpret_cast<const float*>(view.data) + (P - 1 + static_cast<int64_t>(t)) * V;
      EXPECT_EQ(std::max_element(row, row + V) - row, resp[t]) << "line " << j << " token " << t;
    }
  }
}

TEST(GenerateCli, SamplingIsSeededAndLogProbsAreReported) {
  const std::string dir = make_temp_dir("generate_cli_seed");
  const auto base =
      generate_cli_with({"actor_rollout_ref.rollout.n=4", "actor_rollout_ref.rollout.calculate_log_probs=true",
                         "actor_rollout_ref.rollout.temperature=1.5"});
  auto seeded = [&](const std::string& name, int seed) {
    auto o = base;
    o.push_back("actor_rollout_ref.rollout.seed=" + std::to_string(seed));
    auto r = generate(dir + "/" + name, o);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(dir + "/" + name);
  };
  const std::string a = seeded("a.jsonl", 7), b = seeded("b.jsonl", 7), c = seeded("c.jsonl", 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const auto& line : read_json_lines(dir + "/a.jsonl")) {
    const auto lp = line["response_log_probs"].get<std::vector<double>>();
    EXPECT_EQ(lp.size(), line["response_ids"].size());
    for (double v : lp) EXPECT_LT(v, 0.0);
  }
}

// multi_turn.enable runs verl's tool agent loop: with no tool call in the turn (this character tokenizer cannot
// write one) each conversation is one policy turn, so greedy responses equal the single-turn engine's, and each
// line carries the conversation.
TEST(GenerateCli, MultiTurnGreedyTurnEqualsTheSingleTurnEngineAndLinesCarryTheConversation) {
  const std::string dir = make_temp_dir("generate_cli_multi_turn");
  write_file(dir + "/tools.yaml", R"Y(tools:
  - class_name: verl.tools.gsm8k_tool.Gsm8kTool
    config: {type: native}
    tool_schema:
      type: function
      function:
        name: calc_gsm8k_reward
        description: scores an answer
        parameters: {type: object, properties: {answer: {type: string}}, required: [answer]}
)Y");
  const auto greedy = generate_cli_with({"actor_rollout_ref.rollout.do_sample=false"});
  auto single = generate(dir + "/single.jsonl", greedy);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  auto multi_overrides = greedy;
  multi_overrides.push_back("actor_rollout_ref.rollout.multi_turn.enable=true");
  multi_overrides.push_back("actor_rollout_ref.rollout.multi_turn.tool_config_path=" + dir + "/tools.yaml");
  auto multi = generate(dir + "/multi.jsonl", multi_overrides);
  ASSERT_EQ(multi.exit_code, 0) << multi.err;
  const auto a = read_json_lines(dir + "/single.jsonl");
  const auto b = read_json_lines(dir + "/multi.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_EQ(a[j]["prompt_ids"], b[j]["prompt_ids"]) << j;
    EXPECT_EQ(a[j]["response_ids"], b[j]["response_ids"]) << j;
    EXPECT_EQ(b[j]["num_turns"], 2) << j;  // one policy turn + 1, as verl counts
    EXPECT_EQ(b[j]["tool_call_counts"], 0) << j;
    ASSERT_EQ(b[j]["messages"].size(), 2u) << b[j].dump();
    EXPECT_EQ(b[j]["messages"][1]["role"], "assistant");
  }
  // A tool config that does not load is a one-line error naming the file.
  multi_overrides.back() = "actor_rollout_ref.rollout.multi_turn.tool_config_path=" + dir + "/missing.yaml";
  expect_one_line_error(generate(dir + "/bad.jsonl", multi_overrides), "missing.yaml");

  // @function_tool tools (multi_turn.function_tool_path) load through the config, beside or instead of the YAML's;
  // a function without its docstring is a one-line error naming the file.
  write_file(dir + "/functions.py",
             "from verl.tools.function_tool import function_tool\n\n\n@function_tool\ndef lookup(key: str) -> str:\n"
             "    \"\"\"Looks a key up.\n\n    Args:\n        key: The key\n    \"\"\"\n    return key\n");
  multi_overrides.back() = "actor_rollout_ref.rollout.multi_turn.function_tool_path=" + dir + "/functions.py";
  auto functions = generate(dir + "/functions.jsonl", multi_overrides);
  ASSERT_EQ(functions.exit_code, 0) << functions.err;
  EXPECT_EQ(read_json_lines(dir + "/functions.jsonl").size(), a.size());
  multi_overrides.push_back("actor_rollout_ref.rollout.multi_turn.tool_config_path=" + dir + "/tools.yaml");
  ASSERT_EQ(generate(dir + "/both.jsonl", multi_overrides).exit_code, 0);
  write_file(dir + "/undocumented.py",
             "from verl.tools.function_tool import function_tool\n\n\n@function_tool\ndef lookup(key: str):\n"
             "    return key\n");
  multi_overrides.pop_back();
  multi_overrides.back() = "actor_rollout_ref.rollout.multi_turn.function_tool_path=" + dir + "/undocumented.py";
  expect_one_line_error(generate(dir + "/bad_functions.jsonl", multi_overrides), "undocumented.py");
}

TEST(GenerateCli, BadInputsAreOneLineErrors) {
  const std::string dir = make_temp_dir("generate_cli_errors");
  const std::string out = dir + "/out.jsonl";
  write_file(out, "keep me\n");
  expect_one_line_error(generate(out, generate_cli_with({"actor_rollout_ref.rollout.temprature=0.5"})), "temperature");
  expect_one_line_error(generate(out, generate_cli_with({"trainer.total_epochs=2"})),
                        "verl generate does not use 'trainer.total_epochs'");
  expect_one_line_error(generate(out, generate_cli_with({"actor_rollout_ref.rollout.top_p=1.5"})), "top_p");
  expect_one_line_error(generate(out, generate_cli_with({"actor_rollout_ref.rollout.n=0"})), "rollout.n");
  expect_one_line_error(generate(out, {"data.max_prompt_length=2"}), "longer than data.max_prompt_length=2");
  auto r = run_command(verl_binary() + " generate --model " + quote(setup().model_dir) + " --data " +
                       quote(dir + "/missing.jsonl") + " --output " + quote(out));
  expect_one_line_error(r, "missing.jsonl' does not exist");
  r = run_command(verl_binary() + " generate --model " + quote(dir) + " --data " + quote(setup().val_file) +
                  " --output " + quote(out));
  expect_one_line_error(r, "is not a Hugging Face model folder");
  expect_one_line_error(generate(dir + "/nowhere/out.jsonl", kBase), "does not exist");
  expect_one_line_error(generate(out, kBase, "--batch-size 0"), "--batch-size must be at least 1");
  EXPECT_EQ(read_file(out), "keep me\n");  // nothing written by a failed run
  r = run_command(verl_binary() + " generate --model " + quote(setup().model_dir));
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace verl::test
