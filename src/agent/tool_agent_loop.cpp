#include "verl/agent/tool_agent_loop.h"

#include <algorithm>
#include <map>
#include <optional>

#include "verl/agent/continuation_engine.h"
#include "verl/agent/conversation_tokens.h"
#include "verl/agent/tool_parser.h"
#include "verl/agent/tools.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::agent {

namespace {

constexpr const char* kToolAgentLoopComponent = "multi_turn";
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

// Byte offsets of the code points of `text` (plus its size): Python slices strings by code points.
std::vector<size_t> code_point_offsets(const std::string& text) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) offsets.push_back(i);
  }
  offsets.push_back(text.size());
  return offsets;
}

// verl's ToolAgentLoop._call_tool truncation of a long tool response (max_tool_response_length characters).
std::string truncate_tool_response(const std::string& text, int64_t limit, const std::string& side) {
  const auto offsets = code_point_offsets(text);
  const int64_t chars = static_cast<int64_t>(offsets.size()) - 1;
  if (chars <= limit) return text;
  auto head = [&](int64_t n) { return text.substr(0, offsets[n]); };
  auto tail = [&](int64_t n) { return text.substr(offsets[chars - n]); };
  if (side == "left") return "(truncated)..." + tail(limit);
  if (side == "right") return head(limit) + "...(truncated)";
  const int64_t half = limit / 2;
  return head(half) + "...(truncated)..." + tail(half);
}

struct Conversation {
  OJson messages;
  std::vector<int64_t> ids;  // prompt, then everything after it
  int64_t prompt_length = 0;
  std::vector<int64_t> mask;
  std::vector<float> log_probs;
  SequenceCache cache;
  int64_t assistant_turns = 0, user_turns = 0, tool_calls = 0, tool_errors = 0;
  Json turn_scores = Json::array(), tool_rewards = Json::array();
  std::unique_ptr<ToolSession> tool_session;
  const ConversationTokens* tokens = nullptr;  // the builder rendering this sample's tools
  OJson tool_schemas;                          // the tools this sample sees (the parser types values by them)
  std::vector<std::optional<std::string>> call_ids;  // this round's calls' tool_call_id (kimi), for the tool messages
  std::unique_ptr<InteractionSession> interaction;
  bool last_turn_complete = false;  // the last policy turn ended with an eos id (a whole conversation)
  bool prompt_truncated = false;
  bool done = false;
  TraceSpan run;           // options.record_trace: verl's ToolAgentLoop.run span
  std::string request_id;  // verl's uuid4().hex per trajectory
};

std::vector<int32_t> to_int32(const std::vector<int64_t>& ids, size_t begin, size_t end) {
  return std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(begin), ids.begin() + static_cast<std::ptrdiff_t>(end));
}

// verl's tokenizer falls back to the eos token for a missing pad token; the parsers remove its text.
std::string pad_token_text(const tokenizer::Tokenizer& tokenizer) {
  const auto& config = tokenizer.config();
  if (config.pad_token) return *config.pad_token;
  return config.eos_token.value_or("");
}

OJson int_list(const std::vector<int64_t>& ids, size_t begin, size_t end) {
  return OJson(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                    ids.begin() + static_cast<std::ptrdiff_t>(end)));
}

}  // namespace

rollout::SamplingParams turn_sampling(const AgentLoopOptions& options, const tokenizer::Tokenizer& tokenizer) {
  rollout::SamplingParams sampling = options.sampling;
  auto& ids = sampling.stop_token_ids;
  for (const std::string& token : ToolParser::create(options.multi_turn.format)->stop_tokens()) {
    // verl asks convert_tokens_to_ids; a vocabulary without the token has nothing to stop at.
    const std::optional<int32_t> id = tokenizer.token_to_id(token);
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  return sampling;
}

AgentLoopOutput run_tool_agent_loop(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                    const std::shared_ptr<ToolSet>& tools,
                                    const std::shared_ptr<InteractionSet>& interactions,
                                    const AgentLoopOptions& options, const AgentLoopInputs& inputs) {
  AgentLoopOptions turn_options = options;
  turn_options.sampling = turn_sampling(options, tokenizer);  // the engine samples with it, the trace shows it
  ContinuationEngine engine(model, turn_options.sampling);
  AgentLoopOutput out =
      run_scripted_agent_loop([&](std::vector<ContinueRequest>& requests) { return engine.continue_batch(requests); },
                              tokenizer, tools, interactions, turn_options, inputs);
  out.prefill_tokens = engine.prefill_tokens();
  return out;
}

AgentLoopOutput run_scripted_agent_loop(const TurnGenerator& generate_turns, const tokenizer::Tokenizer& tokenizer,
                                    const std::shared_ptr<ToolSet>& tools,
                                    const std::shared_ptr<InteractionSet>& interactions,
                                    const AgentLoopOptions& options, const AgentLoopInputs& inputs) {
  const auto& mt = options.multi_turn;
  const size_t batch = inputs.raw_prompt.size();
  VERL_CHECK(inputs.tools_kwargs.size() == batch && inputs.interaction_kwargs.size() == batch, kToolAgentLoopComponent,
             "raw_prompt, tools_kwargs and interaction_kwargs must have one entry per sample");
  VERL_CHECK(inputs.tool_selection.empty() || inputs.tool_selection.size() == batch, kToolAgentLoopComponent,
             "tool_selection must be empty or have one entry per sample");
  VERL_CHECK(options.prompt_length >= 1 && options.response_length >= 1, kToolAgentLoopComponent,
             "prompt_length and response_length must be positive");
  // One token builder per set of tools rendered: every tool, or a sample's extra_info.tool_selection.
  std::map<std::vector<std::string>, std::unique_ptr<ConversationTokens>> builders;
  const auto builder_for = [&](size_t i) -> const ConversationTokens* {
    const std::vector<std::string> none;
    const auto& selection = inputs.tool_selection.empty() || !tools ? none : inputs.tool_selection[i];
    auto& builder = builders[tools ? tools->selected_names(selection) : selection];  // keyed by the names rendered
    if (!builder) {
      builder = std::make_unique<ConversationTokens>(tokenizer, tools ? tools->selected_schemas(selection) : OJson(),
                                                     options.chat_template_kwargs, options.model_type,
                                                     options.chat_template_timeout);
    }
    return builder.get();
  };
  const auto parser = ToolParser::create(mt.format, pad_token_text(tokenizer));
  const auto& eos_ids = options.sampling.eos_token_ids;
  const int64_t R = options.response_length;

  std::vector<Conversation> convs(batch);
  int64_t truncated_prompts = 0;
  for (size_t i = 0; i < batch; ++i) {
    Conversation& c = convs[i];
    VERL_CHECK(inputs.raw_prompt[i].is_array() && !inputs.raw_prompt[i].empty(), kToolAgentLoopComponent, "sample ", i,
               ": raw_prompt must be a non-empty list of messages (data.return_raw_chat=true), got ",
               inputs.raw_prompt[i].dump().substr(0, 120));
    c.messages = inputs.raw_prompt[i];
    c.tokens = builder_for(i);
    if (tools) {
      c.tool_schemas = tools->selected_schemas(inputs.tool_selection.empty() ? std::vector<std::string>{}
                                                                             : inputs.tool_selection[i]);
    }
    c.ids = c.tokens->initial_tokens(c.messages);
    if (static_cast<int64_t>(c.ids.size()) > options.prompt_length) {  // verl: left-truncated, with a warning
      c.ids.erase(c.ids.begin(), c.ids.end() - options.prompt_length);
      c.prompt_truncated = true;
      ++truncated_prompts;
    }
    c.prompt_length = static_cast<int64_t>(c.ids.size());
    if (tools) {
      c.tool_session =
          tools->start_session(inputs.tools_kwargs[i],
                               inputs.tool_selection.empty() ? std::vector<std::string>{} : inputs.tool_selection[i]);
    }
    if (interactions) c.interaction = interactions->start_session(inputs.interaction_kwargs[i]);
  }
  // verl's @rollout_trace_op spans: ToolAgentLoop.run per trajectory, its turns' spans inside.
  const bool trace = options.record_trace;
  OJson sampling_json, generate_sampling_json;
  if (trace) {
    VERL_CHECK(inputs.trace_kwargs.empty() || inputs.trace_kwargs.size() == batch, kToolAgentLoopComponent,
               "trace_kwargs must have one entry per sample");
    sampling_json = {{"temperature", options.sampling.temperature}, {"top_p", options.sampling.top_p},
                     {"top_k", options.sampling.top_k}, {"repetition_penalty", 1.0},
                     {"logprobs", options.sampling.calculate_log_probs}};
    // Each generate call's parameters carry the parser's stop ids as verl injects them (the run's do not).
    generate_sampling_json = sampling_json;
    const std::vector<int64_t>& stop_ids = options.sampling.stop_token_ids;
    if (!stop_ids.empty()) generate_sampling_json["stop_token_ids"] = stop_ids;
    const int64_t now = trace_clock_ns();
    for (size_t i = 0; i < batch; ++i) {
      Conversation& c = convs[i];
      c.request_id = trace_request_id();
      c.run.name = "ToolAgentLoop.run";
      c.run.start_ns = now;
      OJson kwargs = inputs.trace_kwargs.empty() ? OJson{{"raw_prompt", inputs.raw_prompt[i]},
                                                         {"tools_kwargs", inputs.tools_kwargs[i]},
                                                         {"interaction_kwargs", inputs.interaction_kwargs[i]}}
                                                 : inputs.trace_kwargs[i];
      c.run.inputs = {{"sampling_params", sampling_json}, {"kwargs", std::move(kwargs)}};
    }
  }
  if (truncated_prompts > 0) {
    VERL_LOG(Warn, kToolAgentLoopComponent)
        << truncated_prompts
        << " prompt(s) with the tools rendered exceed rollout.prompt_length=" << options.prompt_length
        << "; left-truncated";
  }

  while (true) {
    std::vector<size_t> waiting;
    std::vector<ContinueRequest> requests;
    for (size_t i = 0; i < batch; ++i) {
      Conversation& c = convs[i];
      if (c.done) continue;
      waiting.push_back(i);
      ContinueRequest r;
      r.cache = &c.cache;
      r.new_tokens.assign(c.ids.begin() + c.cache.length, c.ids.end());
      r.max_new_tokens = R - static_cast<int64_t>(c.mask.size());
      requests.push_back(std::move(r));
    }
    if (waiting.empty()) break;
    const int64_t generate_start = trace ? trace_clock_ns() : 0;
    std::vector<ContinueResult> results = generate_turns(requests);
    const int64_t generate_end = trace ? trace_clock_ns() : 0;
    VERL_CHECK(results.size() == requests.size(), kToolAgentLoopComponent, "the turn generator returned ",
               results.size(), " turns for ", requests.size(), " conversations");

    // 1. Each policy turn: appended, parsed; the tool calls of every conversation are gathered.
    std::vector<size_t> calling;                       // conversations with tool calls this round
    std::vector<ToolSet::SessionCalls> work;           // their calls
    std::vector<size_t> answering;                     // conversations the interaction answers
    for (size_t w = 0; w < waiting.size(); ++w) {
      Conversation& c = convs[waiting[w]];
      const ContinueResult& turn = results[w];
      if (trace) {
        TraceSpan span;
        span.name = "AsyncLLMServerManager.generate";
        span.inputs = {{"request_id", c.request_id},
                       {"prompt_ids", int_list(c.ids, 0, c.ids.size())},
                       {"sampling_params", generate_sampling_json},
                       {"image_data", nullptr},
                       {"video_data", nullptr}};
        span.outputs = {{"token_ids", turn.tokens},
                        {"log_probs", options.sampling.calculate_log_probs ? OJson(turn.log_probs) : OJson()},
                        {"routed_experts", nullptr}, {"stop_reason", "completed"}, {"num_preempted", nullptr}};
        span.start_ns = generate_start;
        span.end_ns = generate_end;
        c.run.children.push_back(std::move(span));
      }
      c.ids.insert(c.ids.end(), turn.tokens.begin(), turn.tokens.end());
      c.mask.insert(c.mask.end(), turn.tokens.size(), 1);
      if (options.sampling.calculate_log_probs) c.log_probs.insert(c.log_probs.end(), turn.log_probs.begin(), turn.log_probs.end());
      c.assistant_turns += 1;
      // A turn ended by the parser's stop token (gemma4's <tool_call|>) is not a whole conversation's end.
      const bool at_eos = turn.ended_with_eos && !turn.tokens.empty() &&
                          std::find(eos_ids.begin(), eos_ids.end(), turn.tokens.back()) != eos_ids.end();
      c.last_turn_complete = at_eos;
      // verl parses the turn as decoded, its closing eos included (its content keeps the eos text); here the assistant
      // message's content goes without it, since the sanity check re-renders the message and the template closes
      // the turn itself.
      const std::string text =
          tokenizer.decode(to_int32(c.ids, c.ids.size() - turn.tokens.size(), c.ids.size()), false);
      const std::string eos_text = at_eos ? tokenizer.decode({static_cast<int32_t>(turn.tokens.back())}, false) : "";
      const auto without_eos = [&](std::string content) {
        if (!eos_text.empty() && content.size() >= eos_text.size() &&
            content.compare(content.size() - eos_text.size(), eos_text.size(), eos_text) == 0) {
          content.resize(content.size() - eos_text.size());
        }
        return content;
      };

      const bool out_of_budget = static_cast<int64_t>(c.mask.size()) >= R;
      const bool turn_limit = (mt.max_assistant_turns && c.assistant_turns >= *mt.max_assistant_turns) ||
                              (mt.max_user_turns && c.user_turns >= *mt.max_user_turns);
      const int64_t parse_start = trace ? trace_clock_ns() : 0;
      ParsedTurn parsed = out_of_budget || turn_limit ? ParsedTurn{text, {}, 0} : parser->parse(text, c.tool_schemas);
      if (trace && !out_of_budget && !turn_limit) {
        TraceSpan span;
        span.name = parser->class_name() + ".extract_tool_calls";
        OJson calls = OJson::array();
        for (const auto& call : parsed.calls) {
          calls.push_back({{"name", call.name},
                           {"arguments", verl_arguments_text(call)},
                           {"tool_call_id", call.tool_call_id ? OJson(*call.tool_call_id) : OJson()}});
        }
        span.inputs = {{"responses_ids", turn.tokens}};
        span.outputs = OJson::array({parsed.content, calls});
        span.start_ns = parse_start;
        span.end_ns = trace_clock_ns();
        c.run.children.push_back(std::move(span));
      }
      OJson assistant = {{"role", "assistant"}, {"content", without_eos(parsed.content)}};
      const size_t n_calls = std::min<size_t>(parsed.calls.size(), static_cast<size_t>(mt.max_parallel_calls));
      if (n_calls > 0 && c.tool_session) {
        OJson calls = OJson::array();
        std::vector<ToolCallRequest> requests_of_turn;
        c.call_ids.clear();
        for (size_t k = 0; k < n_calls; ++k) {
          const FunctionCall& call = parsed.calls[k];
          std::string text = verl_arguments_text(call);
          // verl's _build_assistant_message: arguments that are not a JSON object stay verl's string.
          const bool object = !call.arguments_not_json && call.arguments.is_object();
          OJson entry = {{"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", object ? call.arguments : OJson(text)}}}};
          if (call.tool_call_id) entry["id"] = *call.tool_call_id;  // verl: the model's id, in both messages
          calls.push_back(std::move(entry));
          requests_of_turn.push_back({call.name, call.arguments, std::move(text), call.arguments_not_json});
          c.call_ids.push_back(call.tool_call_id);
        }
        assistant["tool_calls"] = calls;
        if (!out_of_budget && !turn_limit) {
          calling.push_back(waiting[w]);
          work.emplace_back(c.tool_session.get(), std::move(requests_of_turn));
        }
      } else if (!out_of_budget && !turn_limit && c.interaction) {
        answering.push_back(waiting[w]);
      }
      c.messages.push_back(assistant);
      c.tool_errors += parsed.malformed;
      const bool continues = !out_of_budget && !turn_limit && ((n_calls > 0 && c.tool_session) || c.interaction);
      if (!continues) c.done = true;
    }

    // 2. All the round's tool calls at once (verl runs every trajectory's calls concurrently); the interaction's
    //    replies one conversation after another.
    std::map<size_t, OJson> appended;
    std::map<size_t, bool> terminate_after;
    if (!work.empty()) {
      const int64_t tools_start = trace ? trace_clock_ns() : 0;
      const auto outcomes = tools->execute_concurrently(work);
      const int64_t tools_end = trace ? trace_clock_ns() : 0;
      for (size_t k = 0; trace && k < calling.size(); ++k) {
        for (size_t j = 0; j < outcomes[k].size() && j < work[k].second.size(); ++j) {
          const ToolCallRequest& call = work[k].second[j];
          const std::string cls = tools->class_name(call.name);
          // verl: an unknown tool or arguments that are not JSON get an error message, no execute call.
          if (cls.empty() || call.arguments_not_json) continue;
          const ToolCallResult& result = outcomes[k][j];
          TraceSpan span;
          span.name = cls + ".execute";
          span.inputs = {{"instance_id", nullptr}, {"parameters", call.arguments}, {"kwargs", OJson::object()}};
          span.outputs = OJson::array({OJson{{"text", result.text}, {"image", nullptr}, {"video", nullptr}},
                                       result.reward, result.metrics});
          span.start_ns = tools_start;
          span.end_ns = tools_end;
          convs[calling[k]].run.children.push_back(std::move(span));
        }
      }
      for (size_t k = 0; k < calling.size(); ++k) {
        Conversation& c = convs[calling[k]];
        OJson& messages = appended[calling[k]] = OJson::array();
        for (size_t j = 0; j < outcomes[k].size(); ++j) {
          const ToolCallResult& result = outcomes[k][j];
          OJson message = {{"role", "tool"},
                           {"content", truncate_tool_response(result.text, mt.max_tool_response_length,
                                                              mt.tool_response_truncate_side)}};
          if (j < c.call_ids.size() && c.call_ids[j]) message["tool_call_id"] = *c.call_ids[j];
          messages.push_back(std::move(message));
          c.tool_rewards.push_back(result.reward);
          c.tool_errors += result.error ? 1 : 0;
        }
        c.tool_calls += static_cast<int64_t>(outcomes[k].size());
      }
    }
    for (size_t i : answering) {
      Conversation& c = convs[i];
      const InteractionTurn reply = c.interaction->respond(c.messages);
      appended[i] = OJson::array({{{"role", "user"}, {"content", reply.content}}});
      c.turn_scores.push_back(reply.score);
      c.user_turns += 1;  // verl counts the interaction's turn before the length check
      terminate_after[i] = reply.should_terminate;
    }

    // 3. The appended messages as context tokens (mask 0), unless they pass the response budget.
    for (auto& [i, messages] : appended) {
      Conversation& c = convs[i];
      for (const auto& m : messages) c.messages.push_back(m);
      const std::vector<int64_t> context = c.tokens->context_tokens(c.ids, messages);
      if (static_cast<int64_t>(c.mask.size() + context.size()) >= R) {  // verl: ends without the context
        c.done = true;
        c.last_turn_complete = false;  // the messages hold a turn the ids do not: no sanity check
        continue;
      }
      c.ids.insert(c.ids.end(), context.begin(), context.end());
      c.mask.insert(c.mask.end(), context.size(), 0);
      if (options.sampling.calculate_log_probs) c.log_probs.insert(c.log_probs.end(), context.size(), 0.0f);
      if (messages[0]["role"] == "tool") c.user_turns += 1;  // verl 0.9.1 counts a tool round as a user turn
      c.last_turn_complete = false;
      c.done = terminate_after.count(i) > 0 && terminate_after[i];
    }
  }

  // Rewards from the tools (calc_reward) and the interaction, then release; the sanity check.
  AgentLoopOutput out;
  const int64_t P = options.prompt_length;
  const int64_t pad = options.sampling.pad_token_id;
  out.prompts = torch::full({static_cast<int64_t>(batch), P}, pad, torch::kInt64);
  out.responses = torch::full({static_cast<int64_t>(batch), R}, pad, torch::kInt64);
  auto prompt_attention = torch::zeros({static_cast<int64_t>(batch), P}, torch::kInt64);
  auto response_attention = torch::zeros({static_cast<int64_t>(batch), R}, torch::kInt64);
  out.response_mask = torch::zeros({static_cast<int64_t>(batch), R}, torch::kInt64);
  if (options.sampling.calculate_log_probs) out.rollout_log_probs = torch::zeros({static_cast<int64_t>(batch), R}, torch::kFloat32);
  std::string first_mismatch;
  for (size_t i = 0; i < batch; ++i) {
    Conversation& c = convs[i];
    Json reward_scores = Json::object();
    if (c.tool_session) {
      for (const auto& [name, reward] : c.tool_session->finish()) reward_scores[name] = reward;
    }
    if (c.interaction) {
      reward_scores["user_turn_rewards"] = c.turn_scores;
      c.interaction->finish();
    }
    // Only a conversation that ended on the policy's eos is whole; a cut one cannot match the template.
    if (c.last_turn_complete && !c.prompt_truncated && static_cast<int64_t>(c.mask.size()) <= R) {
      const auto check = c.tokens->check(mt.tokenization_sanity_check_mode, c.ids, c.messages);
      if (!check.ok) {
        if (out.sanity_check_failures++ == 0) first_mismatch = check.detail;
      }
    }
    const int64_t p = c.prompt_length;
    const int64_t r = std::min<int64_t>(R, static_cast<int64_t>(c.ids.size()) - p);
    out.prompts[i].narrow(0, P - p, p).copy_(torch::tensor(std::vector<int64_t>(c.ids.begin(), c.ids.begin() + p), torch::kInt64));
    prompt_attention[i].narrow(0, P - p, p).fill_(1);
    if (r > 0) {
      out.responses[i].narrow(0, 0, r).copy_(torch::tensor(std::vector<int64_t>(c.ids.begin() + p, c.ids.begin() + p + r), torch::kInt64));
      response_attention[i].narrow(0, 0, r).fill_(1);
      out.response_mask[i].narrow(0, 0, r).copy_(torch::tensor(std::vector<int64_t>(c.mask.begin(), c.mask.begin() + r), torch::kInt64));
      if (out.rollout_log_probs.defined()) {
        out.rollout_log_probs[i].narrow(0, 0, r).copy_(torch::tensor(std::vector<float>(c.log_probs.begin(), c.log_probs.begin() + r)));
      }
    }
    if (trace) {
      // verl's AgentLoopOutput (model_dump), response fields cut at response_length.
      c.run.end_ns = trace_clock_ns();
      OJson o = {{"prompt_ids", int_list(c.ids, 0, static_cast<size_t>(p))},
                 {"response_ids", int_list(c.ids, static_cast<size_t>(p), static_cast<size_t>(p + std::max<int64_t>(r, 0)))},
                 {"response_mask", int_list(c.mask, 0, static_cast<size_t>(std::max<int64_t>(r, 0)))},
                 {"response_logprobs", nullptr}, {"routed_experts", nullptr}, {"multi_modal_data", nullptr},
                 {"reward_score", nullptr}, {"num_turns", c.user_turns + c.assistant_turns + 1},
                 {"metrics", OJson::object()},
                 {"extra_fields", {{"turn_scores", c.turn_scores}, {"tool_rewards", c.tool_rewards}}}};
      if (options.sampling.calculate_log_probs) {
        o["response_logprobs"] = std::vector<float>(c.log_probs.begin(), c.log_probs.begin() + std::max<int64_t>(r, 0));
      }
      if (options.trace_token2text) {
        o["prompt_text"] = tokenizer.decode(to_int32(c.ids, 0, static_cast<size_t>(p)), false);
        o["response_text"] = tokenizer.decode(to_int32(c.ids, static_cast<size_t>(p), static_cast<size_t>(p + std::max<int64_t>(r, 0))), false);
      }
      c.run.outputs = std::move(o);
      out.traces.push_back(std::move(c.run));
    }
    out.num_turns.push_back(c.user_turns + c.assistant_turns + 1);
    out.tool_call_counts.push_back(c.tool_calls);
    out.tool_errors.push_back(c.tool_errors);
    out.turn_scores.push_back(c.turn_scores);
    out.tool_rewards.push_back(c.tool_rewards);
    out.reward_scores.push_back(reward_scores);
    out.messages.push_back(c.messages);
  }
  if (out.sanity_check_failures > 0) {
    VERL_LOG(Warn, kToolAgentLoopComponent)
        << out.sanity_check_failures << " of " << batch << " conversation(s) differ from the "
        << "chat template applied to the whole conversation (multi_turn.tokenization_sanity_"
        << "check_mode=" << mt.tokenization_sanity_check_mode << "); first: " << first_mismatch;
  }
  out.input_ids = torch::cat({out.prompts, out.responses}, 1);
  out.attention_mask = torch::cat({prompt_attention, response_attention}, 1);
  // verl's compute_position_id_with_mask: cumsum(mask) - 1, clipped at 0.
  out.position_ids = (out.attention_mask.cumsum(1) - 1).clamp_min(0);
  return out;
}

}  // namespace verl::agent
