#include "verl/agent/tool_parser.h"

#include "tool_parsers/parser_support.h"
#include "verl/common/error.h"

namespace verl::agent {

std::string verl_arguments_text(const FunctionCall& call) {
  return call.raw_arguments ? *call.raw_arguments : parsers::python_json_dumps(call.arguments);
}

const std::vector<std::string>& ToolParser::formats() {
  static const std::vector<std::string> names = {"hermes",  "gpt-oss", "qwen3_coder", "glm",   "seed",
                                                 "minimax", "kimi",    "deepseek_v4", "gemma4"};
  return names;
}

std::string ToolParser::formats_text() {
  std::string text;
  for (const auto& name : formats()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::unique_ptr<ToolParser> ToolParser::create(const std::string& format, const std::string& pad_token) {
  if (format == "hermes") return parsers::make_hermes();
  if (format == "gpt-oss") return parsers::make_gpt_oss(pad_token);
  if (format == "qwen3_coder") return parsers::make_qwen3_coder();
  if (format == "glm") return parsers::make_glm();
  if (format == "seed") return parsers::make_seed();
  if (format == "minimax") return parsers::make_minimax();
  if (format == "kimi") return parsers::make_kimi();
  if (format == "deepseek_v4") return parsers::make_deepseek_v4(pad_token);
  if (format == "gemma4") return parsers::make_gemma4(pad_token);
  VERL_FAIL("agent", "actor_rollout_ref.rollout.multi_turn.format is '", format,
            "'; expected one of: ", formats_text());
}

}  // namespace verl::agent
