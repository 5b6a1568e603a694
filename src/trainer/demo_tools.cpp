// `verl demo --tools`: tokenizer, built-in calculator tool files, and the two-turn greedy evaluation.
#include "verl/trainer/demo_tools.h"

#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/io/parquet/reader.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/tokenizer/pre_tokenizers.h"
#include "verl/tokenizer/unicode.h"
#include "verl/trainer/demo.h"
#include "verl/trainer/greedy_eval.h"

extern const char verl_embedded_calculator_tool_py[];           // examples/multi_turn/calculator_tool.py
extern const char verl_embedded_calculator_tool_config_yaml[];  // examples/multi_turn/calculator_tool_config.yaml

namespace verl::trainer {

namespace {

const char* const kToolTags[] = {"<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"};
const char* const kSpecialTokens[] = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};

// The chunks the tokenizer's ByteLevel pre-tokenizer makes of `text` (added and special tokens cut out first, as
// the tokenizer does), as raw text.
std::vector<std::string> pre_tokenized_chunks(const std::string& text) {
  std::vector<std::string> segments = {text};
  auto cut = [&](const std::string& token) {
    std::vector<std::string> out;
    for (const auto& segment : segments) {
      size_t start = 0, at;
      while ((at = segment.find(token, start)) != std::string::npos) {
        out.push_back(segment.substr(start, at - start));
        start = at + token.size();
      }
      out.push_back(segment.substr(start));
    }
    segments = std::move(out);
  };
  for (const char* tag : kToolTags) cut(tag);
  for (const char* special : kSpecialTokens) cut(special);
  auto pre = tokenizer::make_pre_tokenizer(
      nlohmann::json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}},
      "demo tokenizer");
  std::vector<std::string> chunks;
  for (const auto& segment : segments) {
    if (segment.empty()) continue;
    std::vector<tokenizer::Piece> pieces = {tokenizer::Piece{segment, true}};
    pre->pre_tokenize(pieces);
    for (const auto& piece : pieces) {
      std::string raw;
      size_t pos = 0;
      while (pos < piece.text.size()) {
        const int byte = tokenizer::unicode_to_byte(tokenizer::next_code_point(piece.text, pos));
        VERL_ASSERT(byte >= 0, "demo", "pre-tokenized text outside the byte-level alphabet");
        raw += static_cast<char>(byte);
      }
      chunks.push_back(std::move(raw));
    }
  }
  return chunks;
}

// Integer expression parser: expr = term (('+'|'-') term)*, term = factor ('*' factor)*,
// factor = ('-'|'+') factor | digits | '(' expr ')'.
class ExpressionParser {
 public:
  explicit ExpressionParser(const std::string& text) : text_(text) {}
  std::optional<int64_t> parse() {
    std::optional<int64_t> value = expr(0);
    skip_spaces();
    if (!value || pos_ != text_.size()) return std::nullopt;
    return value;
  }

 private:
  static constexpr int64_t kLimit = 1000000000000000000LL;  // calculator_tool.py's MAX_ABS_VALUE
  static constexpr int kMaxDepth = 100;

  static std::optional<int64_t> checked(__int128 v) {
    if (v > kLimit || v < -kLimit) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<int64_t> expr(int depth) {
    std::optional<int64_t> value = term(depth);
    while (value) {
      if (take('+')) {
        auto rhs = term(depth);
        value = rhs ? checked(static_cast<__int128>(*value) + *rhs) : std::nullopt;
      } else if (take('-')) {
        auto rhs = term(depth);
        value = rhs ? checked(static_cast<__int128>(*value) - *rhs) : std::nullopt;
      } else {
        break;
      }
    }
    return value;
  }
  std::optional<int64_t> term(int depth) {
    std::optional<int64_t> value = factor(depth);
    while (value && take('*')) {
      auto rhs = factor(depth);
      value = rhs ? checked(static_cast<__int128>(*value) * *rhs) : std::nullopt;
    }
    return value;
  }
  std::optional<int64_t> factor(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    if (take('-')) {
      auto v = factor(depth + 1);
      return v ? std::optional<int64_t>(-*v) : std::nullopt;
    }
    if (take('+')) return factor(depth + 1);
    if (take('(')) {
      auto v = expr(depth + 1);
      return v && take(')') ? v : std::nullopt;
    }
    skip_spaces();
    __int128 v = 0;
    size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > kLimit) return std::nullopt;
    }
    if (pos_ == start) return std::nullopt;
    return static_cast<int64_t>(v);
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// The calculator's answer to a first turn's first tool call: its value, or an error text.
std::string answer_tool_call(const std::string& turn) {
  const size_t open = turn.find("<tool_call>");
  const size_t close = turn.find("</tool_call>", open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return "Error: no complete tool call";
  const std::string body = turn.substr(open + 11, close - open - 11);
  nlohmann::json call = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!call.is_object() || !call.contains("arguments") || !call["arguments"].is_object() ||
      !call["arguments"].contains("expression") || !call["arguments"]["expression"].is_string()) {
    return "Error: expected {\"name\": \"calculator\", \"arguments\": {\"expression\": ...}}";
  }
  std::optional<int64_t> value = evaluate_calculator_expression(call["arguments"]["expression"].get<std::string>());
  return value ? std::to_string(*value) : "Error: cannot evaluate the expression";
}

struct ToolConversation {
  bool called = false;
  bool correct = false;
  std::string first_turn, tool_text, second_turn;
};

// Turn 1 greedy from prompt + `forced` (text the first turn is made to start with); tool turns answered; turn 2.
std::vector<ToolConversation> play(model::CausalLM& model, const tokenizer::Tokenizer& tok,
                                   const std::vector<std::string>& prompts, const std::vector<std::string>& truths,
                                   const std::string& forced, int64_t max_turn_tokens) {
  std::vector<std::vector<int32_t>> first;
  for (const auto& p : prompts) first.push_back(tok.encode(p + forced, false));
  GreedyEvalResult turn1 = greedy_accuracy(model, tok, first, truths, "arithmetic", max_turn_tokens);
  std::vector<ToolConversation> out(prompts.size());
  std::vector<std::vector<int32_t>> second;
  std::vector<std::string> second_truths;
  std::vector<size_t> second_of;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ToolConversation& c = out[i];
    c.first_turn = forced + turn1.responses[i];
    c.called = c.first_turn.find("<tool_call>") != std::string::npos;
    if (!c.called) {
      c.correct = reward::default_compute_score("arithmetic", c.first_turn, truths[i]).score == 1.0;
      continue;
    }
    c.tool_text = answer_tool_call(c.first_turn);
    const std::string context = prompts[i] + c.first_turn + "<|im_end|>\n<|im_start|>user\n<tool_response>\n" +
                                c.tool_text + "\n</tool_response><|im_end|>\n<|im_start|>assistant\n";
    second.push_back(tok.encode(context, false));
    second_truths.push_back(truths[i]);
    second_of.push_back(i);
  }
  if (!second.empty()) {
    GreedyEvalResult turn2 = greedy_accuracy(model, tok, second, second_truths, "arithmetic", max_turn_tokens);
    for (size_t k = 0; k < second.size(); ++k) {
      out[second_of[k]].second_turn = turn2.responses[k];
      out[second_of[k]].correct =
          reward::default_compute_score("arithmetic", turn2.responses[k], second_truths[k]).score == 1.0;
    }
  }
  return out;
}

}  // namespace

tokenizer::ByteLevelBPESpec demo_tools_tokenizer_spec() {
  tokenizer::ByteLevelBPESpec spec;
  spec.alphabet = tokenizer::printable_ascii_alphabet();
  spec.words = demo_tokenizer_words();
  std::set<std::string> seen(spec.words.begin(), spec.words.end());
  data::ArithmeticToolProblem sample;
  sample.a = 12;
  sample.b = 34;
  sample.c = 5;
  const nlohmann::ordered_json tools = nlohmann::ordered_json::array({data::calculator_tool_schema()});
  const std::string text = data::arithmetic_tool_system_prompt() + "\n\n" + tokenizer::chatml_tools_listing(tools) +
                           "\n" + data::arithmetic_tool_transcript(sample);
  for (const std::string& chunk : pre_tokenized_chunks(text)) {
    bool numeric = false;
    for (char c : chunk) numeric = numeric || std::isdigit(static_cast<unsigned char>(c));
    if (chunk.size() < 2 || numeric || !seen.insert(chunk).second) continue;  // numbers: below
    spec.words.push_back(chunk);
  }
  // Every number below 1000 is one token: the task's numbers are copied (question -> tool call, tool response ->
  // answer) as the same single tokens, which the tiny model (tied embeddings) learns quickly. No " 413" word: the
  // answer after "####" is " " + "413", the tool response's token.
  for (int n = 0; n < 1000; ++n) {
    if (seen.insert(std::to_string(n)).second) spec.words.push_back(std::to_string(n));
  }
  spec.added_tokens.assign(std::begin(kToolTags), std::end(kToolTags));
  spec.special_tokens.assign(std::begin(kSpecialTokens), std::end(kSpecialTokens));  // bos / eos / pad at the top
  spec.eos_token = "<|im_end|>";
  spec.pad_token = "<|endoftext|>";
  spec.chat_template = tokenizer::chatml_tools_template();
  return spec;
}

// examples/multi_turn/calculator_tool.py and its tool config, embedded at build time (CMakeLists.txt).
const std::string& demo_calculator_tool_py() {
  static const std::string text = verl_embedded_calculator_tool_py;
  return text;
}

const std::string& demo_calculator_tool_yaml() {
  static const std::string text = verl_embedded_calculator_tool_config_yaml;
  return text;
}

std::optional<int64_t> evaluate_calculator_expression(const std::string& expression) {
  if (expression.size() > 200) return std::nullopt;  // calculator_tool.py's MAX_EXPRESSION_LENGTH
  return ExpressionParser(expression).parse();
}

ToolEvalResult tool_greedy_eval(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                const std::vector<std::string>& prompt_texts,
                                const std::vector<std::string>& ground_truths, int64_t max_turn_tokens) {
  VERL_CHECK(prompt_texts.size() == ground_truths.size() && !prompt_texts.empty(), "demo",
             "tool_greedy_eval: ", prompt_texts.size(), " prompts and ", ground_truths.size(), " ground truths");
  ToolEvalResult result;
  result.total = static_cast<int64_t>(prompt_texts.size());
  const double n = static_cast<double>(result.total);
  for (const ToolConversation& c : play(model, tokenizer, prompt_texts, ground_truths, "", max_turn_tokens)) {
    result.accuracy += c.correct / n;
    result.tool_call_rate += c.called / n;
    result.first_turns.push_back(c.first_turn);
  }
  const std::vector<ToolConversation> forced =
      play(model, tokenizer, prompt_texts, ground_truths, "<tool_call>", max_turn_tokens);
  for (const ToolConversation& c : forced) result.tool_path_accuracy += c.correct / n;
  result.tool_path_sample = forced[0].first_turn + " -> " + forced[0].tool_text + " -> " + forced[0].second_turn;
  return result;
}

void load_tool_eval_set(const std::string& path, const tokenizer::Tokenizer& tokenizer,
                        std::vector<std::string>& prompt_texts, std::vector<std::string>& ground_truths) {
  const nlohmann::ordered_json tools = nlohmann::ordered_json::array({data::calculator_tool_schema()});
  for (const auto& row : io::parquet::read_parquet(path, {"prompt", "reward_model"})) {
    tokenizer::ChatTemplateInputs inputs;
    for (const auto& m : row.find("prompt")->as_list()) {
      inputs.messages.push_back({{"role", m.find("role")->as_string()}, {"content", m.find("content")->as_string()}});
    }
    // SFT rows carry the listing in their system message already; RL rows get it from `tools`.
    const bool listed = inputs.messages[0]["content"].get<std::string>().find("<tools>") != std::string::npos;
    if (!listed) inputs.tools = tools;
    inputs.add_generation_prompt = true;
    prompt_texts.push_back(tokenizer::apply_chat_template(tokenizer, inputs));
    ground_truths.push_back(row.find("reward_model")->find("ground_truth")->as_string());
  }
}

}  // namespace verl::trainer
