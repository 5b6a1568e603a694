// verl's tools and interactions, run in the embedded interpreter.
//
// Tools: the YAML at multi_turn.tool_config_path, as verl reads it:
//   tools:
//     - class_name: "verl.tools.gsm8k_tool.Gsm8kTool"   # module.Class, importable (PYTHONPATH, the config's folder)
//       config: {type: native}
//       tool_schema: {type: function, function: {name: ..., description: ..., parameters: {...}}}
// Each class is built as verl builds it, cls(config=dict, tool_schema=OpenAIFunctionToolSchema), and keeps verl's
// BaseTool interface: async (or plain) create / execute / calc_reward / release.
// Function tools: the Python file at multi_turn.function_tool_path, whose functions carry verl's @function_tool
// (from verl.tools.function_tool import function_tool). Each is a stateless tool named after the function, its
// schema inferred from the docstring and type hints; a call is fn(**arguments) (an async def awaited, a plain def
// on a daemon thread of its own, so calls run concurrently as under verl's asyncio.to_thread), and the return
// value becomes (ToolResponse, reward, metrics) by verl's normalize_function_tool_return. tools_kwargs do not
// reach them; they have no calc_reward or release. They follow the YAML's tools, sorted by name (verl's
// load_all_tools); a name in both is an error. Interactions: the YAML at
// multi_turn.interaction_config_path (`interaction: [{name, class_name, config}]`), verl's BaseInteraction
// (start_interaction / generate_response / calculate_score / finalize_interaction).
//
// The modules tool files import from verl (verl.tools.base_tool, verl.tools.schemas, verl.interactions.base,
// verl.utils.reward_score.gsm8k, verl.utils.rollout_trace) and verl's GSM8K tool and interaction
// (verl.tools.gsm8k_tool.Gsm8kTool, verl.interactions.gsm8k_interaction.Gsm8kInteraction) are built in: served
// to the embedded interpreter for the names its import system does not find otherwise, i.e. all of them when no
// verl is installed there (agent/verl_python_shim.h).
//
// A call that raises, does not finish within the time limit (multi_turn.tool_timeout), or returns something that
// is not verl's (ToolResponse | str, reward, metrics) becomes an error text for the model, `error` set and a
// warning logged; the rollout goes on. Code that blocks the event loop (time.sleep in an async def) is stopped by
// python::UserCallLimit 2 s after the time limit (the process ends if it still does not return, as for reward
// functions; off the interpreter's main thread a TimeoutError cannot cut a time.sleep short, so there such code
// ends the process). Error texts: "Unknown function 'x'. Available tools: ['a', 'b']",
// "Error executing tool 'a': ValueError: ...", "Error executing tool 'a': did not return within 60 s (...)",
// "Error executing tool 'a': malformed return ...".
//
// Each set runs its Python on one asyncio event loop of its own, from the calling thread, one call at a time
// (sessions of one set from several threads take turns). Tool and interaction modules are imported by
// class_name with the config file's folder and the working directory appended to sys.path; a module stays
// imported for the process (two configs naming one module share it).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace verl::agent {

struct ToolCallRequest {
  std::string name;
  nlohmann::ordered_json arguments;  // as parsed from the model (normally an object)
  // verl's arguments string (agent::verl_arguments_text), when given: sent as is, for Python's json.loads (NaN kept;
  // text that is not JSON gets verl's "Invalid JSON in arguments for '<name>': <json error>" reply).
  std::optional<std::string> arguments_text;
  bool arguments_not_json = false;  // arguments_text is not JSON: the tool is not called
};

struct ToolCallResult {
  std::string text;        // the tool response (or the error text) given to the model
  double reward = 0.0;     // the step reward execute returned
  nlohmann::json metrics = nlohmann::json::object();
  bool error = false;      // raised, timed out, unknown tool, invalid arguments or a malformed return
};

// One trajectory's tool instances: created on first use with the sample's tools_kwargs[name].create_kwargs
// (create(create_kwargs={...}) as verl 0.9.1 calls it when create takes **kwargs or create_kwargs, plus each entry
// that names a parameter of create, e.g. ground_truth=, as older verl passed them); execute gets
// tools_kwargs[name].execute_kwargs as keywords, calc_reward / release their calc_reward_kwargs / release_kwargs.
// finish() (or destroying the session without it, errors then not logged) calls calc_reward, then release.
class ToolSession;

class ToolSet {
 public:
  // Reads and builds the tools of the tool YAML and / or the function tool file (at least one); errors name the
  // file and the entry or function. timeout_s <= 0: no limit.
  static std::shared_ptr<ToolSet> load(const std::optional<std::string>& tool_config_path,
                                       const std::optional<std::string>& function_tool_path, double timeout_s);
  // load(path, no function tools, timeout_s).
  static std::shared_ptr<ToolSet> from_config_file(const std::string& path, double timeout_s);
  ~ToolSet();

  // The tool schemas the chat template renders (verl's model_dump(exclude_unset=True, exclude_none=True)).
  const nlohmann::ordered_json& schemas() const;
  std::vector<std::string> names() const;
  // The class of the tool named `name` without its module ("Gsm8kTool"); "" for a function tool or a name the set
  // does not have.
  std::string class_name(const std::string& name) const;

  // The tools a sample with extra_info.tool_selection `selection` sees: the selected names the set has, in the
  // selection's order (verl's per-sample tool selection); every tool when `selection` is empty.
  std::vector<std::string> selected_names(const std::vector<std::string>& selection) const;
  // Their schemas, as schemas() for an empty selection.
  nlohmann::ordered_json selected_schemas(const std::vector<std::string>& selection) const;

  // A session per trajectory; `tools_kwargs`: the sample's extra_info.tools_kwargs ({} when absent); `selection`:
  // its extra_info.tool_selection (a call of another tool is answered as an unknown function).
  std::unique_ptr<ToolSession> start_session(const nlohmann::json& tools_kwargs,
                                             const std::vector<std::string>& selection = {});

  // The calls of several sessions of this set at once, all concurrently on the set's event loop (verl runs every
  // trajectory's calls at the same time): results per entry, in order. An empty call list gives no results.
  using SessionCalls = std::pair<ToolSession*, std::vector<ToolCallRequest>>;
  std::vector<std::vector<ToolCallResult>> execute_concurrently(const std::vector<SessionCalls>& work);

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

class ToolSession {
 public:
  virtual ~ToolSession() = default;
  // Runs the calls concurrently (asyncio.gather), results in the same order.
  virtual std::vector<ToolCallResult> execute(const std::vector<ToolCallRequest>& calls) = 0;
  // calc_reward of every tool instance created in this session, then release: {tool name: reward}.
  virtual std::map<std::string, double> finish() = 0;
};

struct InteractionTurn {
  bool should_terminate = false;
  std::string content;  // the user message given to the model
  double score = 0.0;
  nlohmann::json metrics = nlohmann::json::object();
  bool error = false;   // raised / timed out / malformed return: content is the error text, should_terminate set
};

class InteractionSession {
 public:
  virtual ~InteractionSession() = default;
  // generate_response(instance_id, messages, **interaction_kwargs)
  virtual InteractionTurn respond(const nlohmann::ordered_json& messages) = 0;
  // finalize_interaction(instance_id), or finalize_interaction() for verl's older no-argument signature; errors
  // are logged. Destroying the session without finish() still finalizes it.
  virtual void finish() = 0;
};

// Interactions: names from the entry's `name`, else verl's default from the class (Gsm8kInteraction -> gsm8k);
// each built as cls(config) with config["name"] set.
class InteractionSet {
 public:
  static std::shared_ptr<InteractionSet> from_config_file(const std::string& path, double timeout_s);
  ~InteractionSet();
  std::vector<std::string> names() const;
  // start_interaction(instance_id, **interaction_kwargs) on the interaction named interaction_kwargs["name"]
  // (an error naming extra_info.interaction_kwargs.name when missing or unknown). The instance id is a fresh
  // uuid4. start_interaction raising or timing out is an error (verl's agent loop fails there too).
  std::unique_ptr<InteractionSession> start_session(const nlohmann::json& interaction_kwargs);

  struct Impl;
 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace verl::agent
