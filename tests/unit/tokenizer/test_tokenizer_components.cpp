// Normalizers, pre-tokenizers, decoders and post-processors on hand-computed examples (HF tokenizers'
// documented outputs where it gives them), including types the shipped Qwen3/Llama files do not use.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/error_text.h"
#include "verl/common/error.h"
#include "verl/tokenizer/decoders.h"
#include "verl/tokenizer/normalizers.h"
#include "verl/tokenizer/post_processors.h"
#include "verl/tokenizer/pre_tokenizers.h"

namespace verl::tokenizer {
namespace {

using nlohmann::json;

std::string tokenizer_components_normalize(const std::string& config, const std::string& text) {
  return make_normalizer(json::parse(config), "test")->normalize(text);
}

std::vector<std::string> pre_tokenize(const std::string& config, const std::string& text) {
  auto pre = make_pre_tokenizer(json::parse(config), "test");
  std::vector<Piece> pieces = {Piece{text, true}};
  pre->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (const auto& piece : pieces) out.push_back(piece.text);
  return out;
}

std::string decode(const std::string& config, const std::vector<std::string>& tokens) {
  return make_decoder(json::parse(config), "test")->decode(tokens);
}

using Strings = std::vector<std::string>;

TEST(TokenizerNormalizers, UnicodeForms) {
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"NFC"})", "e\xCC\x81"), "\xC3\xA9");  // e + U+0301 -> é
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"NFD"})", "\xC3\xA9"), "e\xCC\x81");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"NFKC"})", "\xEF\xAC\x81 \xE2\x91\xA0"), "fi 1");  // ﬁ ① -> fi 1
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"NFKD"})", "\xE1\xBA\x9B"), "s\xCC\x87");  // ẛ -> s + U+0307
}

TEST(TokenizerNormalizers, LowercaseReplacePrependStripSequence) {
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"Lowercase"})", "HeLLo \xC3\x80\xC3\x89 \xC4\xB0"),
            "hello \xC3\xA0\xC3\xA9 i\xCC\x87");
  EXPECT_EQ(
      tokenizer_components_normalize(R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"})", "a b  c"),
      "a\xE2\x96\x81"
      "b\xE2\x96\x81\xE2\x96\x81"
      "c");
  EXPECT_EQ(
      tokenizer_components_normalize(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "})", "a \t\n b"),
      "a b");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"Replace","pattern":{"String":"a.b"},"content":"X"})", "a.b axb"),
            "X axb");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"Prepend","prepend":"_"})", "hi"), "_hi");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"Prepend","prepend":"_"})", ""), "");
  EXPECT_EQ(
      tokenizer_components_normalize(R"({"type":"Strip","strip_left":true,"strip_right":true})", " \t hi there \n"),
      "hi there");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"Strip","strip_left":false,"strip_right":true})", "  hi  "),
            "  hi");
  EXPECT_EQ(tokenizer_components_normalize(R"({"type":"StripAccents"})", "e\xCC\x81t\xC3\xA9"),
            "et\xC3\xA9");  // only combining marks go
  EXPECT_EQ(tokenizer_components_normalize(
                R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"},{"type":"Lowercase"}]})",
                "\xC3\x89t\xC3\xA9"),
            "ete");
}

TEST(TokenizerNormalizers, UnsupportedTypeNamesIt) {
  try {
    make_normalizer(json::parse(R"({"type":"Precompiled"})"), "x.json normalizer");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported normalizer type 'Precompiled'"), std::string::npos) << e.what();
  }
}

// Each part kind: a Sequence without its array, an entry that is not an object with a string "type", and a null
// entry (skipped), with the entry's place in the error.
TEST(TokenizerComponents, SequenceAndTypeErrorsNameThePart) {
  EXPECT_NE(test::error_of([] {
              make_normalizer(json::parse(R"({"type":"Sequence"})"), "x.json normalizer");
            }).find("x.json normalizer Sequence: expected an array \"normalizers\""),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              make_pre_tokenizer(json::parse(R"({"type":"Sequence","pretokenizers":{}})"), "p");
            }).find("p Sequence: expected an array \"pretokenizers\""),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              make_decoder(json::parse(R"({"type":"Sequence","decoders":[{"type":"Fuse"},7]})"), "d");
            }).find("d Sequence[1]: expected an object with a string \"type\", got 7"),
            std::string::npos);
  EXPECT_NE(test::error_of([] {
              make_post_processor(json::parse(R"({"type":3})"), "pp");
            }).find("pp: expected an object with a string \"type\""),
            std::string::npos);
  auto decoder = make_decoder(json::parse(R"({"type":"Sequence","decoders":[null,{"type":"Fuse"}]})"), "d");
  EXPECT_EQ(decoder->decode({"a", "b"}), "ab");
}

// The example of HF tokenizers' SplitDelimiterBehavior documentation: "the-final--countdown" split on "-".
TEST(TokenizerPreTokenizers, SplitBehaviours) {
  const std::string text = "the-final--countdown";
  auto split = [&](const std::string& behavior, bool invert = false) {
    return pre_tokenize(R"({"type":"Split","pattern":{"String":"-"},"behavior":")" + behavior +
                            R"(","invert":)" + (invert ? "true" : "false") + "}",
                        text);
  };
  EXPECT_EQ(split("Removed"), (Strings{"the", "final", "countdown"}));
  EXPECT_EQ(split("Isolated"), (Strings{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithPrevious"), (Strings{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(split("MergedWithNext"), (Strings{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(split("Contiguous"), (Strings{"the", "-", "final", "--", "countdown"}));
  EXPECT_EQ(split("Removed", true), (Strings{"-", "-", "-"}));
}

TEST(TokenizerPreTokenizers, SplitRegexWithUnicodeProperties) {
  EXPECT_EQ(pre_tokenize(R"({"type":"Split","pattern":{"Regex":"\\p{L}+|\\p{N}"},"behavior":"Isolated","invert":false})",
                         "h\xC3\xA9llo 42\xE4\xBD\xA0"),
            (Strings{"h\xC3\xA9llo", " ", "4", "2", "\xE4\xBD\xA0"}));
  EXPECT_THROW(make_pre_tokenizer(json::parse(R"({"type":"Split","pattern":{"Regex":"(unclosed"},"behavior":"Isolated"})"),
                                  "test"),
               Error);
  EXPECT_THROW(make_pre_tokenizer(json::parse(R"({"type":"Split","pattern":{"Regex":"a"},"behavior":"Sideways"})"), "test"),
               Error);
}

TEST(TokenizerPreTokenizers, ByteLevelWithRegexAndPrefixSpace) {
  // HF docs: ByteLevel(add_prefix_space=True).pre_tokenize_str("Hello my friend, how are you?")
  EXPECT_EQ(pre_tokenize(R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})",
                         "Hello my friend, how are you?"),
            (Strings{"\xC4\xA0Hello", "\xC4\xA0my", "\xC4\xA0" "friend", ",", "\xC4\xA0how", "\xC4\xA0" "are",
                     "\xC4\xA0you", "?"}));
  // Without the regex the piece stays whole; bytes map to GPT-2's alphabet (space -> Ġ, \n -> Ċ, é -> Ã©).
  EXPECT_EQ(pre_tokenize(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})", "a b\n\xC3\xA9"),
            (Strings{"a\xC4\xA0" "b\xC4\x8A\xC3\x83\xC2\xA9"}));
}

TEST(TokenizerPreTokenizers, DigitsMetaspaceWhitespaceSequence) {
  EXPECT_EQ(pre_tokenize(R"({"type":"Digits","individual_digits":true})", "Call 123 please"),
            (Strings{"Call ", "1", "2", "3", " please"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Digits","individual_digits":false})", "Call 123 please"),
            (Strings{"Call ", "123", " please"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":true})",
                         "Hey friend!"),
            (Strings{"\xE2\x96\x81Hey", "\xE2\x96\x81" "friend!"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"never","split":false})",
                         "Hey friend!"),
            (Strings{"Hey\xE2\x96\x81" "friend!"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Whitespace"})", "Hello there, you!"),
            (Strings{"Hello", "there", ",", "you", "!"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"WhitespaceSplit"})", " a\tb  c "), (Strings{"a", "b", "c"}));
  EXPECT_EQ(pre_tokenize(R"({"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Digits","individual_digits":true}]})",
                         "ab12 3"),
            (Strings{"ab", "1", "2", "3"}));
}

TEST(TokenizerDecoders, ByteFallbackFuseStripReplaceMetaspace) {
  // <0xE4><0xBD><0xA0> is "你"; a lone <0xE4> is not UTF-8 and becomes one U+FFFD.
  EXPECT_EQ(decode(R"({"type":"ByteFallback"})", {"<0xE4>", "<0xBD>", "<0xA0>", "a"}), "\xE4\xBD\xA0" "a");
  EXPECT_EQ(decode(R"({"type":"ByteFallback"})", {"<0xE4>", "b", "<0xFF>", "<0x41>"}),
            "\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(decode(R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]})",
                   {"\xE2\x96\x81Hello", "\xE2\x96\x81world", "<0x21>"}),
            "Hello world!");
  EXPECT_EQ(decode(R"({"type":"Strip","content":"x","start":2,"stop":1})", {"xxxaxx"}), "xax");
  EXPECT_EQ(decode(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always"})",
                   {"\xE2\x96\x81Hey", "\xE2\x96\x81" "friend"}),
            "Hey friend");
  EXPECT_EQ(decode(R"({"type":"ByteLevel"})", {"\xC4\xA0Hello", "\xC4\x8A", "\xC3\x83\xC2\xA9"}), " Hello\n\xC3\xA9");
  // Bytes that are not UTF-8 decode lossily.
  EXPECT_EQ(decode(R"({"type":"ByteLevel"})", {"\xC3\x83"}), "\xEF\xBF\xBD");
}

TEST(TokenizerPostProcessors, TemplateAndByteLevel) {
  auto processor = make_post_processor(json::parse(R"({"type":"TemplateProcessing",
      "single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],
      "pair":[], "special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[2],"tokens":["</s>"]}}})"),
                                       "test");
  EXPECT_EQ(processor->process({7, 8}, true), (std::vector<int32_t>{1, 7, 8, 2}));
  EXPECT_EQ(processor->process({7, 8}, false), (std::vector<int32_t>{7, 8}));
  auto byte_level = make_post_processor(json::parse(R"({"type":"ByteLevel","add_prefix_space":true})"), "test");
  EXPECT_EQ(byte_level->process({7, 8}, true), (std::vector<int32_t>{7, 8}));
  EXPECT_THROW(make_post_processor(json::parse(R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<x>"}}]})"),
                                   "test"),
               Error);
  EXPECT_THROW(make_post_processor(json::parse(R"({"type":"BertProcessing"})"), "test"), Error);
  // Llama 3.1's form: Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)].
  auto sequence = make_post_processor(json::parse(R"({"type":"Sequence","processors":[
      {"type":"ByteLevel","add_prefix_space":true,"trim_offsets":false,"use_regex":true},
      {"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
       "pair":[],"special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[128000],"tokens":["<|begin_of_text|>"]}}}]})"),
                                      "test");
  EXPECT_EQ(sequence->process({9906}, true), (std::vector<int32_t>{128000, 9906}));
  EXPECT_EQ(sequence->process({9906}, false), (std::vector<int32_t>{9906}));
}

// PCRE2 in UCP mode treats U+0085 as whitespace and U+FEFF as not, like HF's Rust/Oniguruma regexes (and
// unlike JavaScript, which is why the node-compared corpus leaves both out).
TEST(TokenizerPreTokenizers, WhitespaceClassFollowsHuggingFace) {
  EXPECT_EQ(pre_tokenize(R"({"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Removed","invert":false})",
                         "a\xC2\x85" "b\xEF\xBB\xBF" "c"),
            (Strings{"a", "b\xEF\xBB\xBF" "c"}));
}

}  // namespace
}  // namespace verl::tokenizer
