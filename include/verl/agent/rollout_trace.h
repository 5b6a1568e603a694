// verl's rollout tracing (verl/utils/rollout_trace.py, actor_rollout_ref.rollout.trace): one trace per traced
// sample of a generate_sequences call, its root span "agent_loop" carrying verl's trace tags (sample_index, step,
// rollout_n, validate, experiment_name), and under it the spans verl's @rollout_trace_op records with their
// inputs and outputs:
//   single-turn rollout   AsyncLLMServerManager.generate (prompt_ids, sampling_params -> token_ids, log_probs)
//   tool agent loop       ToolAgentLoop.run (sampling_params, kwargs -> the AgentLoopOutput; with token2text also
//                         prompt_text / response_text), inside it per turn AsyncLLMServerManager.generate,
//                         HermesToolParser.extract_tool_calls (responses_ids -> [content, calls]) and per tool call
//                         <ToolClass>.execute (parameters -> [ToolResponse, reward, metrics])
// The batched engine runs all samples' turns together: the spans are recorded as they happen (wall-clock times)
// and written when the rollout returns. Backend mlflow: verl's calls (tracking URI from MLFLOW_TRACKING_URI, else
// verl's sqlite:////tmp/mlruns.db when SQLAlchemy is installed, else ./mlruns; experiment = trace.project_name)
// through the embedded Python; the package missing is a one-line error when the worker starts.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::agent {

struct TraceSpan {
  std::string name;
  nlohmann::ordered_json inputs = nullptr, outputs = nullptr;
  int64_t start_ns = 0, end_ns = 0;  // wall clock (ns since the epoch)
  std::vector<TraceSpan> children;
};

struct SampleTrace {
  nlohmann::ordered_json tags = nlohmann::ordered_json::object();  // verl's trace tags, values as Python's str()
  TraceSpan root;                                                   // "agent_loop"
};

int64_t trace_clock_ns();
std::string trace_request_id();  // 32 hex digits, as verl's uuid4().hex

// verl's rollout_trace_attr tags of the rows of one batch: the dataset's `index` column per row (null: the row's
// position, as verl's np.arange), rollout_n counting consecutive equal indices from 0 (verl's get_trajectory_info).
std::vector<nlohmann::ordered_json> trace_tags(const std::vector<nlohmann::json>& index, int64_t step, bool validate,
                                               const std::string& experiment_name);

// max_samples_per_step_per_worker: which rows are traced. null: all; else that many distinct index values drawn at
// random (seeded here; verl draws with numpy's global RNG) and every row holding one of them (all n rollouts).
std::vector<bool> traced_rows(const std::vector<nlohmann::json>& index, std::optional<int64_t> max_samples,
                              uint64_t seed);

class RolloutTraceWriter {
 public:
  virtual ~RolloutTraceWriter() = default;
  virtual void write(const std::vector<SampleTrace>& traces) = 0;
};

// verl's RolloutTraceConfig.init for `backend`: "mlflow" (the one implemented); anything else is an error.
std::unique_ptr<RolloutTraceWriter> make_rollout_trace_writer(const std::string& backend,
                                                              const std::string& project_name);

}  // namespace verl::agent
