// The token ids of a multi-turn conversation, built turn by turn as verl 0.9.1's Continuous Token builder builds
// them (verl/utils/tokenizer/continuous_token.py): the first prompt is the chat template over the dataset's
// messages (tools rendered, add_generation_prompt); the policy's tokens are appended as generated; messages
// appended later (tool results, an interaction's user turn) are rendered as the suffix the template adds after a
// synthetic prefix (system, user and, for tool messages, an assistant turn calling those tools), with the
// generation prompt. Boundary tokens follow verl's builder for the model family: for Qwen models (ChatML), a
// "\n" is inserted when the policy's turn ended at <|im_end|>. Only the policy's tokens get response mask 1.
//
// The builder family follows verl's continuous_token_wiring.py on config.json's model_type: qwen2 (Qwen2 and
// Qwen2.5 checkpoints), qwen3, qwen3_moe, qwen3_5, qwen3_5_moe pick the Qwen builder; every other type (llama
// included) the base builder. Text only: verl's VL builders and its other families (GLM, MiniMax, DeepSeek, GPT-OSS,
// Gemma 4) are not ported; verl's retry with a dummy user turn for templates that need one (Qwen3.5) neither.
//
// The sanity check (multi_turn.tokenization_sanity_check_mode) compares the ids built this way with the chat
// template applied to the whole final conversation, as verl's sglang rollout did (AsyncRolloutRequest.finalize;
// verl 0.9.1's agent loop reads the key but checks nothing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::tokenizer {
class Tokenizer;
}

namespace verl::agent {

class ConversationTokens {
 public:
  // `tools`: null or the list of OpenAI function schemas rendered by the template; `template_kwargs`:
  // data.apply_chat_template_kwargs; `model_type`: config.json's model_type (picks verl's builder family);
  // `template_timeout_s`: data.chat_template_timeout (60 s is its default).
  ConversationTokens(const tokenizer::Tokenizer& tokenizer, nlohmann::ordered_json tools,
                     nlohmann::ordered_json template_kwargs, std::string model_type, double template_timeout_s = 60);

  // The first prompt: template(messages, tools, add_generation_prompt=True), encoded without special tokens.
  std::vector<int64_t> initial_tokens(const nlohmann::ordered_json& messages) const;

  // The tokens to append after `runtime_ids` (prompt + everything so far) for `appended` messages (consecutive
  // "tool" messages form one group; "user" / "system" one message each), ending with the generation prompt:
  // boundary tokens first, all of them context (mask 0). An error when the template does not render the
  // messages as an append-only suffix.
  std::vector<int64_t> context_tokens(const std::vector<int64_t>& runtime_ids,
                                      const nlohmann::ordered_json& appended) const;

  struct SanityCheck {
    bool ok = true;
    std::string detail;  // where the ids first differ (decoded), when !ok
  };
  // `mode`: "strict" (ids equal), "ignore_strippable" (the decoded texts differ in whitespace only), "disable"
  // (always ok); any other mode is an error naming the key. `ids`: prompt + response ids of the conversation
  // (untruncated); `messages`: the final conversation (assistant messages with their tool_calls). As verl does, a
  // trailing generation prompt in `ids` (the conversation stopped after a tool / user turn) is left out; for the
  // Qwen family a last turn ending at <|im_end|> is closed with the "\n" the builder would insert next.
  // Differences from verl's check, which diffs decoded texts: strict compares ids (verl passes two tokenizations
  // of one text), and ignore_strippable judges the differing spans alone (verl strips each span together with 10
  // characters of context around it, so a whitespace difference next to text warns there).
  SanityCheck check(const std::string& mode, const std::vector<int64_t>& ids,
                    const nlohmann::ordered_json& messages) const;

 private:
  const tokenizer::Tokenizer& tokenizer_;
  nlohmann::ordered_json tools_, template_kwargs_;
  std::string model_type_;
  double template_timeout_s_ = 60;
  // verl's QwenContinuousTokenBuilder (model_type qwen2, qwen3, qwen3_moe, qwen3_5, qwen3_5_moe): "\n" is
  // inserted after a runtime prefix ending at <|im_end|>. Every other model type: the base builder.
  bool qwen_ = false;
  int64_t newline_id_ = -1, im_end_id_ = -1;

  std::vector<int64_t> render(const nlohmann::ordered_json& messages, bool add_generation_prompt) const;
  // verl's render_delta_token_id: render(prefix + appended) with the prefix's ids removed; an error when those
  // ids do not start with render(prefix, add_generation_prompt=False).
  std::vector<int64_t> render_delta(const nlohmann::ordered_json& prefix, const nlohmann::ordered_json& appended,
                                    bool add_generation_prompt) const;
};

}  // namespace verl::agent
