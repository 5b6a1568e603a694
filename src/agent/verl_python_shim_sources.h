// Module sources of the built-in `verl` package (verl/agent/verl_python_shim.h) kept in files of their own.
#pragma once

namespace verl::agent::shim_sources {

// verl.tools.function_tool: verl 0.9.1's @function_tool, its schema inference written anew (no transformers).
extern const char* const kFunctionTool;

// verl.tools.sandbox_fusion_tools: SandboxFusionTool, a code interpreter on a SandboxFusion service (no Ray).
extern const char* const kSandboxFusionTool;

// verl.trainer.ppo.checkpoint_callback: CheckpointCallback, the base of trainer.checkpoint_callback_class.
extern const char* const kCheckpointCallback;

}  // namespace verl::agent::shim_sources
