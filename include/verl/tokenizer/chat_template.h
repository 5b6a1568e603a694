// Chat templates rendered by real Jinja2 in the embedded interpreter, configured as Hugging Face transformers
// configures it: ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks) with the loopcontrols extension and
// a `{% generation %}` block, transformers' `tojson` (ensure_ascii=False, indent, separators, sort_keys),
// `raise_exception` and `strftime_now`; globals messages, tools, documents, add_generation_prompt, the
// tokenizer's special tokens (bos_token, eos_token, ...) and any extra kwargs (apply_chat_template_kwargs).
// A missing jinja2, a template syntax error or raise_exception(...) is a verl::Error with the message.
// A template is user code: one rendering runs under a time limit (python/user_code.h, the reward functions'
// mechanism; data.chat_template_timeout) and a memory bound (python/memory_budget.h), and going past either is
// an error naming the template's file and the limit.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace verl::tokenizer {

class Tokenizer;

constexpr double kDefaultChatTemplateTimeout = 60;          // seconds, data.chat_template_timeout's default
constexpr size_t kChatTemplateMemoryLimit = size_t{1} << 30;  // bytes one rendering may hold (1 GiB)

// The limits of one rendering; `timeout_key` is named in the error (a config key or a command-line flag).
struct ChatTemplateLimits {
  double timeout_s = kDefaultChatTemplateTimeout;  // <= 0: none
  std::string timeout_key = "data.chat_template_timeout";
};

// ordered_json keeps keys in the order given: templates that print objects (`tools | tojson`) must see the
// user's key order, as Python dicts do.
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role": ..., "content": ...}, ...]
  bool add_generation_prompt = false;
  nlohmann::ordered_json tools;                                      // null or a list of JSON schemas
  nlohmann::ordered_json documents;                                  // null or a list
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();  // e.g. {"enable_thinking": false}
  ChatTemplateLimits limits;
};

// `special_tokens`: object of template variables from the tokenizer (bos_token, eos_token, ...); `source`:
// where the template came from, for errors.
std::string render_chat_template(const std::string& chat_template, const ChatTemplateInputs& inputs,
                                 const nlohmann::ordered_json& special_tokens,
                                 const std::string& source = "the chat template");

// The tokenizer's own template and special tokens; an error when the folder has no chat template.
std::string apply_chat_template(const Tokenizer& tokenizer, const ChatTemplateInputs& inputs);

// The special-token variables transformers passes to templates (only those that are set).
nlohmann::ordered_json special_tokens_map(const Tokenizer& tokenizer);

}  // namespace verl::tokenizer
