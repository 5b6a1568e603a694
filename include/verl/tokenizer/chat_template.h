// Chat templates rendered by real Jinja2 in the embedded interpreter, configured as Hugging Face transformers
// configures it: ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks) with the loopcontrols extension and
// a `{% generation %}` block, transformers' `tojson` (ensure_ascii=False, indent, separators, sort_keys),
// `raise_exception` and `strftime_now`; globals messages, tools, documents, add_generation_prompt, the
// tokenizer's special tokens (bos_token, eos_token, ...) and any extra kwargs (apply_chat_template_kwargs).
// A missing jinja2, a template syntax error or raise_exception(...) is a verl::Error with the message.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace verl::tokenizer {

class Tokenizer;

// ordered_json keeps keys in the order given: templates that print objects (`tools | tojson`) must see the
// user's key order, as Python dicts do.
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{"role": ..., "content": ...}, ...]
  bool add_generation_prompt = false;
  nlohmann::ordered_json tools;                                      // null or a list of JSON schemas
  nlohmann::ordered_json documents;                                  // null or a list
  nlohmann::ordered_json extra_kwargs = nlohmann::ordered_json::object();  // e.g. {"enable_thinking": false}
};

// `special_tokens`: object of template variables from the tokenizer (bos_token, eos_token, ...).
std::string render_chat_template(const std::string& chat_template, const ChatTemplateInputs& inputs,
                                 const nlohmann::ordered_json& special_tokens);

// The tokenizer's own template and special tokens; an error when the folder has no chat template.
std::string apply_chat_template(const Tokenizer& tokenizer, const ChatTemplateInputs& inputs);

// The special-token variables transformers passes to templates (only those that are set).
nlohmann::ordered_json special_tokens_map(const Tokenizer& tokenizer);

}  // namespace verl::tokenizer
