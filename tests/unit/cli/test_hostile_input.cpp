// Hostile input as an adversarial user gives it to the `verl` binary: deep nesting in every JSON reader, YAML
// aliases that refer to themselves or multiply ("billion laughs"), numbers of tens of thousands of digits,
// absurd sizes in config.json and tokenizer.json. Each must end with exit code 1 and one `error:` line that
// names the file and the limit: never a signal, never an allocation of the hostile size. Commands run under
// `ulimit -v 4 GiB`, so code that would allocate the hostile size fails with std::bad_alloc (no field named)
// instead of taking the machine's memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "support/char_tokenizer.h"
#include "support/digit_completion_setup.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

// VERL_HOSTILE_INPUT_BINARY runs these cases against another build (how they were checked to fail before
// the limits existed).
std::string binary() {
  const char* other = std::getenv("VERL_HOSTILE_INPUT_BINARY");
  return other != nullptr ? other : verl_binary();
}

std::string nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Runs `args` (shell syntax) under a 4 GiB address-space limit and expects exit code 1 with exactly one
// `error:` line on stderr containing each of `expected`.
// `stdin_file`: piped in (run_command redirects the whole command's stdin from /dev/null).
void hostile_input_expect_one_error_line(const std::string& args, const std::vector<std::string>& expected,
                                         const std::string& stdin_file = "") {
  const std::string pipe = stdin_file.empty() ? "" : "cat '" + stdin_file + "' | ";
  CommandResult r = run_command("(ulimit -v 4194304; " + pipe + binary() + " " + args + ")");
  EXPECT_EQ(r.exit_code, 1) << args << "\nstderr: " << r.err.substr(0, 500);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err.substr(0, 500);
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err.substr(0, 500);
  EXPECT_LT(r.err.size(), 1000u) << "error line too long";
  for (const auto& text : expected) EXPECT_NE(r.err.find(text), std::string::npos) << text << " not in: " << r.err;
}

std::string tiny_model(const std::string& dir) {
  CommandResult r = run_command(verl_binary() + " model init --arch llama --out " + dir +
                                "/m --hidden-size 32 --num-layers 2 --num-heads 4 --num-kv-heads 2 "
                                "--intermediate-size 48 --vocab-size 40");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir + "/m";
}

// Rewrites `key` of DIR/config.json to `value`.
void set_config(const std::string& model, const std::string& key, const nlohmann::json& value) {
  auto config = nlohmann::json::parse(read_file(model + "/config.json"));
  config[key] = value;
  write_file(model + "/config.json", config.dump(1));
}

TEST(HostileInput, DeeplyNestedJsonlRowInDataConvert) {
  const std::string dir = make_temp_dir("hostile");
  write_file(dir + "/rows.jsonl", "{\"a\": 1}\n{\"prompt\": " + nested(100000) + "}\n");
  hostile_input_expect_one_error_line(
      "data convert " + dir + "/rows.jsonl " + dir + "/out.parquet",
      {"rows.jsonl:2", "nested deeper than 256 levels", "line 1, column 267", "(limit 256)"});
}

TEST(HostileInput, DeeplyNestedJsonlRowInScore) {
  const std::string dir = make_temp_dir("hostile");
  write_file(dir + "/rows.jsonl", R"({"data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1",)"
                                  R"( "extra_info": )" + nested(100000) + "}\n");
  hostile_input_expect_one_error_line("score --input " + dir + "/rows.jsonl",
                                      {"rows.jsonl:1", "nested deeper than 256", "(limit 256)"});
}

TEST(HostileInput, DeeplyNestedIdsOnStdinOfDetokenize) {
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/tok");
  write_file(dir + "/ids.json", nested(100000));
  hostile_input_expect_one_error_line("detokenize --tokenizer " + dir + "/tok",
                                      {"stdin", "nested deeper than 256", "(limit 256)"}, dir + "/ids.json");
}

TEST(HostileInput, DeeplyNestedChatMessages) {
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/tok");
  write_file(dir + "/messages.json", R"([{"role": "user", "content": )" + nested(100000) + "}]");
  hostile_input_expect_one_error_line("chat-template --tokenizer " + dir + "/tok --messages " + dir + "/messages.json",
                                      {"messages.json", "nested deeper than 256", "(limit 256)"});
}

TEST(HostileInput, DeeplyNestedIdsFileOfModelForward) {
  const std::string dir = make_temp_dir("hostile");
  const std::string model = tiny_model(dir);
  write_file(dir + "/ids.json", "{\"input_ids\": " + nested(100000) + "}");
  hostile_input_expect_one_error_line(
      "model forward --model " + model + " --input " + dir + "/ids.json --output " + dir + "/o",
      {"ids.json", "nested deeper than 256", "(limit 256)"});
}

TEST(HostileInput, DeeplyNestedConfigJson) {
  const std::string dir = make_temp_dir("hostile");
  const std::string model = tiny_model(dir);
  std::string text = read_file(model + "/config.json");
  text.insert(text.find('{') + 1, "\"extra\": " + nested(100000) + ",");
  write_file(model + "/config.json", text);
  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2]]})");
  hostile_input_expect_one_error_line(
      "model forward --model " + model + " --input " + dir + "/ids.json --output " + dir + "/o",
      {"config.json", "nested deeper than 256", "(limit 256)"});
}

TEST(HostileInput, DeeplyNestedTokenizerJsonAndTokenizerConfig) {
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/a");
  auto tokenizer = nlohmann::json::parse(read_file(dir + "/a/tokenizer.json"));
  tokenizer["padding"] = "DEEP";
  std::string text = tokenizer.dump();
  text.replace(text.find("\"DEEP\""), 6, nested(100000));
  write_file(dir + "/a/tokenizer.json", text);
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/a",
                                      {"tokenizer.json", "nested deeper than 256", "(limit 256)"});

  write_char_tokenizer(dir + "/b");
  auto config = nlohmann::json::parse(read_file(dir + "/b/tokenizer_config.json"));
  config["extra"] = "DEEP";
  text = config.dump();
  text.replace(text.find("\"DEEP\""), 6, nested(100000));
  write_file(dir + "/b/tokenizer_config.json", text);
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/b",
                                      {"tokenizer_config.json", "nested deeper than 256", "(limit 256)"});
}

TEST(HostileInput, NumberBeyondDoubleInTokenizerConfig) {
  // Found by fuzz_tokenizer_config: nlohmann throws out_of_range (not parse_error) for it.
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/a");
  write_file(dir + "/a/tokenizer_config.json", R"({"model_max_length": 7e1026})");
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/a",
                                      {"tokenizer_config.json: not valid JSON", "number overflow"});
}

TEST(HostileInput, AddedTokenFlagOfTheWrongType) {
  // Found by fuzz_tokenizer_json: nlohmann's type_error escaped the added_tokens reader.
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/a");
  auto tokenizer = nlohmann::json::parse(read_file(dir + "/a/tokenizer.json"));
  tokenizer["added_tokens"][0]["normalized"] = 5;
  write_file(dir + "/a/tokenizer.json", tokenizer.dump());
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/a",
                                      {"tokenizer.json: unexpected value", "type must be boolean, but is number"});
}

TEST(HostileInput, TokenIdsInTheHundredsOfMillions) {
  const std::string dir = make_temp_dir("hostile");
  write_char_tokenizer(dir + "/a");
  auto tokenizer = nlohmann::json::parse(read_file(dir + "/a/tokenizer.json"));
  tokenizer["added_tokens"].push_back({{"id", 400000000}, {"content", "<big>"}, {"special", true}});
  write_file(dir + "/a/tokenizer.json", tokenizer.dump());
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/a",
                                      {"tokenizer.json", "added_tokens[4].id is 400000000", "limit 4194304"});

  write_char_tokenizer(dir + "/b");
  tokenizer = nlohmann::json::parse(read_file(dir + "/b/tokenizer.json"));
  tokenizer["model"]["vocab"]["<big>"] = 400000000;  // the BPE model keeps an id -> token table
  write_file(dir + "/b/tokenizer.json", tokenizer.dump());
  hostile_input_expect_one_error_line("tokenize --tokenizer " + dir + "/b",
                                      {"tokenizer.json", "'<big>' is 400000000", "limit 4194304"});
}

TEST(HostileInput, YamlAliasOfItself) {
  const std::string dir = make_temp_dir("hostile");
  write_file(dir + "/list.yaml", "trainer: &x [*x]\n");
  hostile_input_expect_one_error_line("config show --config " + dir + "/list.yaml",
                                      {"list.yaml", "'trainer[0]'", "cycle"});
  write_file(dir + "/map.yaml", "trainer: &x\n  logger: *x\n");
  hostile_input_expect_one_error_line("config show --config " + dir + "/map.yaml",
                                      {"map.yaml", "'trainer.logger'", "cycle"});
}

TEST(HostileInput, YamlBillionLaughs) {
  const std::string dir = make_temp_dir("hostile");
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  write_file(dir + "/laughs.yaml", text);  // 10^10 nodes once expanded
  hostile_input_expect_one_error_line("config show --config " + dir + "/laughs.yaml",
                                      {"laughs.yaml", "more than 100000 nodes", "limit 100000"});
}

TEST(HostileInput, NumberOfFiftyThousandDigits) {
  const std::string dir = make_temp_dir("hostile");
  const std::string digits(50000, '9');
  write_file(dir + "/long.yaml", "trainer:\n  total_epochs: " + digits + "\n");
  hostile_input_expect_one_error_line(
      "config show --config " + dir + "/long.yaml",
      {"long.yaml", "'trainer.total_epochs'", "a number of 50000 characters", "limit 256"});
  hostile_input_expect_one_error_line("config show trainer.total_epochs=" + digits,
                                      {"override trainer.total_epochs", "a number of 50000 characters", "limit 256"});
  hostile_input_expect_one_error_line("config show trainer.total_epochs=" + digits + ".5e3",
                                      {"override trainer.total_epochs", "a number of 50004 characters", "limit 256"});
}

TEST(HostileInput, AbsurdConfigJsonSizes) {
  const std::string dir = make_temp_dir("hostile");
  const std::string model = tiny_model(dir);
  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2]]})");
  const std::string forward = "model forward --model " + model + " --input " + dir + "/ids.json --output " + dir + "/o";
  set_config(model, "num_hidden_layers", 100000000);
  hostile_input_expect_one_error_line(forward, {"config.json", "num_hidden_layers=100000000", "limit 1024"});
  set_config(model, "num_hidden_layers", 2);
  set_config(model, "intermediate_size", 5000000000LL);
  hostile_input_expect_one_error_line(forward, {"config.json", "intermediate_size=5000000000", "limit 262144"});
}

TEST(HostileInput, ConfigJsonSizesThatDoNotMatchTheCheckpoint) {
  const std::string dir = make_temp_dir("hostile");
  const std::string model = tiny_model(dir);
  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2]]})");
  const std::string forward = "model forward --model " + model + " --input " + dir + "/ids.json --output " + dir + "/o";
  // Within the bounds, but 1024 layers of 262144-wide MLPs would be ~100 GB of fp32 weights.
  set_config(model, "num_hidden_layers", 1024);
  set_config(model, "intermediate_size", 262144);
  hostile_input_expect_one_error_line(forward, {"config.json", "intermediate_size=262144", "[262144, 32]", "[48, 32]"});
  set_config(model, "intermediate_size", 48);
  hostile_input_expect_one_error_line(forward,
                                      {"config.json", "num_hidden_layers=1024", "the checkpoint has 2 layers"});
}

TEST(HostileInput, ModelLargerThanPhysicalMemory) {
  const std::string dir = make_temp_dir("hostile");
  const std::string model = tiny_model(dir);
  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2]]})");
  // A checkpoint without the tensors whose shapes would give it away: only the memory estimate can stop it.
  write_file(model + "/model.safetensors", std::string("\x02\0\0\0\0\0\0\0{}", 10));
  set_config(model, "hidden_size", 65536);
  set_config(model, "intermediate_size", 262144);
  set_config(model, "num_hidden_layers", 1024);
  set_config(model, "num_attention_heads", 512);
  set_config(model, "num_key_value_heads", 512);
  set_config(model, "head_dim", 128);
  hostile_input_expect_one_error_line(
      "model forward --model " + model + " --input " + dir + "/ids.json --output " + dir + "/o",
      {"config.json", "GiB for its fp32 weights", "num_hidden_layers=1024", "limit: physical RAM"});
}

TEST(HostileInput, PromptLengthBeyondMaxPositionEmbeddings) {
  const std::string dir = make_temp_dir("hostile");
  DigitCompletionSetup setup = make_digit_completion_setup(dir, 4);  // `verl model init`: max_position_embeddings 4096
  std::vector<std::string> overrides = setup.base_overrides(dir + "/run");
  overrides.push_back("data.max_prompt_length=100000");
  overrides.push_back("trainer.total_training_steps=1");  // bounds a run that should not start
  const std::string command = verl_train_command(overrides);
  hostile_input_expect_one_error_line(
      command.substr(verl_binary().size() + 1),  // "train ..."
      {"data.max_prompt_length + data.max_response_length = 100018", "max_position_embeddings 4096", "config.json"});
}

}  // namespace
}  // namespace verl::test
