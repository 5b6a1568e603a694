// The rollout worker's multi-turn generation (actor_rollout_ref.rollout.multi_turn.enable, or
// agent.default_agent_loop=tool_agent): the tokenizer, tools and interactions loaded once when the worker
// builds its model (a bad tool config fails there), and each generate_sequences call run through
// agent/tool_agent_loop.h. Reads the batch's raw_prompt, tools_kwargs and interaction_kwargs columns
// (data.return_raw_chat=true); returns verl's tensors plus the non-tensor columns the trainer's metrics and the
// reward manager read (__num_turns__, tool_call_counts, tool_errors, turn_scores, tool_rewards, reward_scores).
#pragma once

#include <memory>

#include "verl/agent/tool_agent_loop.h"
#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"
#include "verl/protocol/data_proto.h"
#include "verl/rollout/generator.h"

namespace verl::tokenizer {
class Tokenizer;
}
namespace verl::agent {
class ToolSet;
class InteractionSet;
class TensorParallelTurns;
}  // namespace verl::agent

namespace verl::workers {

// The tool schemas verl's RLHFDataset renders with each prompt when it filters overlong prompts: those of
// data.tool_config_path / data.function_tool_path (by default the rollout's), loaded as the rollout loads them;
// null when neither is set or data.filter_overlong_prompts is off.
nlohmann::ordered_json dataset_filter_tool_schemas(const config::PPOConfig& config);

// A rank's part in its model copy's multi-turn rollout. The ranks of one copy (megatron's T x P x C) receive the same
// prompts and only the copy's first rank's output is collected, so the conversations are driven once, there (tools
// and interactions run once per conversation, as behind verl's one rollout server per copy); its tensor-parallel
// ranks generate with it on their slices (agent/tensor_parallel_turns.h); the copy's other ranks (other pipeline
// stages, other context-parallel ranks: generation gathers every layer onto each TP group) have nothing to do.
enum class MultiTurnPart {
  Drive,                 // runs the loop (alone, or driving its tensor-parallel group)
  FollowTensorParallel,  // a tensor-parallel rank of the driver's group
  Idle,                  // returns no rows
};

class MultiTurnRollout {
 public:
  explicit MultiTurnRollout(const config::PPOConfig& config);
  ~MultiTurnRollout();

  // `traces` (rollout.trace): each sample's ToolAgentLoop.run span, recorded (agent/rollout_trace.h). The driver
  // returns the rollout; the other parts an empty DataProto once the driver is done with them.
  protocol::DataProto generate(model::CausalLM& model, const protocol::DataProto& prompts,
                               const rollout::SamplingParams& params, std::vector<agent::TraceSpan>* traces = nullptr,
                               MultiTurnPart part = MultiTurnPart::Drive);
  // The loop's own output (the conversations included), for `verl generate`; under tensor parallelism, the
  // driver's (the other ranks of its group call follow with the same params meanwhile).
  agent::AgentLoopOutput run(model::CausalLM& model, const protocol::DataProto& prompts,
                             const rollout::SamplingParams& params, bool record_trace = false);
  void follow(model::CausalLM& model, const rollout::SamplingParams& params);

 private:
  agent::AgentLoopOptions loop_options(const model::CausalLM& model, const rollout::SamplingParams& params,
                                       bool record_trace) const;
  // The loop over `prompts`' rows; `turns`: this rank drives its tensor-parallel group's engines.
  agent::AgentLoopOutput loop(model::CausalLM& model, const protocol::DataProto& prompts,
                              const agent::AgentLoopOptions& options, agent::TensorParallelTurns* turns);

  const config::PPOConfig& config_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::shared_ptr<agent::ToolSet> tools_;
  std::shared_ptr<agent::InteractionSet> interactions_;
};

}  // namespace verl::workers
