// BPE merging, byte_fallback, unk handling, ignore_merges and added-token matching on tiny hand-made
// tokenizer.json files whose ids are worked out by hand; malformed files and bad input give one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::tokenizer {
namespace {

using TokenizerModelIds = std::vector<int32_t>;

Tokenizer from_json(const std::string& text) { return Tokenizer(parse_tokenizer_json(text, "test.json"), {}); }

std::string bpe_json(const std::string& merges, const std::string& extra_model = "") {
  return R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"ab":3,"bc":4,"abc":5,"<unk>":6,"<0x64>":7},
             "unk_token":"<unk>")" + extra_model + R"(,"merges":)" + merges + "}}";
}

TEST(TokenizerBpe, LowestRankMergesFirst) {
  // "b c" has rank 0: a|b|c -> a|bc, and "a bc" is no merge.
  EXPECT_EQ(from_json(bpe_json(R"(["b c","a b","ab c"])")).encode("abc"), (TokenizerModelIds{0, 4}));
  // "a b" first: a|b|c -> ab|c -> abc.
  EXPECT_EQ(from_json(bpe_json(R"(["a b","b c","ab c"])")).encode("abc"), (TokenizerModelIds{5}));
  // Pairs form of merges gives the same.
  EXPECT_EQ(from_json(bpe_json(R"([["a","b"],["b","c"],["ab","c"]])")).encode("abc"), (TokenizerModelIds{5}));
  // Equal ranks: the leftmost pair merges first ("abab" -> ab|ab).
  EXPECT_EQ(from_json(bpe_json(R"(["a b"])")).encode("abab"), (TokenizerModelIds{3, 3}));
}

TEST(TokenizerBpe, IgnoreMergesTakesWholeVocabWords) {
  EXPECT_EQ(from_json(bpe_json(R"(["b c"])", R"(,"ignore_merges":true)")).encode("abc"), (TokenizerModelIds{5}));
  EXPECT_EQ(from_json(bpe_json(R"(["b c"])", R"(,"ignore_merges":false)")).encode("abc"), (TokenizerModelIds{0, 4}));
}

TEST(TokenizerBpe, ByteFallbackAndUnknowns) {
  // 'd' is not in the vocab but <0x64> is; 'e' has neither and becomes <unk>.
  EXPECT_EQ(from_json(bpe_json("[]", R"(,"byte_fallback":true)")).encode("ade"), (TokenizerModelIds{0, 7, 6}));
  EXPECT_EQ(from_json(bpe_json("[]", R"(,"byte_fallback":false)")).encode("ad"), (TokenizerModelIds{0, 6}));
  EXPECT_EQ(from_json(bpe_json("[]", R"(,"fuse_unk":true)")).encode("eea"), (TokenizerModelIds{6, 0}));
  EXPECT_EQ(from_json(bpe_json("[]", R"(,"fuse_unk":false)")).encode("eea"), (TokenizerModelIds{6, 6, 0}));
}

const char* const kAddedJson = R"({
  "normalizer": {"type": "Lowercase"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, " ": 2, "<unk>": 3, "q": 4}, "unk_token": "<unk>", "merges": []},
  "added_tokens": [
    {"id": 10, "content": "<x>", "lstrip": true, "rstrip": false, "single_word": false, "normalized": false, "special": true},
    {"id": 11, "content": "<y>", "lstrip": false, "rstrip": true, "single_word": false, "normalized": false, "special": false},
    {"id": 12, "content": "ab", "lstrip": false, "rstrip": false, "single_word": true, "normalized": false, "special": false},
    {"id": 13, "content": "<x>y", "lstrip": false, "rstrip": false, "single_word": false, "normalized": false, "special": false},
    {"id": 14, "content": "Q", "lstrip": false, "rstrip": false, "single_word": false, "normalized": true, "special": false}
  ]})";

TEST(TokenizerAddedTokens, StripSingleWordLongestAndNormalized) {
  const Tokenizer tok = from_json(kAddedJson);
  EXPECT_EQ(tok.encode("a <x>b"), (TokenizerModelIds{0, 10, 1}));   // lstrip swallows the space before
  EXPECT_EQ(tok.encode("a<y>  b"), (TokenizerModelIds{0, 11, 1}));  // rstrip swallows the spaces after
  EXPECT_EQ(tok.encode("ab"), (TokenizerModelIds{12}));             // single word, alone
  EXPECT_EQ(tok.encode("aab"), (TokenizerModelIds{0, 0, 1}));       // touches a word character: not matched
  EXPECT_EQ(tok.encode("a ab b"), (TokenizerModelIds{0, 2, 12, 2, 1}));
  EXPECT_EQ(tok.encode("<x>y"), (TokenizerModelIds{13}));   // longest match wins
  EXPECT_EQ(tok.encode("aQ"), (TokenizerModelIds{0, 14}));  // normalized token: matched after lowercasing
  EXPECT_EQ(tok.decode({0, 10, 11, 1}), "a <x> <y> b");   // no decoder: tokens joined by spaces
  EXPECT_EQ(tok.decode({0, 10, 11, 1}, /*skip_special_tokens=*/true), "a <y> b");
  EXPECT_EQ(tok.decode({0, 999, 1}), "a b");              // unknown ids are skipped, as in HF
  EXPECT_EQ(tok.token_to_id("<y>"), 11);
  EXPECT_EQ(tok.id_to_token(14), "Q");
  EXPECT_EQ(tok.vocab_size(), 15u);
}

void tokenizer_model_expect_error(const std::string& text, const std::string& fragment) {
  try {
    from_json(text);
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TokenizerErrors, MalformedFilesNameTheProblem) {
  tokenizer_model_expect_error("{not json", "test.json: not valid JSON");
  tokenizer_model_expect_error("[1, 2]", "expected a JSON object");
  tokenizer_model_expect_error("{}", "missing the \"model\" object");
  tokenizer_model_expect_error(R"({"model":{"type":"WordPiece","vocab":{}}})", "unsupported model type 'WordPiece'");
  tokenizer_model_expect_error(R"({"model":{"type":"Unigram","vocab":[]}})", "unsupported model type 'Unigram'");
  tokenizer_model_expect_error(bpe_json(R"(["a z"])"), "uses a token that is not in the vocab");
  tokenizer_model_expect_error(bpe_json(R"(["abc"])"), "must be two tokens separated by one space");
  tokenizer_model_expect_error(bpe_json(R"([42])"), "must be \"a b\" or [\"a\", \"b\"]");
  tokenizer_model_expect_error(R"({"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}})",
                               "must be a non-negative integer");
  tokenizer_model_expect_error(
      R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Punctuation"}})",
      "unsupported pre_tokenizer type 'Punctuation'");
  tokenizer_model_expect_error(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"WordPiece"}})",
                               "unsupported decoder type 'WordPiece'");
  tokenizer_model_expect_error(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":"x"}]})",
                               "added_tokens[0] needs an integer \"id\"");
  tokenizer_model_expect_error(R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[],"dropout":0.1}})",
                               "dropout is not supported");
}

// Random byte edits of a valid file: each either loads (and encodes) or is one verl::Error; never a crash.
TEST(TokenizerErrors, MutatedFilesNeverCrash) {
  const std::string base = kAddedJson;
  std::mt19937 rng(7);
  int loaded = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, 1, "{}[]\",:0a\\"[rng() % 10]);
      }
    }
    try {
      const Tokenizer tok = from_json(text);
      tok.decode(tok.encode("a <x>b ab Q"));
      ++loaded;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(loaded + rejected, 400);
}

TEST(TokenizerErrors, InvalidUtf8InputIsAnErrorWithItsOffset) {
  const Tokenizer tok = from_json(kAddedJson);
  try {
    tok.encode("ab\xC3(");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 (invalid byte 0xc3 at byte offset 2)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(tok.encode("\xED\xA0\x80"), Error);  // an encoded surrogate
  EXPECT_THROW(tok.encode("\xC0\xAF"), Error);      // overlong
}

TEST(TokenizerErrors, MissingFolderOrFile) {
  EXPECT_THROW(Tokenizer::from_folder("/nonexistent/model"), Error);
  const std::string dir = test::make_temp_dir("tokenizer_no_json");
  try {
    Tokenizer::from_folder(dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.json"), std::string::npos) << e.what();
  }
  test::write_file(dir + "/tokenizer.json", kAddedJson);
  test::write_file(dir + "/tokenizer_config.json", "{\"eos_token\": ");
  EXPECT_THROW(Tokenizer::from_folder(dir), Error);
}

TEST(TokenizerConfigFiles, SpecialTokensTemplateAndGenerationEos) {
  const std::string dir = test::make_temp_dir("tokenizer_config_files");
  test::write_file(dir + "/tokenizer.json", kAddedJson);
  test::write_file(dir + "/tokenizer_config.json",
                   R"({"bos_token": {"__type": "AddedToken", "content": "<x>"}, "eos_token": "<y>",
                       "add_bos_token": true, "chat_template": [{"name": "default", "template": "T1"},
                       {"name": "tool_use", "template": "T2"}]})");
  test::write_file(dir + "/special_tokens_map.json", R"({"eos_token": {"content": "ab", "lstrip": false}})");
  test::write_file(dir + "/generation_config.json", R"({"eos_token_id": [11, 13]})");
  const Tokenizer tok = Tokenizer::from_folder(dir);
  EXPECT_EQ(tok.bos_token_id(), 10);
  EXPECT_EQ(tok.eos_token_id(), 12);  // special_tokens_map.json overrides tokenizer_config.json
  EXPECT_EQ(tok.eos_token_ids(), (TokenizerModelIds{11, 13, 12}));
  EXPECT_EQ(tok.config().add_bos_token, true);
  EXPECT_EQ(tok.config().chat_template, "T1");
  EXPECT_EQ(tok.config().named_chat_templates.at("tool_use"), "T2");
  EXPECT_TRUE(tok.is_special(12));  // named eos token counts as special for skip_special_tokens
  test::write_file(dir + "/chat_template.jinja", "T3");
  EXPECT_EQ(Tokenizer::from_folder(dir).config().chat_template, "T3");
}

// transformers' LlamaTokenizerFast builds [bos] A [eos] from add_bos_token / add_eos_token.
TEST(TokenizerConfigFiles, LlamaAddBosAddEos) {
  const std::string dir = test::make_temp_dir("tokenizer_llama_bos_eos");
  test::write_file(dir + "/tokenizer.json", kAddedJson);
  test::write_file(dir + "/tokenizer_config.json",
                   R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<x>", "eos_token": "<y>",
                       "add_bos_token": true, "add_eos_token": true})");
  EXPECT_EQ(Tokenizer::from_folder(dir).encode("ab"), (TokenizerModelIds{10, 12, 11}));
  EXPECT_EQ(Tokenizer::from_folder(dir).encode("ab", false), (TokenizerModelIds{12}));
  test::write_file(dir + "/tokenizer_config.json",
                   R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<x>", "add_bos_token": false})");
  EXPECT_EQ(Tokenizer::from_folder(dir).encode("ab"), (TokenizerModelIds{12}));
  test::write_file(dir + "/tokenizer_config.json", R"({"tokenizer_class": "LlamaTokenizer", "add_bos_token": true})");
  EXPECT_THROW(Tokenizer::from_folder(dir), Error);
}

}  // namespace
}  // namespace verl::tokenizer
