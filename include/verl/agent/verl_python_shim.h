// A built-in minimal `verl` Python package for the embedded interpreter, so that verl-style tool and interaction
// files (`from verl.tools.base_tool import BaseTool`) run without verl (and its torch, pydantic, ...) installed.
//
// Modules, their sources C++ string literals written from verl 0.9.1's documented behaviour (verl.cpp's own
// verl.tools._sandbox_fusion_request, shared with the code reward, is a Python file embedded at build time):
//   verl, verl.tools, verl.tools.base_tool (BaseTool), verl.tools.schemas (OpenAIFunction*Schema, ToolResponse:
//   small classes with pydantic's model_validate / model_dump(exclude_unset, exclude_none), no pydantic needed),
//   verl.tools.function_tool (@function_tool, FunctionTool, load_function_tools_from_path,
//   normalize_function_tool_return; the schema from docstring and type hints without transformers, in
//   verl_python_shim_function_tool.cpp), verl.tools.gsm8k_tool (Gsm8kTool),
//   verl.tools.sandbox_fusion_tools (SandboxFusionTool: code run on a SandboxFusion service, without Ray; in
//   verl_python_shim_sandbox_fusion_tool.cpp), verl.interactions,
//   verl.interactions.base (BaseInteraction), verl.interactions.gsm8k_interaction (Gsm8kInteraction), verl.utils,
//   verl.utils.rollout_trace (rollout_trace_op: the function itself), verl.utils.reward_score,
//   verl.utils.reward_score.gsm8k, verl.trainer, verl.trainer.ppo, verl.trainer.ppo.checkpoint_callback
//   (CheckpointCallback, for trainer.checkpoint_callback_class; in verl_python_shim_checkpoint_callback.cpp).
//
// How they are served: a finder appended to the END of sys.meta_path, so it answers only for the names the
// regular import system does not find. With no verl installed (the usual case, and the tests') every module above
// is the built-in one; with a real verl importable (e.g. through VERL_PYTHON_SITE_PACKAGES) its modules win and the
// built-in ones fill only what that installation lacks (verl 0.9.1's wheel ships no gsm8k or sandbox fusion tool,
// nor interactions).
// A built-in module's __file__ is "<verl.cpp shim>/verl/...py".
#pragma once

#include <string>
#include <vector>

namespace verl::agent {

// Appends the finder to sys.meta_path once per process (call with the GIL held).
void install_verl_python_shim();

// The dotted names of the built-in modules.
std::vector<std::string> verl_python_shim_modules();

// The source of one built-in module ("verl.utils.reward_score.gsm8k"); an error for another name.
const std::string& verl_python_shim_source(const std::string& module);

}  // namespace verl::agent
