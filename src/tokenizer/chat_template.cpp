#include "verl/tokenizer/chat_template.h"

#include "verl/python/interpreter.h"
#include "verl/python/memory_budget.h"
#include "verl/python/user_code.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::tokenizer {

namespace {

namespace py = pybind11;

// Python side: one sandboxed Jinja2 environment as transformers builds it, compiled templates cached.
const char* const kRendererSource = R"PY(
import json
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class _GenerationBlock(Extension):
    # transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_block"), [], [], body).set_lineno(lineno)

    def _render_block(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


_env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                     extensions=[_GenerationBlock, loopcontrols])
_env.filters["tojson"] = _tojson
_env.globals["raise_exception"] = _raise_exception
_env.globals["strftime_now"] = _strftime_now
_compiled = {}


def render(template, messages_json, add_generation_prompt, tools_json, documents_json, variables_json):
    compiled = _compiled.get(template)
    if compiled is None:
        compiled = _env.from_string(template)
        if len(_compiled) > 64:
            _compiled.clear()
        _compiled[template] = compiled
    variables = json.loads(variables_json)
    return compiled.render(messages=json.loads(messages_json), tools=json.loads(tools_json),
                           documents=json.loads(documents_json),
                           add_generation_prompt=add_generation_prompt, **variables)
)PY";

// The compiled `render` function; deliberately never destroyed (the interpreter is never finalized). Call with the GIL
// held (set up once through call_once_with_gil: threads rendering their first templates at once must not deadlock).
py::object& renderer() {
  static std::once_flag once;
  static py::object* render = nullptr;
  python::call_once_with_gil(once, [] {
    py::dict scope;
    scope["__builtins__"] = py::module_::import("builtins");
    try {
      py::exec(kRendererSource, scope);
    } catch (py::error_already_set& error) {
      throw ::verl::Error("chat_template", "cannot set up Jinja2 (is python3-jinja2 installed for the embedded "
                                           "Python?): " + python::describe_python_error(error));
    }
    render = new py::object(scope["render"]);
  });
  return *render;
}

}  // namespace

std::string render_chat_template(const std::string& chat_template, const ChatTemplateInputs& inputs,
                                 const nlohmann::ordered_json& special_tokens, const std::string& source) {
  VERL_CHECK(inputs.messages.is_array(), "chat_template", "messages must be a JSON list, got ",
             inputs.messages.dump().substr(0, 80));
  VERL_CHECK(inputs.extra_kwargs.is_object() && special_tokens.is_object(), "chat_template",
             "template kwargs must be a JSON object");
  nlohmann::ordered_json variables = special_tokens;
  for (auto it = inputs.extra_kwargs.begin(); it != inputs.extra_kwargs.end(); ++it) variables[it.key()] = it.value();
  // Invalid UTF-8 in a string becomes U+FFFD (as Python's errors="replace") instead of failing.
  const auto dump = [](const nlohmann::ordered_json& value) {
    return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  };
  const std::string messages = dump(inputs.messages);
  const std::string tools = dump(inputs.tools);
  const std::string documents = dump(inputs.documents);
  const std::string vars = dump(variables);
  return python::with_gil("chat_template", [&] {
    py::object& render = renderer();
    const std::string what = "chat template from " + source;
    // Compiling is inside the limits too: Jinja folds constant expressions ({{ 'x' * 10**10 }}) at compile time.
    python::UserCallLimit limit(inputs.limits.timeout_s, what, inputs.limits.timeout_key);
    std::string text;
    bool over_memory = false;
    try {
      python::MemoryBudget budget(kChatTemplateMemoryLimit);
      try {
        text = render(chat_template, messages, inputs.add_generation_prompt, tools, documents, vars)
                   .cast<std::string>();
      } catch (py::error_already_set&) {
        over_memory = budget.exceeded();
        if (!over_memory) throw;
      }
    } catch (py::error_already_set& error) {
      if (limit.expired()) VERL_FAIL("chat_template", limit.timeout_message());
      VERL_FAIL("chat_template", what, ": ", python::describe_python_error(error));
    }
    VERL_CHECK(!over_memory, "chat_template", what, " needed more than ", kChatTemplateMemoryLimit >> 20,
               " MiB of memory while rendering (the limit of one rendering; MemoryError)");
    // A template that caught the TimeoutError and returned anyway still ran past the limit.
    VERL_CHECK(!limit.expired(), "chat_template", limit.timeout_message());
    return text;
  });
}

nlohmann::ordered_json special_tokens_map(const Tokenizer& tokenizer) {
  const TokenizerConfig& config = tokenizer.config();
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  if (config.bos_token) map["bos_token"] = *config.bos_token;
  if (config.eos_token) map["eos_token"] = *config.eos_token;
  if (config.unk_token) map["unk_token"] = *config.unk_token;
  if (config.pad_token) map["pad_token"] = *config.pad_token;
  if (!config.additional_special_tokens.empty()) map["additional_special_tokens"] = config.additional_special_tokens;
  return map;
}

std::string apply_chat_template(const Tokenizer& tokenizer, const ChatTemplateInputs& inputs) {
  VERL_CHECK(!tokenizer.config().chat_template.empty(), "chat_template",
             "the tokenizer folder has no chat_template (tokenizer_config.json or chat_template.jinja)");
  return render_chat_template(tokenizer.config().chat_template, inputs, special_tokens_map(tokenizer),
                             tokenizer.config().chat_template_file.empty()
                                 ? std::string("the tokenizer's chat template")
                                 : "'" + tokenizer.config().chat_template_file + "'");
}

}  // namespace verl::tokenizer
