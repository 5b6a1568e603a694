#include "verl/agent/conversation_tokens.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "verl/common/error.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/unicode.h"

namespace verl::agent {

namespace {

using nlohmann::ordered_json;

constexpr const char* kConversationTokensComponent = "agent";
constexpr const char* kModeKey = "actor_rollout_ref.rollout.multi_turn.tokenization_sanity_check_mode";

// verl/utils/tokenizer/continuous_token.py: the synthetic history appended messages are rendered after.
ordered_json synthetic_system() {
  return {{"role", "system"}, {"content", "continuous token synthetic system"}};
}
ordered_json synthetic_user() { return {{"role", "user"}, {"content", "continuous token synthetic user"}}; }

// continuous_token_wiring.py's _MODEL_TYPE_TO_FAMILY entries that pick QwenContinuousTokenBuilder. Qwen2.5
// checkpoints say "qwen2". Every model type not in verl's table (llama included) gets the base builder.
bool is_qwen_model_type(std::string model_type) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  model_type.erase(model_type.begin(), std::find_if(model_type.begin(), model_type.end(), not_space));
  model_type.erase(std::find_if(model_type.rbegin(), model_type.rend(), not_space).base(), model_type.end());
  std::transform(model_type.begin(), model_type.end(), model_type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const std::set<std::string> kQwen = {"qwen2", "qwen3", "qwen3_moe", "qwen3_5", "qwen3_5_moe"};
  return kQwen.count(model_type) > 0;
}

// message.get("role") as a string ("" when absent or not a string).
std::string role_of(const ordered_json& message) {
  if (!message.is_object()) return "";
  const auto it = message.find("role");
  return it != message.end() && it->is_string() ? it->get<std::string>() : "";
}

// Python truthiness of a JSON value.
bool truthy(const ordered_json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<int64_t>() != 0;
  if (value.is_number_float()) return value.get<double>() != 0.0;
  if (value.is_string() || value.is_structured()) return !value.empty();
  return true;
}

// _synthetic_assistant_for_tools: an assistant turn calling one tool per tool message, so the template renders
// the tool messages as the responses to it.
ordered_json synthetic_assistant_for_tools(const ordered_json& tool_messages) {
  ordered_json tool_calls = ordered_json::array();
  for (size_t index = 0; index < tool_messages.size(); ++index) {
    const ordered_json& message = tool_messages[index];
    ordered_json id = str_cat("continuous_token_call_", index);  // _tool_call_id_or_dummy
    if (message.contains("tool_call_id") && !message["tool_call_id"].is_null()) id = message["tool_call_id"];
    std::string name = "continuous_token_tool";  // _tool_message_name_or_dummy
    if (message.contains("name") && truthy(message["name"])) {
      name = message["name"].is_string() ? message["name"].get<std::string>() : message["name"].dump();
    }
    tool_calls.push_back({{"id", id},
                          {"type", "function"},
                          {"function", {{"name", name}, {"arguments", ordered_json::object()}}}});
  }
  return {{"role", "assistant"}, {"content", ""}, {"reasoning_content", "reasoning"}, {"tool_calls", tool_calls}};
}

// _iter_append_groups: consecutive tool messages form one group, any other message a group of its own.
std::vector<ordered_json> append_groups(const ordered_json& appended) {
  std::vector<ordered_json> groups;
  for (size_t i = 0; i < appended.size();) {
    ordered_json group = ordered_json::array({appended[i]});
    size_t end = i + 1;
    if (role_of(appended[i]) == "tool") {
      while (end < appended.size() && role_of(appended[end]) == "tool") group.push_back(appended[end++]);
    }
    groups.push_back(std::move(group));
    i = end;
  }
  return groups;
}

std::vector<int32_t> to_int32(const std::vector<int64_t>& ids) { return {ids.begin(), ids.end()}; }

// Python's str.isspace: Unicode White_Space plus the separators U+001C..U+001F.
std::string without_whitespace(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t start = pos;
    const int32_t c = tokenizer::next_code_point(text, pos);
    if (c >= 0 && (tokenizer::is_whitespace(c) || (c >= 0x1c && c <= 0x1f))) continue;
    out.append(text, start, pos - start);
  }
  return out;
}

// The first differing id, with the decoded text around it on both sides (verl logs 10 characters of context).
std::string first_difference(const tokenizer::Tokenizer& tok, const std::vector<int64_t>& expected,
                             const std::vector<int64_t>& got) {
  size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  const auto window = [&](const std::vector<int64_t>& ids) {
    const size_t from = i >= 4 ? i - 4 : 0;
    const size_t to = std::min(ids.size(), i + 8);
    return nlohmann::json(tok.decode(to_int32({ids.begin() + from, ids.begin() + to}))).dump();
  };
  return str_cat("ids differ at position ", i, " (template: ", expected.size(), " ids, built: ", got.size(),
                 " ids); template renders ", window(expected), ", built ids decode to ", window(got));
}

}  // namespace

ConversationTokens::ConversationTokens(const tokenizer::Tokenizer& tokenizer, ordered_json tools,
                                       ordered_json template_kwargs, std::string model_type,
                                       double template_timeout_s)
    : tokenizer_(tokenizer),
      tools_(std::move(tools)),
      template_kwargs_(std::move(template_kwargs)),
      model_type_(std::move(model_type)),
      template_timeout_s_(template_timeout_s) {
  if (template_kwargs_.is_null()) template_kwargs_ = ordered_json::object();
  VERL_CHECK(template_kwargs_.is_object(), kConversationTokensComponent, "chat template kwargs must be a map, got ",
             template_kwargs_.dump());
  VERL_CHECK(tools_.is_null() || tools_.is_array(), kConversationTokensComponent,
             "tools must be a list of function schemas, got ", tools_.dump());
  qwen_ = is_qwen_model_type(model_type_);
  if (qwen_) {
    // QwenContinuousTokenBuilder.__init__
    const std::vector<int32_t> newline = tokenizer_.encode("\n", /*add_special_tokens=*/false);
    VERL_CHECK(newline.size() == 1, kConversationTokensComponent,
               "expected the Qwen newline to tokenize to one token, got ", newline.size(), " tokens (model_type ",
               model_type_, ")");
    newline_id_ = newline[0];
    const std::optional<int32_t> im_end = tokenizer_.token_to_id("<|im_end|>");
    VERL_CHECK(im_end.has_value(), kConversationTokensComponent,
               "the tokenizer does not define the token '<|im_end|>' that ", "model_type ", model_type_,
               " (a Qwen ChatML model) ends its turns with");
    im_end_id_ = *im_end;
  }
}

std::vector<int64_t> ConversationTokens::render(const ordered_json& messages, bool add_generation_prompt) const {
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.tools = tools_;
  inputs.extra_kwargs = template_kwargs_;
  inputs.limits.timeout_s = template_timeout_s_;
  // transformers' apply_chat_template(tokenize=True) encodes the rendered text with add_special_tokens=False.
  const std::vector<int32_t> ids =
      tokenizer_.encode(tokenizer::apply_chat_template(tokenizer_, inputs), /*add_special_tokens=*/false);
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> ConversationTokens::render_delta(const ordered_json& prefix, const ordered_json& appended,
                                                      bool add_generation_prompt) const {
  const std::vector<int64_t> prefix_ids = render(prefix, /*add_generation_prompt=*/false);
  ordered_json full = prefix;
  for (const auto& message : appended) full.push_back(message);
  std::vector<int64_t> full_ids = render(full, add_generation_prompt);
  if (full_ids.size() < prefix_ids.size() || !std::equal(prefix_ids.begin(), prefix_ids.end(), full_ids.begin())) {
    std::string roles;
    for (const auto& message : appended) roles += (roles.empty() ? "" : ", ") + role_of(message);
    VERL_FAIL(kConversationTokensComponent, "the chat template does not render the appended message(s) (roles: ",
              roles.empty() ? "generation_prompt" : roles,
              ") as a suffix of the conversation before them, so their tokens cannot be appended to the running ",
              "ids (verl's Continuous Token suffix diff fails the same way); ",
              first_difference(tokenizer_, prefix_ids, full_ids));
  }
  full_ids.erase(full_ids.begin(), full_ids.begin() + static_cast<std::ptrdiff_t>(prefix_ids.size()));
  return full_ids;
}

std::vector<int64_t> ConversationTokens::initial_tokens(const ordered_json& messages) const {
  VERL_CHECK(messages.is_array(), kConversationTokensComponent, "the prompt messages must be a list, got ",
             messages.dump());
  return render(messages, /*add_generation_prompt=*/true);
}

// verl's merge_context_tokens = tokenize_context_incremental_messages (each append group rendered after its
// synthetic prefix, the generation prompt fused into the last group) then _merge_context_token_ids (boundary).
std::vector<int64_t> ConversationTokens::context_tokens(const std::vector<int64_t>& runtime_ids,
                                                        const ordered_json& appended) const {
  VERL_CHECK(appended.is_array(), kConversationTokensComponent, "the appended messages must be a list, got ",
             appended.dump());
  for (const auto& message : appended) {
    const std::string role = role_of(message);
    VERL_CHECK(
        role == "tool" || role == "user" || role == "system" || role == "assistant", kConversationTokensComponent,
        "only tool, user, system and assistant messages can be appended to a conversation, got ", message.dump());
  }
  std::vector<int64_t> appended_ids;
  const std::vector<ordered_json> groups = append_groups(appended);
  for (size_t index = 0; index < groups.size(); ++index) {
    const ordered_json& group = groups[index];
    const bool last = index + 1 == groups.size();  // the generation prompt comes with the last group
    const std::string role = role_of(group[0]);
    std::vector<int64_t> group_ids;
    if (role == "tool") {
      group_ids = render_delta(
          ordered_json::array({synthetic_system(), synthetic_user(), synthetic_assistant_for_tools(group)}), group, last);
    } else {
      VERL_CHECK(!(role == "assistant" && last), kConversationTokensComponent,
                 "the appended messages cannot end with an assistant message (the policy writes that turn)");
      group_ids = render_delta(ordered_json::array({synthetic_system(), synthetic_user()}), group, last);
    }
    appended_ids.insert(appended_ids.end(), group_ids.begin(), group_ids.end());
  }
  // QwenContinuousTokenBuilder._merge_context_token_ids: ChatML renders "<|im_end|>\n" after a turn, while
  // generation stops at <|im_end|>.
  std::vector<int64_t> tokens;
  if (qwen_ && !runtime_ids.empty() && runtime_ids.back() == im_end_id_) tokens.push_back(newline_id_);
  tokens.insert(tokens.end(), appended_ids.begin(), appended_ids.end());
  return tokens;
}

// verl's AsyncRolloutRequest.finalize (verl/workers/rollout/schemas.py, the sglang multi-turn rollout; verl 0.9.1's
// agent loop reads the key but runs no check): a trailing generation prompt is removed, then the ids are compared
// with the chat template over the final messages (add_generation_prompt=False).
ConversationTokens::SanityCheck ConversationTokens::check(const std::string& mode, const std::vector<int64_t>& ids,
                                                          const ordered_json& messages) const {
  VERL_CHECK(mode == "strict" || mode == "ignore_strippable" || mode == "disable", kConversationTokensComponent,
             kModeKey, " is '", mode, "'; expected strict, ignore_strippable or disable");
  SanityCheck result;
  if (mode == "disable") return result;
  const std::vector<int64_t> expected = render(messages, /*add_generation_prompt=*/false);
  std::vector<int64_t> built = ids;
  // _remove_generation_prompt_ids_if_present: the conversation stopped after a tool / user turn.
  const std::vector<int64_t> with_prompt = render(messages, /*add_generation_prompt=*/true);
  if (with_prompt.size() > expected.size() && std::equal(expected.begin(), expected.end(), with_prompt.begin())) {
    const size_t n = with_prompt.size() - expected.size();
    if (built.size() >= n && std::equal(with_prompt.end() - static_cast<std::ptrdiff_t>(n), with_prompt.end(),
                                        built.end() - static_cast<std::ptrdiff_t>(n))) {
      built.resize(built.size() - n);
    }
  }
  // The policy's last turn stopped at <|im_end|>; the Qwen builder closes a turn with the "\n" the template puts
  // after it (as it would before any further message).
  if (qwen_ && !built.empty() && built.back() == im_end_id_) built.push_back(newline_id_);
  if (built == expected) return result;
  if (mode == "ignore_strippable") {
    // verl diffs the decoded texts and passes when every differing chunk is whitespace only. Deleting all
    // whitespace from both texts and comparing decides the same: the texts then differ only in whitespace.
    // (verl strips chunks that include 10 characters of context on each side, so a whitespace difference next
    // to text still warns there; here the differing span itself is what is judged, as the mode's name says.)
    const std::string expected_text = tokenizer_.decode(to_int32(expected));
    const std::string built_text = tokenizer_.decode(to_int32(built));
    if (without_whitespace(expected_text) == without_whitespace(built_text)) return result;
  }
  result.ok = false;
  result.detail = str_cat("tokenization sanity check (", mode, ") failed: the conversation's ids are not the chat ",
                          "template's rendering of its messages: ", first_difference(tokenizer_, expected, built));
  return result;
}

}  // namespace verl::agent
