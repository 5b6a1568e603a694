// What verl's tool parsers (agent/tool_parser.h) share: Python's json.loads / str.strip, the lazy
// `OPEN(.*?)CLOSE` matches their regexes make (with DOTALL; OPEN and CLOSE literal), and Python's int(), float()
// and ast.literal_eval through the embedded interpreter, so every value reads as in verl.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verl/agent/tool_parser.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::agent::parsers {

using OJson = nlohmann::ordered_json;

// json.loads(text): one JSON value with optional whitespace around it, NaN / Infinity / -Infinity included (as
// Python reads them); nullopt where Python raises (a leading UTF-8 BOM too). Not as Python: integers past 64 bits
// become doubles (Python keeps them exact, and refuses past 4300 digits) and a lone surrogate escape is refused.
std::optional<OJson> python_json_loads(const std::string& text);

// text.replace(pad_token, "") where the tokenizer has a pad token (gpt-oss, deepseek_v4, gemma4 remove it first).
std::string without_pad(const std::string& text, const std::string& pad_token);
bool starts_with(const std::string& text, const char* prefix);

// str.strip() (Python's whitespace: Unicode White_Space and \x1c-\x1f).
std::string py_strip(const std::string& text);
// str.lower().
std::string py_lower(const std::string& text);
// `\w` of the `regex` package (reward::py::is_regex_word).
using reward::py::is_regex_word;
// The end of the run of `\s` (the `regex` package's: Unicode White_Space, without \x1c-\x1f) starting at `pos`.
size_t skip_regex_space(const std::string& text, size_t pos);

// glm / seed / minimax's value: json.loads(raw.strip()), else the stripped text.
OJson stripped_json_or_text(const std::string& raw);

// One match of `OPEN(.*?)CLOSE`: [begin, end) the whole match, [inner_begin, inner_end) the group.
struct Delimited {
  size_t begin, end, inner_begin, inner_end;
  std::string inner(const std::string& text) const { return text.substr(inner_begin, inner_end - inner_begin); }
};
// re.finditer(OPEN(.*?)CLOSE, text, DOTALL): non-overlapping, left to right; a match needs a CLOSE after its OPEN
// (the shortest such), and the scan resumes after it.
std::vector<Delimited> find_delimited(const std::string& text, const std::string& open, const std::string& close);
// re.sub(OPEN(.*?)CLOSE, "", text, DOTALL).
std::string remove_delimited(const std::string& text, const std::string& open, const std::string& close);

// The skeleton glm, seed and minimax share: no calls unless the text holds both OPEN and CLOSE; each
// OPEN(.*?)CLOSE block's calls added by `parse_block`; the content is the text before the first OPEN.
ParsedTurn parse_tagged_blocks(const std::string& text, const std::string& open, const std::string& close,
                               const std::function<void(const std::string& block, ParsedTurn& turn)>& parse_block);

// Python conversions verl applies to a parameter's text, each the JSON verl would json.dumps, or nullopt where
// Python raises (verl keeps the text then). Big integers past 64 bits become doubles (nlohmann's numbers).
std::optional<OJson> python_int(const std::string& text);             // int(text)
std::optional<OJson> python_float(const std::string& text);           // float(text)
std::optional<OJson> python_integral_float(const std::string& text);  // qwen3_coder: float, int when integral
struct LiteralValue {
  bool evaluated = false;     // ast.literal_eval(text) did not raise
  std::optional<OJson> json;  // its json.dumps; nullopt when not JSON-serializable (a set, bytes, complex)
};
LiteralValue python_literal_eval(const std::string& text);

// json.dumps(value, ensure_ascii=False): the arguments string verl's parsers hand on (", " and ": " separators,
// Python's float repr, NaN / Infinity), written by the embedded interpreter.
std::string python_json_dumps(const OJson& value);

// The "function" object of the tool named `name` in `tools` (an OpenAI tool list or null; entries of another
// "type" are passed over), or nullptr when there is none.
const OJson* find_function_schema(const OJson& tools, const std::string& name);

// The parsers (one file each).
std::unique_ptr<ToolParser> make_hermes();
std::unique_ptr<ToolParser> make_gpt_oss(std::string pad_token);
std::unique_ptr<ToolParser> make_qwen3_coder();
std::unique_ptr<ToolParser> make_glm();
std::unique_ptr<ToolParser> make_seed();
std::unique_ptr<ToolParser> make_minimax();
std::unique_ptr<ToolParser> make_kimi();
std::unique_ptr<ToolParser> make_deepseek_v4(std::string pad_token);
std::unique_ptr<ToolParser> make_gemma4(std::string pad_token);

}  // namespace verl::agent::parsers
