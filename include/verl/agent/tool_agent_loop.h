// verl's tool agent loop (verl/experimental/agent_loop/tool_agent_loop.py) over a batch of conversations: each
// starts from the dataset's messages (raw_prompt) with the tools rendered by the chat template; the policy
// generates a turn; the tool calls in it (agent/tool_parser.h, multi_turn.format) are executed (at most
// max_parallel_calls per turn) and their results appended as `tool` messages (with the call's tool_call_id where
// the model wrote one); without a call, an interaction (when configured) answers as the user; otherwise
// the conversation ends. Turns stop at max_assistant_turns / max_user_turns or when the response budget
// (rollout.response_length) is spent. All conversations waiting for the policy generate together
// (agent/continuation_engine.h: each keeps its KV cache between turns).
//
// Output in verl's layout: prompts left-padded to prompt_length, responses right-padded to response_length with
// response_mask 1 only on the policy's tokens (0 on tool / interaction / template tokens), attention_mask 1 on
// every real token, position_ids 0.. over the real tokens; per sample verl's non-tensor columns __num_turns__,
// turn_scores, tool_rewards, reward_scores ({tool: calc_reward, "user_turn_rewards": [...]}), plus
// tool_call_counts, and the final conversation (messages) for dumps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "verl/agent/continuation_engine.h"
#include "verl/agent/rollout_trace.h"
#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/generator.h"

namespace verl::tokenizer {
class Tokenizer;
}

namespace verl::agent {

class ToolSet;
class InteractionSet;

struct AgentLoopOptions {
  config::MultiTurnConfig multi_turn;
  int64_t prompt_length = 0;    // rollout.prompt_length: longer first prompts are left-truncated (as verl)
  int64_t response_length = 0;  // rollout.response_length: the budget of everything after the first prompt
  rollout::SamplingParams sampling;  // n is 1 here (the trainer repeats rows)
  std::string model_type;            // config.json's model_type (the token builder's family)
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  double chat_template_timeout = 60;  // data.chat_template_timeout
  // rollout.trace: record each sample's ToolAgentLoop.run span (agent/rollout_trace.h), its outputs also as text
  // with token2text.
  bool record_trace = false;
  bool trace_token2text = false;
};

struct AgentLoopInputs {
  std::vector<nlohmann::ordered_json> raw_prompt;   // messages per sample
  std::vector<nlohmann::ordered_json> trace_kwargs; // record_trace: the sample's columns (ToolAgentLoop.run's kwargs)
  std::vector<nlohmann::json> tools_kwargs;         // per sample ({} when absent)
  std::vector<nlohmann::json> interaction_kwargs;   // per sample ({} when absent)
  // Per sample, or empty for none: extra_info.tool_selection, the only tools the sample sees and may call (verl's
  // per-sample tool selection; names the tool set lacks are dropped; an empty list: every tool).
  std::vector<std::vector<std::string>> tool_selection;
};

struct AgentLoopOutput {
  torch::Tensor prompts, responses, input_ids, attention_mask, position_ids, response_mask, rollout_log_probs;
  std::vector<int64_t> num_turns, tool_call_counts, tool_errors;
  std::vector<nlohmann::json> turn_scores, tool_rewards, reward_scores;
  std::vector<nlohmann::ordered_json> messages;
  int64_t sanity_check_failures = 0;
  int64_t prefill_tokens = 0;  // tokens prefilled over the whole rollout (the appended turns, never the history)
  std::vector<TraceSpan> traces;  // record_trace: per sample, verl's ToolAgentLoop.run span with its children
};

// The sampling of each policy turn: options.sampling with the tool parser's stop tokens (glm's <|observation|>, kimi's
// <|im_end|>, gemma4's <tool_call|>) added to its stop_token_ids, as verl adds them to vLLM's (ignore_eos leaves them
// in force). A turn that ends there is parsed for calls like any other, but does not end the conversation as an eos
// would.
rollout::SamplingParams turn_sampling(const AgentLoopOptions& options, const tokenizer::Tokenizer& tokenizer);

AgentLoopOutput run_tool_agent_loop(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                    const std::shared_ptr<ToolSet>& tools,
                                    const std::shared_ptr<InteractionSet>& interactions,
                                    const AgentLoopOptions& options, const AgentLoopInputs& inputs);

// The same loop over any generator of policy turns (the model's ContinuationEngine above; tests script the
// turns). It must extend each request's cache as the engine does (cache->length = tokens fed). options.sampling is
// what the turns are sampled with (run_tool_agent_loop passes turn_sampling's): the trace's generate spans show it.
using TurnGenerator = std::function<std::vector<ContinueResult>(std::vector<ContinueRequest>&)>;
AgentLoopOutput run_scripted_agent_loop(const TurnGenerator& generate_turns, const tokenizer::Tokenizer& tokenizer,
                                    const std::shared_ptr<ToolSet>& tools,
                                    const std::shared_ptr<InteractionSet>& interactions,
                                    const AgentLoopOptions& options, const AgentLoopInputs& inputs);

}  // namespace verl::agent
