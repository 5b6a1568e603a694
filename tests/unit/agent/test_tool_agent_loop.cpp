// The tool agent loop with scripted policy turns (so the conversation is known): the ids it builds equal the chat
// template applied to the final conversation (verl's tokenization sanity check), response_mask is 1 on exactly
// the policy's tokens, tools run through a verl-style tool file (a raising tool gives the model an error text and
// the rollout goes on), and the turn limits and the response budget end conversations where verl ends them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "support/run_command.h"
#include "support/thread_ranks.h"
#include "verl/agent/tensor_parallel_turns.h"
#include "verl/agent/tool_agent_loop.h"
#include "verl/agent/tools.h"
#include "verl/common/error.h"
#include "verl/python/interpreter.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/tokenizer.h"
#include "verl/tokenizer/tokenizer_builder.h"

namespace verl::agent {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

struct Fixture {
  std::string dir;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::shared_ptr<ToolSet> tools;
  int64_t eos = 0, pad = 0;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.dir = test::make_temp_dir("tool_agent_loop");
    tokenizer::ByteLevelBPESpec spec;
    spec.alphabet = tokenizer::printable_ascii_alphabet();
    spec.words = {"user", "assistant", "system", "####"};
    spec.added_tokens = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"};
    spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
    spec.eos_token = "<|im_end|>";
    spec.pad_token = "<|endoftext|>";
    spec.chat_template = tokenizer::chatml_tools_template();
    tokenizer::write_byte_level_bpe_folder(x.dir + "/tok", spec);
    x.tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(x.dir + "/tok"));
    x.eos = x.tok->eos_token_ids().at(0);
    x.pad = x.tok->pad_token_id().value();
    std::ofstream(x.dir + "/calc_tool.py") << R"PY(
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse


class CalcTool(BaseTool):
    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema):
        super().__init__(config, tool_schema)
        self._answers = {}

    async def create(self, instance_id=None, **kwargs):
        instance_id = instance_id or "calc-1"
        self._answers[instance_id] = []
        return instance_id, ToolResponse()

    async def execute(self, instance_id, parameters, **kwargs):
        expression = parameters["expression"]
        if "boom" in expression:
            raise ValueError("cannot evaluate " + expression)
        value = eval(expression, {"__builtins__": {}})
        self._answers[instance_id].append(value)
        return ToolResponse(text=str(value)), 0.5, {}

    async def calc_reward(self, instance_id, **kwargs):
        return float(len(self._answers[instance_id]))

    async def release(self, instance_id, **kwargs):
        del self._answers[instance_id]
)PY";
    std::ofstream(x.dir + "/tools.yaml") << R"Y(tools:
  - class_name: calc_tool.CalcTool
    config:
      type: native
    tool_schema:
      type: function
      function:
        name: calc
        description: Evaluates an arithmetic expression
        parameters:
          type: object
          properties:
            expression:
              type: string
              description: the expression
          required: [expression]
)Y";
    x.tools = ToolSet::from_config_file(x.dir + "/tools.yaml", 10);
    return x;
  }();
  return f;
}

std::vector<int64_t> encode(const std::string& text) {
  auto ids = fixture().tok->encode(text, false);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::string call_text(const std::string& expression) {
  return "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"expression\": \"" + expression + "\"}}\n</tool_call>";
}

// One conversation at a time keeps the scripting simple: the generator serves the single request.
TurnGenerator script(std::vector<std::string> turns, std::vector<std::vector<int64_t>>* fed, bool eos_at_end = true,
                     int64_t* budget_seen = nullptr) {
  auto state = std::make_shared<size_t>(0);
  return [=](std::vector<ContinueRequest>& requests) {
    EXPECT_EQ(requests.size(), 1u);
    ContinueRequest& r = requests.at(0);
    if (fed) fed->push_back(r.new_tokens);
    if (budget_seen) *budget_seen = r.max_new_tokens;
    ContinueResult result;
    const std::string text = turns.at(std::min(*state, turns.size() - 1));
    ++*state;
    result.tokens = encode(text);
    if (eos_at_end) result.tokens.push_back(fixture().eos);
    if (static_cast<int64_t>(result.tokens.size()) > r.max_new_tokens) {
      result.tokens.resize(static_cast<size_t>(r.max_new_tokens));
    }
    result.ended_with_eos = eos_at_end && result.tokens.back() == fixture().eos;
    r.cache->length += static_cast<int64_t>(r.new_tokens.size() + result.tokens.size()) - 1;
    return std::vector<ContinueResult>{result};
  };
}

AgentLoopOptions options(int64_t response_length = 200) {
  AgentLoopOptions o;
  o.prompt_length = 1024;
  o.response_length = response_length;
  o.model_type = "qwen2";
  o.sampling.eos_token_ids = {fixture().eos};
  o.sampling.pad_token_id = fixture().pad;
  o.multi_turn.enable = true;
  o.multi_turn.max_assistant_turns = 5;
  return o;
}

AgentLoopInputs one_sample() {
  AgentLoopInputs in;
  in.raw_prompt = {ordered_json::array({{{"role", "system"}, {"content", "Use the tools."}},
                                        {{"role", "user"}, {"content", "What is 2+3?"}}})};
  in.tools_kwargs = {json::object()};
  in.interaction_kwargs = {json::object()};
  return in;
}

std::vector<int64_t> row(const torch::Tensor& t, int64_t i, const torch::Tensor& mask) {
  std::vector<int64_t> out;
  for (int64_t j = 0; j < t.size(1); ++j) {
    if (mask[i][j].item<int64_t>() != 0) out.push_back(t[i][j].item<int64_t>());
  }
  return out;
}

TEST(ToolAgentLoop, IdsEqualTheTemplateOfTheFinalConversationAndTheMaskCoversThePolicyTokens) {
  auto& f = fixture();
  std::vector<std::vector<int64_t>> fed;
  const auto in = one_sample();
  const AgentLoopOutput out =
      run_scripted_agent_loop(script({call_text("2+3"), "#### 5"}, &fed), *f.tok, f.tools, nullptr, options(), in);

  // The conversation: the call, the tool's result, the answer.
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 5u) << messages.dump();
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["name"], "calc");
  EXPECT_EQ(messages[3], (ordered_json{{"role", "tool"}, {"content", "5"}}));
  EXPECT_EQ(messages[4]["content"], "#### 5");

  // Prompt: the template with the tools and the generation prompt.
  tokenizer::ChatTemplateInputs prompt_inputs;
  prompt_inputs.messages = in.raw_prompt[0];
  prompt_inputs.tools = f.tools->schemas();
  prompt_inputs.add_generation_prompt = true;
  const auto prompt = encode(tokenizer::apply_chat_template(*f.tok, prompt_inputs));
  const auto attention = out.attention_mask;
  const int64_t P = out.prompts.size(1);
  EXPECT_EQ(row(out.prompts, 0, attention.narrow(1, 0, P)), prompt);

  // Whole conversation: prompt + response ids equal the template over the final messages.
  tokenizer::ChatTemplateInputs all_inputs;
  all_inputs.messages = messages;
  all_inputs.tools = f.tools->schemas();
  auto whole = encode(tokenizer::apply_chat_template(*f.tok, all_inputs));
  // The template closes the last turn with "<|im_end|>\n"; generation stops at the eos.
  ASSERT_EQ(whole.size() >= 2 ? whole[whole.size() - 2] : -1, f.eos);
  whole.pop_back();
  EXPECT_EQ(row(out.input_ids, 0, attention), whole);
  EXPECT_EQ(out.sanity_check_failures, 0);

  // The mask: 1 on the two policy turns (each through its eos), 0 on the tool turn and the template's tokens.
  std::vector<int64_t> expected_mask;
  const auto turn1 = encode(call_text("2+3"));
  expected_mask.insert(expected_mask.end(), turn1.size() + 1, 1);
  const int64_t response_tokens = static_cast<int64_t>(whole.size() - prompt.size());
  const auto turn2 = encode("#### 5");
  expected_mask.insert(expected_mask.end(), response_tokens - expected_mask.size() - turn2.size() - 1, 0);
  expected_mask.insert(expected_mask.end(), turn2.size() + 1, 1);
  std::vector<int64_t> mask;
  for (int64_t j = 0; j < response_tokens; ++j) mask.push_back(out.response_mask[0][j].item<int64_t>());
  EXPECT_EQ(mask, expected_mask);
  for (int64_t j = response_tokens; j < out.response_mask.size(1); ++j) EXPECT_EQ(out.response_mask[0][j].item<int64_t>(), 0);

  // The second turn was fed only the unfed eos and the appended context, not the history.
  ASSERT_EQ(fed.size(), 2u);
  EXPECT_EQ(fed[0], prompt);
  EXPECT_EQ(fed[1].front(), f.eos);
  EXPECT_EQ(static_cast<int64_t>(fed[1].size()), response_tokens - static_cast<int64_t>(turn1.size() + turn2.size() + 1));

  EXPECT_EQ(out.num_turns.at(0), 4);  // 2 assistant turns + 1 tool round + 1, as verl counts
  EXPECT_EQ(out.tool_call_counts.at(0), 1);
  EXPECT_EQ(out.tool_errors.at(0), 0);
  EXPECT_EQ(out.tool_rewards.at(0), json::array({0.5}));
  EXPECT_EQ(out.reward_scores.at(0), (json{{"calc", 1.0}}));
}

// Under tensor parallelism (agent/tensor_parallel_turns.h) the group's first rank drives the loop: the tool runs
// once, there, and the other ranks receive every batch of turns, the tool result's tokens included, to run on their
// slices; the driver's rollout is the one of a single rank.
TEST(ToolAgentLoop, UnderTensorParallelismTheFirstRankRunsTheToolsAndTheOthersGetEveryBatch) {
  auto& f = fixture();
  std::vector<std::vector<int64_t>> alone_fed, driver_fed, follower_fed;
  const AgentLoopOutput alone = run_scripted_agent_loop(script({call_text("2+3"), "#### 5"}, &alone_fed), *f.tok,
                                                        f.tools, nullptr, options(), one_sample());
  AgentLoopOutput driven;
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    if (comm->rank() == 0) {
      TensorParallelTurns turns(comm, script({call_text("2+3"), "#### 5"}, &driver_fed));
      driven = run_scripted_agent_loop(turns.driver(), *f.tok, f.tools, nullptr, options(), one_sample());
      turns.finish();
      return;
    }
    // The other rank has no tools and no tokenizer: it only runs the batches it is sent.
    TensorParallelTurns turns(comm, [&](std::vector<ContinueRequest>& requests) {
      std::vector<ContinueResult> results(requests.size());
      for (auto& r : requests) follower_fed.push_back(r.new_tokens);
      return results;
    });
    turns.follow();
  });
  EXPECT_EQ(driver_fed, alone_fed);
  EXPECT_EQ(follower_fed, driver_fed);
  ASSERT_EQ(follower_fed.size(), 2u);
  EXPECT_NE(follower_fed[1].size(), 1u);  // the second turn's tokens carry the tool's response
  EXPECT_EQ(driven.tool_call_counts.at(0), 1);
  EXPECT_EQ(driven.messages.at(0), alone.messages.at(0));
  EXPECT_TRUE(torch::equal(driven.input_ids, alone.input_ids));
  EXPECT_TRUE(torch::equal(driven.response_mask, alone.response_mask));
}

TEST(ToolAgentLoop, ARaisingToolGivesTheModelAnErrorAndTheRolloutGoesOn) {
  auto& f = fixture();
  const AgentLoopOutput out =
      run_scripted_agent_loop(script({call_text("boom"), "#### 0"}, nullptr), *f.tok, f.tools, nullptr, options(), one_sample());
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 5u) << messages.dump();
  EXPECT_NE(messages[3]["content"].get<std::string>().find("Error executing tool 'calc'"), std::string::npos)
      << messages[3].dump();
  EXPECT_EQ(out.tool_errors.at(0), 1);
  EXPECT_EQ(messages[4]["content"], "#### 0");
}

TEST(ToolAgentLoop, TurnLimitsAndTheResponseBudgetEndTheConversation) {
  auto& f = fixture();
  auto opts = options();
  opts.multi_turn.max_assistant_turns = 1;  // verl: ends after the turn, before its tool calls run
  AgentLoopOutput out =
      run_scripted_agent_loop(script({call_text("2+3")}, nullptr), *f.tok, f.tools, nullptr, opts, one_sample());
  EXPECT_EQ(out.tool_call_counts.at(0), 0);
  EXPECT_EQ(out.num_turns.at(0), 2);

  // A budget smaller than the first turn: the turn is cut at the budget, nothing else runs.
  const int64_t budget = 7;
  int64_t seen = 0;
  out = run_scripted_agent_loop(script({call_text("2+3")}, nullptr, true, &seen), *f.tok, f.tools, nullptr,
                            options(budget), one_sample());
  EXPECT_EQ(seen, budget);
  EXPECT_EQ(out.response_mask.sum().item<int64_t>(), budget);
  EXPECT_EQ(out.tool_call_counts.at(0), 0);

  // A budget that the tool's context would pass: the conversation ends without the context (verl).
  const int64_t first_turn = static_cast<int64_t>(encode(call_text("2+3")).size()) + 1;
  out = run_scripted_agent_loop(script({call_text("2+3"), "#### 5"}, nullptr), *f.tok, f.tools, nullptr,
                            options(first_turn + 3), one_sample());
  EXPECT_EQ(out.tool_call_counts.at(0), 1);
  EXPECT_EQ(out.attention_mask.narrow(1, out.prompts.size(1), first_turn + 3).sum().item<int64_t>(), first_turn);
}

// verl's GSM8K interaction as the user: a wrong answer gets "incorrect" and another turn, the right one ends the
// conversation; the scores go to turn_scores and reward_scores["user_turn_rewards"].
TEST(ToolAgentLoop, AnInteractionAnswersAsTheUserUntilItEndsTheConversation) {
  auto& f = fixture();
  std::ofstream(f.dir + "/interactions.yaml") << R"Y(interaction:
  - name: gsm8k
    class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction
    config: {}
)Y";
  auto interactions = InteractionSet::from_config_file(f.dir + "/interactions.yaml", 10);
  auto in = one_sample();
  in.interaction_kwargs = {json{{"name", "gsm8k"}, {"query", "What is 2+3?"}, {"ground_truth", "5"}}};
  const AgentLoopOutput out =
      run_scripted_agent_loop(script({"#### 4", "#### 5", "#### 6"}, nullptr), *f.tok, nullptr, interactions, options(), in);
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 6u) << messages.dump();
  EXPECT_EQ(messages[3]["role"], "user");
  EXPECT_NE(messages[3]["content"].get<std::string>().find("incorrect"), std::string::npos);
  EXPECT_EQ(messages[5]["content"], "Your response is correct!");
  EXPECT_EQ(out.turn_scores.at(0), json::array({0.0, 1.0}));
  EXPECT_EQ(out.reward_scores.at(0), (json{{"user_turn_rewards", {0.0, 1.0}}}));
  EXPECT_EQ(out.num_turns.at(0), 5);  // 2 assistant + 2 user + 1
  // The policy's two turns are the only mask-1 tokens.
  const int64_t policy = static_cast<int64_t>(2 * (encode("#### 4").size() + 1));
  EXPECT_EQ(out.response_mask.sum().item<int64_t>(), policy);
}

// Several conversations' policies, each with its own turns: requests are matched to conversations by their cache
// (the first call lists them in order).
TurnGenerator script_each(std::vector<std::vector<std::string>> turns) {
  auto which = std::make_shared<std::map<const SequenceCache*, size_t>>();
  auto next = std::make_shared<std::vector<size_t>>(turns.size(), 0);
  return [=](std::vector<ContinueRequest>& requests) {
    std::vector<ContinueResult> out;
    for (auto& r : requests) {
      if (!which->count(r.cache)) which->emplace(r.cache, which->size());
      const size_t conv = which->at(r.cache);
      ContinueResult result;
      result.tokens = encode(turns.at(conv).at((*next)[conv]++));
      result.tokens.push_back(fixture().eos);
      result.ended_with_eos = true;
      r.cache->length += static_cast<int64_t>(r.new_tokens.size() + result.tokens.size()) - 1;
      out.push_back(result);
    }
    return out;
  };
}

// The tool calls of different conversations in one round run at the same time (each call sees the other start
// before it ends), as verl runs every trajectory's calls concurrently.
TEST(ToolAgentLoop, ToolCallsOfDifferentConversationsRunConcurrently) {
  auto& f = fixture();
  std::ofstream(f.dir + "/slow_tool.py") << R"PY(
import asyncio
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import ToolResponse

EVENTS = []


class SlowTool(BaseTool):
    async def execute(self, instance_id, parameters, **kwargs):
        EVENTS.append("start")
        await asyncio.sleep(0.2)
        EVENTS.append("end")
        return ToolResponse(text=",".join(EVENTS)), 0.0, {}
)PY";
  std::ofstream(f.dir + "/slow.yaml") << R"Y(tools:
  - class_name: slow_tool.SlowTool
    config: {type: native}
    tool_schema:
      type: function
      function:
        name: calc
        description: slow
        parameters: {type: object, properties: {expression: {type: string}}, required: [expression]}
)Y";
  auto slow = ToolSet::from_config_file(f.dir + "/slow.yaml", 10);
  AgentLoopInputs in = one_sample();
  in.raw_prompt.push_back(in.raw_prompt[0]);
  in.tools_kwargs.push_back(json::object());
  in.interaction_kwargs.push_back(json::object());
  const AgentLoopOutput out = run_scripted_agent_loop(
      script_each({{call_text("1"), "#### 1"}, {call_text("2"), "#### 2"}}), *f.tok, slow, nullptr, options(), in);
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages[0][3]["content"], "start,start,end");
  EXPECT_EQ(out.messages[1][3]["content"], "start,start,end,end");
}

// rollout.trace: the spans verl's @rollout_trace_op records for one trajectory, with their inputs and outputs.
TEST(ToolAgentLoop, TraceRecordsVerlsSpansOfATrajectory) {
  auto& f = fixture();
  auto o = options();
  o.record_trace = true;
  o.trace_token2text = true;
  o.sampling.temperature = 0.7;
  auto in = one_sample();
  const AgentLoopOutput out = run_scripted_agent_loop(script({call_text("2+3"), "#### 5"}, nullptr), *f.tok, f.tools,
                                                      nullptr, o, in);
  ASSERT_EQ(out.traces.size(), 1u);
  const TraceSpan& run = out.traces[0];
  EXPECT_EQ(run.name, "ToolAgentLoop.run");
  std::vector<std::string> names;
  for (const auto& c : run.children) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"AsyncLLMServerManager.generate", "HermesToolParser.extract_tool_calls",
                                             "CalcTool.execute", "AsyncLLMServerManager.generate",
                                             "HermesToolParser.extract_tool_calls"}));
  ASSERT_EQ(run.children.size(), 5u);
  const auto& first = run.children[0];
  const int64_t P = out.prompts.size(1);
  const auto prompt = row(out.prompts, 0, out.attention_mask.narrow(1, 0, P));
  EXPECT_EQ(first.inputs["prompt_ids"].get<std::vector<int64_t>>(), prompt);
  EXPECT_EQ(first.inputs["sampling_params"]["temperature"], 0.7);
  auto turn1 = encode(call_text("2+3"));
  turn1.push_back(f.eos);
  EXPECT_EQ(first.outputs["token_ids"].get<std::vector<int64_t>>(), turn1);
  // The second generation is fed the whole conversation so far: prompt, turn 1, the tool's message.
  const auto second_prompt = run.children[3].inputs["prompt_ids"].get<std::vector<int64_t>>();
  EXPECT_GT(second_prompt.size(), prompt.size() + turn1.size());
  EXPECT_EQ(first.inputs["request_id"], run.children[3].inputs["request_id"]) << "one request id per trajectory";
  // The parser: the turn's ids in, [content, calls] out (arguments as a JSON string, as verl's FunctionCall).
  EXPECT_EQ(run.children[1].inputs["responses_ids"].get<std::vector<int64_t>>(), turn1);
  EXPECT_EQ(run.children[1].outputs[1][0]["name"], "calc");
  EXPECT_EQ(json::parse(run.children[1].outputs[1][0]["arguments"].get<std::string>()), json({{"expression", "2+3"}}));
  EXPECT_EQ(run.children[4].outputs[1], ordered_json::array());
  // The tool: its parameters in, [ToolResponse, reward, metrics] out.
  EXPECT_EQ(json(run.children[2].inputs["parameters"]), json({{"expression", "2+3"}}));
  EXPECT_EQ(run.children[2].outputs[0]["text"], "5");
  EXPECT_EQ(run.children[2].outputs[1], 0.5);
  // ToolAgentLoop.run: the raw prompt in, the AgentLoopOutput out (with token2text its text too).
  EXPECT_EQ(run.inputs["kwargs"]["raw_prompt"], in.raw_prompt[0]);
  EXPECT_EQ(run.outputs["prompt_ids"].get<std::vector<int64_t>>(), prompt);
  EXPECT_EQ(run.outputs["num_turns"], out.num_turns[0]);
  const auto response = row(out.responses, 0, out.attention_mask.narrow(1, P, out.responses.size(1)));
  EXPECT_EQ(run.outputs["response_ids"].get<std::vector<int64_t>>(), response);
  EXPECT_EQ(run.outputs["response_text"],
            f.tok->decode(std::vector<int32_t>(response.begin(), response.end()), false));
  EXPECT_NE(run.outputs["response_text"].get<std::string>().find("#### 5"), std::string::npos);
  // Spans lie inside their parent, in order.
  for (const auto& c : run.children) {
    EXPECT_GE(c.start_ns, run.start_ns);
    EXPECT_LE(c.end_ns, run.end_ns);
  }
  // Without record_trace nothing is recorded.
  EXPECT_TRUE(run_scripted_agent_loop(script({"#### 5"}, nullptr), *f.tok, f.tools, nullptr, options(), in)
                  .traces.empty());
}

// verl's per-sample tool selection (extra_info.tool_selection): the prompt renders the selected tools only, and a
// call of another tool is answered as an unknown function. The tool set holds the YAML's calc and a @function_tool.
TEST(ToolAgentLoop, ToolSelectionRendersAndAllowsTheSelectedToolsOnly) {
  auto& f = fixture();
  python::with_gil("test", [] {
    pybind11::module_::import("verl.tools.function_tool")
        .attr("FUNCTION_TOOL_REGISTRY")
        .attr("pop")("loop_upper", pybind11::none());
  });
  std::ofstream(f.dir + "/loop_functions.py") << R"PY(
from verl.tools.function_tool import function_tool


@function_tool
def loop_upper(text: str) -> str:
    """Upper-cases a text.

    Args:
        text: The text
    """
    return text.upper()
)PY";
  auto tools = ToolSet::load(f.dir + "/tools.yaml", f.dir + "/loop_functions.py", 10);
  ASSERT_EQ(tools->names(), (std::vector<std::string>{"calc", "loop_upper"}));
  EXPECT_EQ(tools->selected_names({"loop_upper", "nope", "calc", "loop_upper"}),
            (std::vector<std::string>{"loop_upper", "calc"}));

  const auto run = [&](const std::vector<std::string>& selection, AgentLoopInputs in) {
    in.tool_selection = {selection};
    return run_scripted_agent_loop(script({call_text("2+3"), "#### 5"}, nullptr), *f.tok, tools, nullptr, options(),
                                   in);
  };
  const auto prompt_with = [&](const ordered_json& schemas) {
    tokenizer::ChatTemplateInputs inputs;
    inputs.messages = one_sample().raw_prompt[0];
    inputs.tools = schemas;
    inputs.add_generation_prompt = true;
    return encode(tokenizer::apply_chat_template(*f.tok, inputs));
  };

  // calc alone: rendered alone, and called.
  AgentLoopOutput out = run({"calc"}, one_sample());
  const int64_t P = out.prompts.size(1);
  const auto calc_prompt = prompt_with(ordered_json::array({tools->schemas()[0]}));
  EXPECT_EQ(row(out.prompts, 0, out.attention_mask.narrow(1, 0, P)), calc_prompt);
  EXPECT_EQ(out.messages.at(0)[3]["content"], "5");
  EXPECT_EQ(out.sanity_check_failures, 0);

  // loop_upper alone: calc is unknown to this sample.
  out = run({"loop_upper"}, one_sample());
  EXPECT_EQ(row(out.prompts, 0, out.attention_mask.narrow(1, 0, P)),
            prompt_with(ordered_json::array({tools->schemas()[1]})));
  EXPECT_EQ(out.messages.at(0)[3]["content"], "Unknown function 'calc'. Available tools: ['loop_upper']");
  EXPECT_EQ(out.tool_errors.at(0), 1);
  EXPECT_EQ(out.sanity_check_failures, 0);

  // No selection (or an empty one): every tool.
  out = run({}, one_sample());
  EXPECT_EQ(row(out.prompts, 0, out.attention_mask.narrow(1, 0, P)), prompt_with(tools->schemas()));
  EXPECT_NE(calc_prompt, prompt_with(tools->schemas()));
  EXPECT_EQ(out.messages.at(0)[3]["content"], "5");
}

// Kimi's format: the id the model wrote names the tool only through the tools (verl's _infer_tool_name) and goes
// into both messages, as verl puts it there (the assistant's tool_calls[].id, the tool message's tool_call_id).
TEST(ToolAgentLoop, KimiCallsResolveTheirNameAndCarryTheirIdIntoBothMessages) {
  auto& f = fixture();
  AgentLoopOptions opts = options();
  opts.multi_turn.format = "kimi";
  opts.multi_turn.tokenization_sanity_check_mode = "disable";  // the template renders calls in the hermes style
  const std::string call =
      "Checking.<|tool_calls_section_begin|><|tool_call_begin|> functions.calc:0 <|tool_call_argument_begin|>"
      "{\"expression\": \"2+3\"}<|tool_call_end|><|tool_calls_section_end|>";
  const AgentLoopOutput out =
      run_scripted_agent_loop(script({call, "#### 5"}, nullptr), *f.tok, f.tools, nullptr, opts, one_sample());
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 5u) << messages.dump();
  EXPECT_EQ(messages[2]["content"], "Checking.");
  EXPECT_EQ(messages[2]["tool_calls"][0],
            (ordered_json{{"type", "function"},
                          {"function", {{"name", "calc"}, {"arguments", {{"expression", "2+3"}}}}},
                          {"id", "functions.calc:0"}}));
  EXPECT_EQ(messages[3], (ordered_json{{"role", "tool"}, {"content", "5"}, {"tool_call_id", "functions.calc:0"}}));
  EXPECT_EQ(out.tool_call_counts.at(0), 1);
}

// Gemma 4 writes no eos after a call: the turn ends at <tool_call|> (turn_sampling adds it to the stop ids), the
// call runs, and the conversation goes on; only the eos of the last turn ends it as a whole conversation.
TEST(ToolAgentLoop, AParserStopTokenEndsTheTurnNotTheConversation) {
  const std::string dir = test::make_temp_dir("gemma4_stop_token");
  tokenizer::ByteLevelBPESpec spec;
  spec.alphabet = tokenizer::printable_ascii_alphabet();
  spec.added_tokens = {"<|tool_call>", "<tool_call|>"};
  spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
  spec.eos_token = "<|im_end|>";
  spec.pad_token = "<|endoftext|>";
  spec.chat_template = tokenizer::chatml_tools_template();
  tokenizer::write_byte_level_bpe_folder(dir + "/tok", spec);
  const auto tok = tokenizer::Tokenizer::from_folder(dir + "/tok");
  const int64_t eos = tok.eos_token_ids().at(0);
  const int64_t stop = tok.token_to_id("<tool_call|>").value();

  AgentLoopOptions opts = options();
  opts.sampling.eos_token_ids = {eos};
  opts.multi_turn.format = "gemma4";
  EXPECT_EQ(turn_sampling(opts, tok).stop_token_ids, (std::vector<int64_t>{stop}));
  EXPECT_EQ(turn_sampling(opts, tok).eos_token_ids, (std::vector<int64_t>{eos}));
  opts.sampling.stop_token_ids = {stop, 7};  // ids already there stay, once
  EXPECT_EQ(turn_sampling(opts, tok).stop_token_ids, (std::vector<int64_t>{stop, 7}));
  opts.sampling.stop_token_ids.clear();
  opts.multi_turn.format = "hermes";
  EXPECT_TRUE(turn_sampling(opts, tok).stop_token_ids.empty());
  opts.multi_turn.format = "glm";  // this vocabulary has no <|observation|>: nothing more to stop at
  EXPECT_TRUE(turn_sampling(opts, tok).stop_token_ids.empty());
  opts.multi_turn.format = "gemma4";
  opts.multi_turn.tokenization_sanity_check_mode = "disable";
  opts.record_trace = true;

  // Turn 1 stops at <tool_call|> (the engine reports it as it reports an eos); turn 2 ends with the eos.
  auto turns = std::make_shared<size_t>(0);
  TurnGenerator generate = [&, turns](std::vector<ContinueRequest>& requests) {
    ContinueRequest& r = requests.at(0);
    const std::string text =
        *turns == 0 ? "Let me see.<|tool_call>call:calc{expression:<|\"|>2+3<|\"|>}<tool_call|>" : "#### 5<|im_end|>";
    ++*turns;
    const auto ids = tok.encode(text, false);
    ContinueResult result;
    result.tokens.assign(ids.begin(), ids.end());
    result.ended_with_eos = true;
    r.cache->length += static_cast<int64_t>(r.new_tokens.size() + result.tokens.size()) - 1;
    return std::vector<ContinueResult>{result};
  };
  opts.sampling = turn_sampling(opts, tok);  // as run_tool_agent_loop passes it
  const AgentLoopOutput out = run_scripted_agent_loop(generate, tok, fixture().tools, nullptr, opts, one_sample());
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 5u) << messages.dump();
  EXPECT_EQ(messages[2]["content"], "Let me see.");
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["arguments"], (ordered_json{{"expression", "2+3"}}));
  EXPECT_EQ(messages[3]["content"], "5");
  EXPECT_EQ(messages[4]["content"], "#### 5");  // the eos is not content
  EXPECT_EQ(out.num_turns.at(0), 4);
  // The trace: each generate call's sampling_params carry the stop ids verl injects; the run's do not.
  ASSERT_EQ(out.traces.size(), 1u);
  const TraceSpan& run = out.traces[0];
  EXPECT_FALSE(run.inputs["sampling_params"].contains("stop_token_ids"));
  ASSERT_EQ(run.children.at(0).name, "AsyncLLMServerManager.generate");
  EXPECT_EQ(run.children[0].inputs["sampling_params"]["stop_token_ids"], ordered_json::array({stop}));
}

// gpt-oss passes the arguments on unchecked: text that is not JSON stays text in the assistant message and the tool
// step answers with verl's "Invalid JSON in arguments" reply (json.loads's own message); the rollout goes on.
TEST(ToolAgentLoop, GptOssArgumentsThatAreNotJsonGetVerlsReply) {
  auto& f = fixture();
  AgentLoopOptions opts = options(600);  // the byte-level test tokenizer spells the tags letter by letter
  opts.multi_turn.format = "gpt-oss";
  opts.multi_turn.tokenization_sanity_check_mode = "disable";
  const std::string call =
      "<|start|>assistant<|channel|>commentary to=functions.calc <|constrain|>json<|message|>{oops<|call|>";
  const AgentLoopOutput out =
      run_scripted_agent_loop(script({call, "#### 5"}, nullptr), *f.tok, f.tools, nullptr, opts, one_sample());
  const ordered_json& messages = out.messages.at(0);
  ASSERT_EQ(messages.size(), 5u) << messages.dump();
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"], (ordered_json{{"name", "calc"}, {"arguments", "{oops"}}));
  EXPECT_EQ(messages[3]["content"],
            "Invalid JSON in arguments for 'calc': Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1)");
  EXPECT_EQ(out.tool_errors.at(0), 1);
  ASSERT_EQ(out.messages.size(), 1u);

  // JSON arguments that are not an object stay verl's json.dumps string in the assistant message.
  opts.multi_turn.format = "hermes";
  const AgentLoopOutput list = run_scripted_agent_loop(
      script({"<tool_call>{\"name\": \"calc\", \"arguments\": [1,2.50]}</tool_call>", "#### 5"}, nullptr), *f.tok,
      f.tools, nullptr, opts, one_sample());
  EXPECT_EQ(list.messages.at(0)[2]["tool_calls"][0]["function"]["arguments"], "[1, 2.5]");
}

}  // namespace
}  // namespace verl::agent
