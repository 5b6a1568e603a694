// The demo's byte-level BPE tokenizer folder: words merge to single tokens, digits stay single characters,
// the ChatML template renders as Qwen2's format, special tokens and decoding round-trip.
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

TEST(TokenizerBuilder, WordsBecomeSingleTokensDigitsStaySingle) {
  const std::string dir = make_temp_dir("tokenizer_builder");
  int64_t vocab = tokenizer::write_byte_level_bpe_folder(dir, demo_like_tokenizer_spec());
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(dir);
  EXPECT_EQ(static_cast<int64_t>(tok.vocab_size()), vocab);
  EXPECT_LT(vocab, 160);  // 96 bytes + merged prefixes of 7 words + 3 specials
  for (const char* word : {"user", "assistant", "system", "####", "Answer"}) {
    EXPECT_EQ(tok.encode(word, false).size(), 1u) << word;
  }
  EXPECT_EQ(tok.encode("Answer after ####.", false).size(), 3u);
  EXPECT_EQ(tok.encode("12+35=", false).size(), 6u);
  std::vector<int32_t> response = tok.encode("#### -47<|im_end|>", false);
  ASSERT_EQ(response.size(), 6u);  // "####", " ", "-", "4", "7", eos
  EXPECT_EQ(response.back(), *tok.eos_token_id());
  EXPECT_EQ(*tok.token_to_id("<|im_start|>"), vocab - 3);
  EXPECT_EQ(*tok.token_to_id("<|im_end|>"), vocab - 2);
  EXPECT_EQ(*tok.pad_token_id(), vocab - 1);
  EXPECT_EQ(tok.decode(response, true), "#### -47");
  EXPECT_EQ(tok.decode(tok.encode("7*8=\nAnswer after ####.", false)), "7*8=\nAnswer after ####.");
  // Each printable byte is its own token, in order.
  EXPECT_EQ(*tok.token_to_id("0"), '0' - 0x20);
}

TEST(TokenizerBuilder, ChatMLTemplateRendersQwenFormat) {
  const std::string dir = make_temp_dir("tokenizer_builder_chat");
  tokenizer::write_byte_level_bpe_folder(dir, demo_like_tokenizer_spec());
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(dir);
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "3-9=\nAnswer after ####."}}});
  inputs.add_generation_prompt = true;
  EXPECT_EQ(tokenizer::apply_chat_template(tok, inputs),
            "<|im_start|>user\n3-9=\nAnswer after ####.<|im_end|>\n<|im_start|>assistant\n");
  inputs.add_generation_prompt = false;
  inputs.messages.push_back({{"role", "assistant"}, {"content", "#### -6"}});
  EXPECT_EQ(tokenizer::apply_chat_template(tok, inputs),
            "<|im_start|>user\n3-9=\nAnswer after ####.<|im_end|>\n<|im_start|>assistant\n#### -6<|im_end|>\n");
}

TEST(TokenizerBuilder, RejectsWordsOutsideTheAlphabet) {
  tokenizer::ByteLevelBPESpec spec = demo_like_tokenizer_spec();
  spec.words.push_back("caf\xc3\xa9");
  EXPECT_THROW(tokenizer::build_byte_level_vocab(spec), Error);
  spec = demo_like_tokenizer_spec();
  spec.eos_token = "</s>";
  EXPECT_THROW(tokenizer::write_byte_level_bpe_folder(make_temp_dir("tokenizer_builder_bad"), spec), Error);
}

}  // namespace
}  // namespace verl::test
