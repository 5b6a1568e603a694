// `verl chat-template`: render a model folder's chat template for a JSON list of messages.
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "verl/agent/tools.h"
#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::cli {

const char* const kChatTemplateUsage =
    "usage: verl chat-template --tokenizer DIR --messages FILE.json [--add-generation-prompt] [--timeout S]\n"
    "                          [--tool-config TOOLS.yaml] [--function-tools TOOLS.py]\n"
    "\n"
    "Prints DIR's chat template rendered by Jinja2 (as transformers' apply_chat_template(tokenize=False)).\n"
    "FILE.json holds a list of {\"role\": ..., \"content\": ...} messages, or an object with \"messages\" and\n"
    "optionally \"tools\", \"documents\" and \"kwargs\" (extra template variables such as enable_thinking).\n"
    "--timeout S: seconds the rendering may take (default 60, as data.chat_template_timeout; 0: no limit).\n"
    "--tool-config / --function-tools: render the tools of a multi_turn.tool_config_path YAML and / or a\n"
    "multi_turn.function_tool_path file (@function_tool functions, their schemas inferred from docstrings and\n"
    "type hints) as the multi-turn rollout renders them, instead of FILE.json's \"tools\".\n";

int run_chat_template_command(const Args& args) {
  std::string dir, messages_path;
  std::optional<std::string> tool_config, function_tools;
  bool add_generation_prompt = false;
  tokenizer::ChatTemplateLimits limits;
  limits.timeout_key = "--timeout";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--tokenizer" && i + 1 < args.size()) {
      dir = args[++i];
    } else if (args[i] == "--messages" && i + 1 < args.size()) {
      messages_path = args[++i];
    } else if (args[i] == "--timeout" && i + 1 < args.size()) {
      const std::string text = args[++i];
      try {
        size_t used = 0;
        limits.timeout_s = std::stod(text, &used);
        if (used != text.size() || !std::isfinite(limits.timeout_s) || limits.timeout_s < 0) throw std::invalid_argument(text);
      } catch (const std::exception&) {
        std::cerr << "error: --timeout expects a number of seconds >= 0, got '" << text << "'\n";
        return 2;
      }
    } else if (args[i] == "--tool-config" && i + 1 < args.size()) {
      tool_config = args[++i];
    } else if (args[i] == "--function-tools" && i + 1 < args.size()) {
      function_tools = args[++i];
    } else if (args[i] == "--add-generation-prompt") {
      add_generation_prompt = true;
    } else {
      std::cerr << "error: unexpected argument '" << args[i] << "'\n" << kChatTemplateUsage;
      return 2;
    }
  }
  if (dir.empty() || messages_path.empty()) {
    std::cerr << "error: --tokenizer DIR and --messages FILE.json are required\n" << kChatTemplateUsage;
    return 2;
  }
  std::ifstream in(messages_path, std::ios::binary);
  VERL_CHECK(in.good(), "chat_template", "cannot open messages file ", messages_path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  check_json_limits(buffer.str(), messages_path);
  nlohmann::ordered_json input;  // keeps key order, as Python dicts do
  try {
    input = nlohmann::ordered_json::parse(buffer.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number beyond double
    VERL_FAIL("chat_template", messages_path, ": not valid JSON: ", e.what());
  }
  tokenizer::ChatTemplateInputs inputs;
  inputs.add_generation_prompt = add_generation_prompt;
  inputs.limits = limits;
  if (input.is_array()) {
    inputs.messages = input;
  } else {
    VERL_CHECK(input.is_object() && input.contains("messages"), "chat_template", messages_path,
               ": expected a list of messages or an object with \"messages\"");
    inputs.messages = input["messages"];
    if (input.contains("tools")) inputs.tools = input["tools"];
    if (input.contains("documents")) inputs.documents = input["documents"];
    if (input.contains("kwargs")) inputs.extra_kwargs = input["kwargs"];
  }
  if (tool_config || function_tools) {
    VERL_CHECK(inputs.tools.is_null(), "chat_template", messages_path,
               " has \"tools\" as well as --tool-config / --function-tools; give the tools one way");
    inputs.tools = agent::ToolSet::load(tool_config, function_tools, /*timeout_s=*/60)->schemas();
  }
  const auto tokenizer = tokenizer::Tokenizer::from_folder(dir);
  std::cout << tokenizer::apply_chat_template(tokenizer, inputs);
  return 0;
}

}  // namespace verl::cli
