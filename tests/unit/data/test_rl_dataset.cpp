// RLHFDataset on a hand-made character-level tokenizer whose ids are worked out by hand: left padding,
// attention mask, position ids, the four truncation modes, filtering, non-tensor columns, max_samples, file
// formats and the one-line errors. (The Qwen3 / GSM8K comparison against @lenml/tokenizers is in
// test_rl_dataset_qwen3.cpp.)
#include <gtest/gtest.h>

#include <filesystem>

#include "support/error_text.h"
#include "support/letter_tokenizer.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/data/rl_dataset.h"
#include "verl/io/jsonl.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::data {
namespace {

using verl::test::error_of;

using io::List;
using io::Struct;
using io::Value;
using Ids = std::vector<int64_t>;

// The letter tokenizer (support/letter_tokenizer.h): one id per character, '|' after the role's first letter, '>'
// as the generation prompt.
std::string tiny_tokenizer_dir(const std::string& name, bool with_pad = true) {
  return test::letter_tokenizer_dir(name, with_pad);
}

std::shared_ptr<const tokenizer::Tokenizer> tiny_tokenizer(bool with_pad = true) {
  return std::make_shared<const tokenizer::Tokenizer>(
      tokenizer::Tokenizer::from_folder(tiny_tokenizer_dir(with_pad ? "tiny_tok" : "tiny_tok_nopad", with_pad)));
}

Value message(const std::string& role, const std::string& content) {
  return Value(Struct{{"role", role}, {"content", content}});
}

Value rl_dataset_row(List prompt, const std::string& answer, Value extra_info) {
  return Value(Struct{{"data_source", "openai/gsm8k"},
                      {"prompt", std::move(prompt)},
                      {"ability", "math"},
                      {"reward_model", Value(Struct{{"style", "rule"}, {"ground_truth", answer}})},
                      {"extra_info", std::move(extra_info)}});
}

// Row 0: "u|ab>" (5 tokens); row 1: "s|xu|abcdefg>" (13 tokens); row 2: "u|abcde>" (exactly 8).
std::vector<Value> three_rows() {
  return {rl_dataset_row({message("user", "ab")}, "1", Value(Struct{{"split", "test"}, {"index", 7}})),
          rl_dataset_row({message("system", "x"), message("user", "abcdefg")}, "2", Value(Struct{{"split", "test"}})),
          rl_dataset_row({message("user", "abcde")}, "3", Value())};
}

std::string write_rows(const std::string& name, const std::vector<Value>& rows) {
  const std::string path = test::make_temp_dir(name) + "/data.parquet";
  io::parquet::write_parquet(path, rows);
  return path;
}

config::DataConfig data_config(int64_t max_prompt_length, const std::string& truncation) {
  config::DataConfig c;
  c.prompt_key = "prompt";
  c.reward_fn_key = "data_source";
  c.max_prompt_length = max_prompt_length;
  c.truncation = truncation;
  c.return_raw_chat = true;
  c.return_full_prompt = true;
  c.shuffle = false;
  c.filter_overlong_prompts = false;
  return c;
}

Ids rl_dataset_row_of(const torch::Tensor& t, int64_t r) {
  torch::Tensor row = t[r].contiguous();
  return Ids(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
}

TEST(RLHFDataset, LeftPaddingMaskAndPositionIds) {
  const std::string path = write_rows("rl_pad", three_rows());
  RLHFDataset dataset({path}, tiny_tokenizer(), data_config(8, "left"));
  ASSERT_EQ(dataset.size(), 3);
  protocol::DataProto batch = dataset.collate({0, 2});
  ASSERT_EQ(batch.size(), 2);
  const torch::Tensor& ids = batch.tensor("input_ids");
  EXPECT_EQ(ids.scalar_type(), torch::kInt64);
  EXPECT_EQ(ids.sizes(), (std::vector<int64_t>{2, 8}));
  // "u|ab>" = u(25) |(3) a(5) b(6) >(4), three pads in front.
  EXPECT_EQ(rl_dataset_row_of(ids, 0), (Ids{0, 0, 0, 25, 3, 5, 6, 4}));
  EXPECT_EQ(rl_dataset_row_of(batch.tensor("attention_mask"), 0), (Ids{0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(rl_dataset_row_of(batch.tensor("position_ids"), 0), (Ids{0, 0, 0, 0, 1, 2, 3, 4}));
  // "u|abcde>" fills the width exactly.
  EXPECT_EQ(rl_dataset_row_of(ids, 1), (Ids{25, 3, 5, 6, 7, 8, 9, 4}));
  EXPECT_EQ(rl_dataset_row_of(batch.tensor("attention_mask"), 1), (Ids{1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(rl_dataset_row_of(batch.tensor("position_ids"), 1), (Ids{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(RLHFDataset, TruncationModes) {
  const std::string path = write_rows("rl_trunc", three_rows());
  // "s|xu|abcdefg>": s(23) |(3) x(28) u(25) |(3) a b c d e f g (5..11) >(4), 13 tokens, width 8.
  const std::map<std::string, Ids> expected = {
      {"left", {5, 6, 7, 8, 9, 10, 11, 4}},     // the last 8
      {"right", {23, 3, 28, 25, 3, 5, 6, 7}},   // the first 8
      {"middle", {23, 3, 28, 25, 9, 10, 11, 4}}  // first 4 + last 4
  };
  for (const auto& [mode, want] : expected) {
    RLHFDataset dataset({path}, tiny_tokenizer(), data_config(8, mode));
    protocol::DataProto batch = dataset.collate({1});
    EXPECT_EQ(rl_dataset_row_of(batch.tensor("input_ids"), 0), want) << mode;
    EXPECT_EQ(rl_dataset_row_of(batch.tensor("attention_mask"), 0), (Ids(8, 1))) << mode;
    EXPECT_EQ(rl_dataset_row_of(batch.tensor("position_ids"), 0), (Ids{0, 1, 2, 3, 4, 5, 6, 7})) << mode;
    EXPECT_EQ(batch.column("raw_prompt_ids")[0], nlohmann::json(want)) << mode;  // truncated the same way
  }
  // Odd width: middle keeps floor(7/2) = 3 from the front and 4 from the back.
  RLHFDataset odd({path}, tiny_tokenizer(), data_config(7, "middle"));
  EXPECT_EQ(rl_dataset_row_of(odd.collate({1}).tensor("input_ids"), 0), (Ids{23, 3, 28, 9, 10, 11, 4}));

  RLHFDataset strict({path}, tiny_tokenizer(), data_config(8, "error"));
  EXPECT_NO_THROW(strict.collate({0, 2}));
  const std::string message = error_of([&] { strict.collate({0, 1}); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("row 1"), std::string::npos) << message;
  EXPECT_NE(message.find("'prompt'"), std::string::npos) << message;
  EXPECT_NE(message.find("13 tokens"), std::string::npos) << message;
  EXPECT_NE(message.find("max_prompt_length=8"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(RLHFDataset, FilterOverlongPromptsCountsAndKeepsOrder) {
  const std::string path = write_rows("rl_filter", three_rows());
  config::DataConfig c = data_config(8, "error");
  c.filter_overlong_prompts = true;
  RLHFDataset dataset({path}, tiny_tokenizer(), c);
  EXPECT_EQ(dataset.rows_read(), 3);
  EXPECT_EQ(dataset.rows_filtered_out(), 1);  // 13 > 8; the 8-token prompt stays (<=)
  ASSERT_EQ(dataset.size(), 2);
  protocol::DataProto batch = dataset.collate({0, 1});
  EXPECT_EQ(batch.column("reward_model")[1]["ground_truth"], "3");
  c.max_prompt_length = 4;
  RLHFDataset none({path}, tiny_tokenizer(), c);
  EXPECT_EQ(none.size(), 0);
  EXPECT_EQ(none.rows_filtered_out(), 3);
}

// verl's RLHFDataset renders the tools (data.tool_config_path / function_tool_path) with each prompt it measures for
// the overlong filter, and only there: the prompts it returns are rendered without them (verl's single-turn
// prompts; the multi-turn loop renders its own).
TEST(RLHFDataset, FilterRendersTheToolSchemas) {
  const std::string dir = tiny_tokenizer_dir("tiny_tok_tools");
  nlohmann::json config = nlohmann::json::parse(test::read_file(dir + "/tokenizer_config.json"));
  config["chat_template"] = "{% if tools %}{% for t in tools %}{{ t['function']['name'] }}{% endfor %}|{% endif %}" +
                            config["chat_template"].get<std::string>();
  test::write_file(dir + "/tokenizer_config.json", config.dump());
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir));
  const std::string path = write_rows("rl_filter_tools", three_rows());  // 5, 13 and 8 tokens without tools
  config::DataConfig c = data_config(8, "left");
  c.filter_overlong_prompts = true;
  const nlohmann::ordered_json tools =
      nlohmann::ordered_json::parse(R"([{"type":"function","function":{"name":"ab"}}])");
  RLHFDataset with_tools({path}, tok, c, -1, tools);  // "ab|" adds 3 tokens: 8, 16, 11
  EXPECT_EQ(with_tools.size(), 1);
  EXPECT_EQ(with_tools.rows_filtered_out(), 2);
  EXPECT_EQ(with_tools.prompt_text(0), "u|ab>");
  EXPECT_EQ(with_tools.prompt_text(0, tools), "ab|u|ab>");
  EXPECT_EQ(with_tools.collate({0}).column("full_prompts")[0], "u|ab>");
  RLHFDataset without({path}, tok, c);
  EXPECT_EQ(without.size(), 2);
}

TEST(RLHFDataset, NonTensorColumns) {
  const std::string path = write_rows("rl_columns", three_rows());
  RLHFDataset dataset({path}, tiny_tokenizer(), data_config(8, "left"));
  protocol::DataProto batch = dataset.collate({2, 0});
  EXPECT_FALSE(batch.non_tensor_batch.count("prompt"));
  EXPECT_EQ(batch.column("data_source"), (std::vector<nlohmann::json>{"openai/gsm8k", "openai/gsm8k"}));
  EXPECT_EQ(batch.column("ability")[0], "math");
  EXPECT_EQ(batch.column("reward_model")[1], (nlohmann::json{{"style", "rule"}, {"ground_truth", "1"}}));
  EXPECT_EQ(batch.column("extra_info")[1], (nlohmann::json{{"split", "test"}, {"index", 7}}));
  EXPECT_TRUE(batch.column("extra_info")[0].is_null());
  EXPECT_EQ(batch.column("index"), (std::vector<nlohmann::json>{0, 7}));  // extra_info.index, else 0
  EXPECT_EQ(batch.column("tools_kwargs")[0], nlohmann::json::object());
  EXPECT_EQ(batch.column("raw_prompt_ids")[1], (nlohmann::json{25, 3, 5, 6, 4}));
  EXPECT_EQ(batch.column("raw_prompt")[1], nlohmann::json::parse(R"([{"role":"user","content":"ab"}])"));
  EXPECT_EQ(batch.column("full_prompts")[1], "u|ab>");
  EXPECT_EQ(batch.column("full_prompts")[0], "u|abcde>");

  config::DataConfig plain = data_config(8, "left");
  plain.return_raw_chat = false;
  plain.return_full_prompt = false;
  protocol::DataProto lean = RLHFDataset({path}, tiny_tokenizer(), plain).collate({0});
  EXPECT_FALSE(lean.non_tensor_batch.count("raw_prompt"));
  EXPECT_FALSE(lean.non_tensor_batch.count("full_prompts"));
  EXPECT_EQ(RLHFDataset({path}, tiny_tokenizer(), plain).collate({}).size(), 0);
}

TEST(RLHFDataset, PadFallsBackToEosAndChatTemplateKwargsApply) {
  const std::string path = write_rows("rl_eos", three_rows());
  config::DataConfig c = data_config(8, "left");
  c.apply_chat_template_kwargs = config::Node::map();
  c.apply_chat_template_kwargs.set("suffix", config::Node::string("z"));
  RLHFDataset dataset({path}, tiny_tokenizer(/*with_pad=*/false), c);
  EXPECT_EQ(dataset.pad_token_id(), 1);
  // "u|ab>z": two eos pads in front.
  EXPECT_EQ(rl_dataset_row_of(dataset.collate({0}).tensor("input_ids"), 0), (Ids{1, 1, 25, 3, 5, 6, 4, 30}));
}

TEST(RLHFDataset, MaxSamples) {
  std::vector<Value> rows;
  for (int i = 0; i < 10; ++i) {
    rows.push_back(
        rl_dataset_row({message("user", std::string(1, static_cast<char>('a' + i)))}, std::to_string(i), Value()));
  }
  const std::string path = write_rows("rl_max", rows);
  auto answers = [](const RLHFDataset& d) {
    std::vector<std::string> out;
    std::vector<int64_t> all;
    for (int64_t i = 0; i < d.size(); ++i) all.push_back(i);
    const protocol::DataProto batch = d.collate(all);
    for (const auto& rm : batch.column("reward_model")) out.push_back(rm["ground_truth"]);
    return out;
  };
  config::DataConfig c = data_config(8, "error");
  EXPECT_EQ(answers(RLHFDataset({path}, tiny_tokenizer(), c, 3)), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(RLHFDataset({path}, tiny_tokenizer(), c, 10).size(), 10);  // not < rows: all
  EXPECT_EQ(RLHFDataset({path}, tiny_tokenizer(), c, -1).size(), 10);
  // With shuffle: numpy's pick, from /usr/bin/python3 (numpy 1.24):
  //   np.random.default_rng(3).choice(10, size=4, replace=False) -> [2, 0, 1, 5]
  c.shuffle = true;
  c.seed = 3;
  EXPECT_EQ(answers(RLHFDataset({path}, tiny_tokenizer(), c, 4)), (std::vector<std::string>{"2", "0", "1", "5"}));
}

TEST(RLHFDataset, SeveralFilesJsonlAndJson) {
  const std::string dir = test::make_temp_dir("rl_formats");
  std::vector<Value> rows = three_rows();
  io::parquet::write_parquet(dir + "/a.parquet", {rows[0]});
  io::write_jsonl(dir + "/b.jsonl", {rows[1]});
  test::write_file(dir + "/c.json", "[" + io::to_json(rows[2]) + "]");
  RLHFDataset dataset({dir + "/a.parquet", dir + "/b.jsonl", dir + "/c.json"}, tiny_tokenizer(),
                      data_config(8, "left"));
  ASSERT_EQ(dataset.size(), 3);
  std::vector<nlohmann::json> truths;
  const protocol::DataProto batch = dataset.collate({0, 1, 2});
  for (const auto& rm : batch.column("reward_model")) truths.push_back(rm["ground_truth"]);
  EXPECT_EQ(truths, (std::vector<nlohmann::json>{"1", "2", "3"}));
}

TEST(RLHFDataset, BadInputIsOneLineNamingFileRowAndKey) {
  const std::string dir = test::make_temp_dir("rl_errors");
  auto tok = tiny_tokenizer();
  const config::DataConfig c = data_config(8, "left");
  auto check = [&](const std::vector<std::string>& files, const std::vector<std::string>& fragments) {
    const std::string message = error_of([&] { RLHFDataset(files, tok, c); });
    ASSERT_FALSE(message.empty()) << "no error for " << files[0];
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const auto& fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
  };
  check({dir + "/missing.parquet"}, {"missing.parquet", "does not exist"});
  test::write_file(dir + "/rows.csv", "a,b\n");
  check({dir + "/rows.csv"}, {"rows.csv", "unsupported format"});
  io::parquet::write_parquet(dir + "/noprompt.parquet", {Value(Struct{{"question", "q"}, {"data_source", "x"}})});
  check({dir + "/noprompt.parquet"}, {"noprompt.parquet", "no column 'prompt'", "question, data_source"});
  test::write_file(dir + "/rows.jsonl", io::to_json(three_rows()[0]) + "\n{\"question\":\"q\"}\n");
  check({dir + "/rows.jsonl"}, {"rows.jsonl", "row 1", "'prompt'"});
  test::write_file(dir + "/text.jsonl", "{\"prompt\":\"just text\"}\n");
  check({dir + "/text.jsonl"}, {"text.jsonl", "row 0", "list of chat messages"});
  test::write_file(dir + "/broken.jsonl", "{\"prompt\":[\n");
  check({dir + "/broken.jsonl"}, {"broken.jsonl"});
}

TEST(RLHFDataset, FilesFromConfigAcceptAPathOrAList) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  EXPECT_EQ(data_files_from_config(std::string("~/d/train.parquet")),
            (std::vector<std::string>{std::string(home) + "/d/train.parquet"}));
  config::Node list = config::Node::list({config::Node::string("a.parquet"), config::Node::string("~/b.jsonl")});
  EXPECT_EQ(data_files_from_config(list), (std::vector<std::string>{"a.parquet", std::string(home) + "/b.jsonl"}));
  EXPECT_THROW(data_files_from_config(config::Node::integer(3)), Error);

  config::ConfigArgs one;
  one.overrides = {"data.train_files=/x/train.parquet"};
  EXPECT_EQ(config::load_config(one).ppo.data.train_files, (std::vector<std::string>{"/x/train.parquet"}));
  config::ConfigArgs two;
  two.overrides = {"data.val_files=[/x/a.parquet,/x/b.parquet]"};
  EXPECT_EQ(config::load_config(two).ppo.data.val_files, (std::vector<std::string>{"/x/a.parquet", "/x/b.parquet"}));
  config::ConfigArgs bad;
  bad.overrides = {"data.train_files=[1,2]"};
  EXPECT_THROW(config::load_config(bad), Error);
}

TEST(PadOrTruncate, RightPaddingAndErrors) {
  auto [ids, mask] = pad_or_truncate({7, 8}, 4, 0, /*left_pad=*/false, "error");
  EXPECT_EQ(ids, (Ids{7, 8, 0, 0}));
  EXPECT_EQ(mask, (Ids{1, 1, 0, 0}));
  EXPECT_THROW(pad_or_truncate({1, 2, 3}, 2, 0, true, "error"), Error);
  EXPECT_THROW(pad_or_truncate({1, 2, 3}, 2, 0, true, "sideways"), Error);
  EXPECT_EQ(pad_or_truncate({1, 2, 3}, 1, 0, true, "middle").first, (Ids{3}));
}

}  // namespace
}  // namespace verl::data
