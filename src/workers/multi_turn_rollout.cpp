#include "verl/workers/multi_turn_rollout.h"

#include <optional>

#include "verl/agent/tensor_parallel_turns.h"
#include "verl/agent/tools.h"
#include "verl/common/error.h"
#include "verl/config/node_json.h"
#include "verl/data/rl_dataset.h"
#include "verl/model/hf_config.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::workers {

namespace {
constexpr const char* kMultiTurnRolloutComponent = "multi_turn";
using protocol::Json;

const std::vector<Json>& column(const protocol::DataProto& data, const std::string& key, const char* why) {
  auto it = data.non_tensor_batch.find(key);
  VERL_CHECK(it != data.non_tensor_batch.end(), kMultiTurnRolloutComponent,
             "the multi-turn rollout needs the batch column '", key, "' (", why, ")");
  return it->second;
}
}  // namespace

namespace {
std::optional<std::string> expanded(const std::optional<std::string>& path) {
  return path ? std::optional<std::string>(data::expand_user(*path)) : std::nullopt;
}
}  // namespace

nlohmann::ordered_json dataset_filter_tool_schemas(const config::PPOConfig& config) {
  const auto& data = config.data;
  if (!data.filter_overlong_prompts || (!data.tool_config_path && !data.function_tool_path)) return nullptr;
  return agent::ToolSet::load(expanded(data.tool_config_path), expanded(data.function_tool_path),
                              config.actor_rollout_ref.rollout.multi_turn.tool_timeout)
      ->schemas();
}

MultiTurnRollout::MultiTurnRollout(const config::PPOConfig& config) : config_(config) {
  const auto& mt = config.actor_rollout_ref.rollout.multi_turn;
  tokenizer_ = std::make_shared<const tokenizer::Tokenizer>(tokenizer::load_model_tokenizer(
      data::expand_user(config.actor_rollout_ref.model.tokenizer_dir()),
      config.actor_rollout_ref.model.custom_chat_template, "actor_rollout_ref.model.custom_chat_template"));
  if (mt.tool_config_path || mt.function_tool_path) {
    tools_ = agent::ToolSet::load(expanded(mt.tool_config_path), expanded(mt.function_tool_path), mt.tool_timeout);
  }
  if (mt.interaction_config_path) {
    interactions_ = agent::InteractionSet::from_config_file(data::expand_user(*mt.interaction_config_path), mt.tool_timeout);
  }
}

MultiTurnRollout::~MultiTurnRollout() = default;

agent::AgentLoopOptions MultiTurnRollout::loop_options(const model::CausalLM& model,
                                                       const rollout::SamplingParams& params, bool record_trace) const {
  const auto& rollout = config_.actor_rollout_ref.rollout;
  agent::AgentLoopOptions options;
  options.multi_turn = rollout.multi_turn;
  options.prompt_length = rollout.prompt_length;
  options.response_length = rollout.response_length;
  options.sampling = params;
  options.model_type = model::hf_model_type(model->config);
  if (config_.data.apply_chat_template_kwargs.is_map()) {
    options.chat_template_kwargs = config::node_to_json(config_.data.apply_chat_template_kwargs);
  }
  options.chat_template_timeout = config_.data.chat_template_timeout;
  options.record_trace = record_trace;
  options.trace_token2text = rollout.trace.token2text;
  return options;
}

agent::AgentLoopOutput MultiTurnRollout::run(model::CausalLM& model, const protocol::DataProto& prompts,
                                             const rollout::SamplingParams& params, bool record_trace) {
  agent::AgentLoopOptions options = loop_options(model, params, record_trace);
  // Under tensor parallelism the engine runs each batch on every rank of the group: built first on all of them (its
  // checks fail on every rank alike), then the group follows this rank's loop until finish.
  std::optional<agent::ContinuationEngine> engine;
  std::optional<agent::TensorParallelTurns> turns;
  if (model->tp.active()) {
    engine.emplace(model, agent::turn_sampling(options, *tokenizer_));
    turns.emplace(model->tp.comm, [&](std::vector<agent::ContinueRequest>& r) { return engine->continue_batch(r); });
  }
  try {
    agent::AgentLoopOutput out = loop(model, prompts, options, turns ? &*turns : nullptr);
    if (turns) {
      turns->finish();
      out.prefill_tokens = engine->prefill_tokens();
    }
    return out;
  } catch (const std::exception& e) {
    if (turns && !turns->failed_in_batch() && !turns->finished()) turns->finish(e.what());
    throw;
  }
}

void MultiTurnRollout::follow(model::CausalLM& model, const rollout::SamplingParams& params) {
  VERL_ASSERT(model->tp.active(), kMultiTurnRolloutComponent, "only a tensor-parallel rank follows the driver");
  agent::ContinuationEngine engine(model, agent::turn_sampling(loop_options(model, params, false), *tokenizer_));
  agent::TensorParallelTurns turns(model->tp.comm,
                                   [&](std::vector<agent::ContinueRequest>& r) { return engine.continue_batch(r); });
  turns.follow();
}

agent::AgentLoopOutput MultiTurnRollout::loop(model::CausalLM& model, const protocol::DataProto& prompts,
                                              const agent::AgentLoopOptions& options,
                                              agent::TensorParallelTurns* turns) {
  agent::AgentLoopInputs inputs;
  const auto& raw = column(prompts, "raw_prompt", "set data.return_raw_chat=true");
  const size_t n = raw.size();
  auto optional_column = [&](const char* key) {
    auto it = prompts.non_tensor_batch.find(key);
    if (it == prompts.non_tensor_batch.end()) return std::vector<Json>(n, Json::object());
    std::vector<Json> values = it->second;
    for (auto& v : values) {
      if (v.is_null()) v = Json::object();
    }
    return values;
  };
  for (const auto& messages : raw) inputs.raw_prompt.push_back(nlohmann::ordered_json(messages));
  inputs.tools_kwargs = optional_column("tools_kwargs");
  inputs.interaction_kwargs = optional_column("interaction_kwargs");
  // verl's per-sample tool selection: extra_info.tool_selection, a list of tool names (empty or absent: all).
  if (auto it = prompts.non_tensor_batch.find("extra_info"); it != prompts.non_tensor_batch.end()) {
    inputs.tool_selection.resize(n);
    for (size_t i = 0; i < n && i < it->second.size(); ++i) {
      const Json& extra = it->second[i];
      if (!extra.is_object() || !extra.contains("tool_selection") || extra["tool_selection"].is_null()) continue;
      const Json& selection = extra["tool_selection"];
      bool names = selection.is_array();
      for (size_t k = 0; names && k < selection.size(); ++k) names = selection[k].is_string();
      VERL_CHECK(names, kMultiTurnRolloutComponent, "sample ", i,
                 ": extra_info.tool_selection must be a list of tool names, got ", selection.dump().substr(0, 120));
      inputs.tool_selection[i] = selection.get<std::vector<std::string>>();
    }
  }
  if (options.record_trace) {
    // verl's ToolAgentLoop.run(sampling_params, **kwargs): every column of the sample's row.
    inputs.trace_kwargs.assign(n, nlohmann::ordered_json::object());
    for (const auto& [key, values] : prompts.non_tensor_batch) {
      for (size_t i = 0; i < n && i < values.size(); ++i) inputs.trace_kwargs[i][key] = values[i];
    }
  }
  if (auto it = prompts.non_tensor_batch.find("agent_name"); it != prompts.non_tensor_batch.end()) {
    for (const auto& name : it->second) {
      VERL_CHECK(name.is_string() && (name == "tool_agent" || name == "single_turn_agent"), kMultiTurnRolloutComponent,
                 "agent_name '", name.dump(), "': verl.cpp runs the agent loops tool_agent and single_turn_agent");
    }
  }

  if (turns == nullptr) return agent::run_tool_agent_loop(model, *tokenizer_, tools_, interactions_, options, inputs);
  agent::AgentLoopOptions turn_options = options;
  turn_options.sampling = agent::turn_sampling(options, *tokenizer_);  // what the group's engines sample with
  return agent::run_scripted_agent_loop(turns->driver(), *tokenizer_, tools_, interactions_, turn_options, inputs);
}

protocol::DataProto MultiTurnRollout::generate(model::CausalLM& model, const protocol::DataProto& prompts,
                                               const rollout::SamplingParams& params,
                                               std::vector<agent::TraceSpan>* traces, MultiTurnPart part) {
  if (part == MultiTurnPart::Idle) return protocol::DataProto();
  if (part == MultiTurnPart::FollowTensorParallel) {
    follow(model, params);
    return protocol::DataProto();
  }
  agent::AgentLoopOutput out = run(model, prompts, params, traces != nullptr);
  if (traces != nullptr) *traces = std::move(out.traces);
  const size_t n = out.num_turns.size();
  protocol::TensorMap batch = {{"prompts", out.prompts},
                               {"responses", out.responses},
                               {"input_ids", out.input_ids},
                               {"attention_mask", out.attention_mask},
                               {"position_ids", out.position_ids},
                               {"response_mask", out.response_mask}};
  if (out.rollout_log_probs.defined()) batch["rollout_log_probs"] = out.rollout_log_probs;
  protocol::NonTensorMap columns;
  for (size_t i = 0; i < n; ++i) {
    columns["__num_turns__"].push_back(out.num_turns[i]);
    columns["tool_call_counts"].push_back(out.tool_call_counts[i]);
    columns["tool_errors"].push_back(out.tool_errors[i]);
    columns["turn_scores"].push_back(out.turn_scores[i]);
    columns["tool_rewards"].push_back(out.tool_rewards[i]);
    columns["reward_scores"].push_back(out.reward_scores[i]);
  }
  return protocol::DataProto::from_dict(std::move(batch), std::move(columns));
}

}  // namespace verl::workers
