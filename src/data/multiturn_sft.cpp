#include "verl/data/multiturn_sft.h"

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/tokenizer/chat_template.h"

namespace verl::data {

namespace {

nlohmann::ordered_json to_ordered_json(const io::Value& value) {
  return nlohmann::ordered_json::parse(io::to_json(value));
}

// Python's a[:-k] for k >= 0 (k == 0 gives the empty list, as in Python).
std::vector<int32_t> drop_last(const std::vector<int32_t>& a, size_t k) {
  if (k == 0 || k >= a.size()) return {};
  return std::vector<int32_t>(a.begin(), a.end() - static_cast<std::ptrdiff_t>(k));
}

}  // namespace

MultiTurnSFTTokenizer::MultiTurnSFTTokenizer(const tokenizer::Tokenizer& tokenizer, const config::SFTDataConfig& config)
    : tokenizer_(tokenizer), config_(config) {
  // verl's extract_system_prompt_and_generation (apply_chat_template_kwargs only, no enable_thinking).
  const nlohmann::ordered_json empty_user = {{"role", "user"}, {"content", ""}};
  const nlohmann::ordered_json none;
  const auto one = render(nlohmann::ordered_json::array({empty_user}), none, false, config.apply_chat_template_kwargs);
  const auto two =
      render(nlohmann::ordered_json::array({empty_user, empty_user}), none, false, config.apply_chat_template_kwargs);
  const auto with_prompt =
      render(nlohmann::ordered_json::array({empty_user}), none, true, config.apply_chat_template_kwargs);
  system_prompt_ = drop_last(one, two.size() >= one.size() ? two.size() - one.size() : 0);
  if (with_prompt.size() > one.size()) generation_prompt_.assign(with_prompt.begin() + one.size(), with_prompt.end());
}

std::vector<int32_t> MultiTurnSFTTokenizer::render(const nlohmann::ordered_json& messages,
                                                   const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                                   const nlohmann::ordered_json& kwargs) const {
  tokenizer::ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.tools = tools;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.extra_kwargs = kwargs;
  inputs.limits.timeout_s = config_.chat_template_timeout;
  // transformers tokenizes a rendered chat without adding special tokens.
  return tokenizer_.encode(tokenizer::apply_chat_template(tokenizer_, inputs), /*add_special_tokens=*/false);
}

std::vector<int32_t> MultiTurnSFTTokenizer::render_message(const nlohmann::ordered_json& message,
                                                           const nlohmann::ordered_json& tools,
                                                           const nlohmann::ordered_json& kwargs) const {
  try {
    return render(nlohmann::ordered_json::array({message}), tools, false, kwargs);
  } catch (const Error&) {
    // verl: templates that need a user message first (Qwen3.5) render it after a dummy one, dropped again.
    const nlohmann::ordered_json dummy = {
        {"role", "user"}, {"content", nlohmann::ordered_json::array({{{"type", "text"}, {"text", ""}}})}};
    const auto prefix = render(nlohmann::ordered_json::array({dummy}), tools, false, kwargs);
    const auto both = render(nlohmann::ordered_json::array({dummy, message}), tools, false, kwargs);
    if (prefix.size() >= both.size()) return {};
    return std::vector<int32_t>(both.begin() + static_cast<std::ptrdiff_t>(prefix.size()), both.end());
  }
}

SFTExample MultiTurnSFTTokenizer::tokenize(const io::Value& row, const std::string& where) const {
  for (const char* media : {"images", "videos"}) {
    VERL_CHECK(row.find(media) == nullptr, "data", where, " has an '", media,
               "' column: multimodal (VLM) SFT is not implemented in verl.cpp");
  }
  const io::Value* messages_value = row.find(config_.messages_key);
  VERL_CHECK(messages_value != nullptr, "data", where, " has no column '", config_.messages_key,
             "' (data.messages_key)");
  VERL_CHECK(messages_value->is_list() && !messages_value->as_list().empty(), "data", where, ": '",
             config_.messages_key, "' must be a non-empty list of messages, got ",
             io::kind_name(messages_value->kind()));
  const nlohmann::ordered_json messages = to_ordered_json(*messages_value);
  for (const auto& message : messages) {
    VERL_CHECK(message.is_object() && message.contains("role") && message["role"].is_string(), "data", where,
               ": every message needs a string 'role', got ", message.dump());
  }

  nlohmann::ordered_json tools;  // null: none
  if (const io::Value* t = row.find(config_.tools_key); t != nullptr && !t->is_null()) {
    VERL_CHECK(t->is_list(), "data", where, ": '", config_.tools_key, "' (data.tools_key) must be a list of tool ",
               "schemas, got ", io::kind_name(t->kind()));
    tools = to_ordered_json(*t);
  }
  nlohmann::ordered_json kwargs = config_.apply_chat_template_kwargs;
  std::optional<bool> enable_thinking = config_.enable_thinking_default;
  if (const io::Value* e = row.find(config_.enable_thinking_key); e != nullptr) {
    // verl: the column's value, through bool() unless None.
    if (e->is_null()) {
      enable_thinking.reset();
    } else if (e->is_bool()) {
      enable_thinking = e->as_bool();
    } else if (e->is_int() || e->is_double()) {
      enable_thinking = e->as_double() != 0;
    } else if (e->is_string()) {
      enable_thinking = !e->as_string().empty();
    } else {
      VERL_FAIL("data", where, ": '", config_.enable_thinking_key, "' must be a bool, got ", io::kind_name(e->kind()));
    }
  }
  if (enable_thinking) kwargs["enable_thinking"] = *enable_thinking;

  SFTExample out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& message = messages[i];
    const std::string role = message["role"].get<std::string>();
    std::vector<int32_t> ids = render_message(message, i == 0 ? tools : nlohmann::ordered_json(), kwargs);
    size_t begin = 0;
    if (i != 0 && role != "system") begin = std::min(system_prompt_.size(), ids.size());
    const size_t unmasked = role == "assistant" ? begin + generation_prompt_.size() : ids.size();
    for (size_t j = begin; j < ids.size(); ++j) {
      out.input_ids.push_back(ids[j]);
      out.loss_mask.push_back(j >= unmasked ? 1 : 0);
    }
  }

  const std::vector<int32_t> whole = render(messages, tools, false, kwargs);
  const bool same = whole.size() == out.input_ids.size() &&
                    std::equal(whole.begin(), whole.end(), out.input_ids.begin(),
                               [](int32_t a, int64_t b) { return static_cast<int64_t>(a) == b; });
  if (!same) {
    VERL_CHECK(config_.ignore_input_ids_mismatch, "data", where,
               ": the chat template renders the conversation whole differently from its messages one by one (",
               whole.size(), " vs ", out.input_ids.size(),
               " tokens), e.g. a template that adds <think></think> to the last turn; set "
               "data.ignore_input_ids_mismatch=true to train on the per-message rendering");
    if (!mismatch_warned_) {
      mismatch_warned_ = true;
      VERL_LOG(Warn, "data") << where << ": the whole-conversation rendering differs from the per-message one; "
                             << "using the per-message tokens (data.ignore_input_ids_mismatch=true)";
    }
  }
  return out;
}

}  // namespace verl::data
