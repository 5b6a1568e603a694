// `verl score --input FILE.jsonl [--reward-function FILE [--reward-name NAME]]`: verl's rule rewards
// (default_compute_score), or the user's reward function, for one sample per line.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/reward/scorers/custom_reward_function.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/reward/scorers/sandbox_fusion.h"

namespace verl::cli {

const char* const kScoreUsage =
    "usage: verl score --input FILE.jsonl [--reward-function FILE [--reward-name NAME] [--reward-timeout S]]\n"
    "                  [--sandbox-fusion-url URL]\n"
    "\n"
    "Scores responses with verl's rule rewards (default_compute_score). Each line of FILE (\"-\" reads stdin)\n"
    "is a JSON object with the strings \"data_source\" and \"solution_str\", a \"ground_truth\" and an optional\n"
    "\"extra_info\" object; other keys are ignored, blank lines skipped. For every input line one JSON line is\n"
    "printed: {\"score\": ...} plus the scorer's extra fields (math_dapo adds \"acc\" and \"pred\").\n"
    "Nothing is printed when a line is bad: the error names the file and line.\n"
    "\n"
    "--reward-function FILE  score with your own function instead, as custom_reward_function.path does in\n"
    "                        training: a verl-style Python file with\n"
    "                        def compute_score(data_source, solution_str, ground_truth, extra_info=None)\n"
    "                        returning a number or a dict with \"score\", or a .so plugin exporting the C ABI\n"
    "                        of verl/reward/reward_plugin.h. ground_truth may then be any JSON value.\n"
    "--reward-name NAME      the function's name (default compute_score)\n"
    "--reward-timeout S      seconds one call may take (default 300, 0: no limit), as\n"
    "                        custom_reward_function.timeout: past it the line is an error. A call that\n"
    "                        returns NaN or +-inf, or calls sys.exit / os._exit, is an error too.\n"
    "--sandbox-fusion-url URL  score the code sources with that SandboxFusion service's run_code endpoint,\n"
    "                        as reward.sandbox_fusion.url does in training (verl's sandbox_fusion).\n"
    "\n"
    "data sources: openai/gsm8k, arithmetic (\"#### N\" answers); lighteval/MATH,\n"
    "DigitalLearningGmbH/MATH-lighteval, HuggingFaceH4/MATH-500 (last \\boxed{}); math_dapo, math,\n"
    "math_dapo_reasoning, aime* (\"Answer: ...\", score +-1); digit_completion (dense prefix reward,\n"
    "summed; ground_truth is the completion \"11,12\" or the prompt \"9,10:20,2\"); searchR1_nq, _triviaqa,\n"
    "_popqa, _hotpotqa, _2wikimultihopqa, _musique, _bamboogle (last <answer>...</answer>, exact match;\n"
    "ground_truth {\"target\": [answers]}); codecontests, apps, codeforces, taco (verl's prime_code: the\n"
    "Python after the last ```python run against ground_truth's tests {\"inputs\": [...], \"outputs\": [...]},\n"
    "an object or its JSON string, \"fn_name\" for a function; with --sandbox-fusion-url, verl's\n"
    "sandbox_fusion: each test a request to the service). ground_truth is a string for the others.\n"
    "\n"
    "example:\n"
    "  echo '{\"data_source\":\"openai/gsm8k\",\"solution_str\":\"... #### 18\",\"ground_truth\":\"18\"}' |\n"
    "    verl score --input -\n";

namespace {

nlohmann::ordered_json to_json(const reward::ExtraValue& value) {
  struct Visitor {
    nlohmann::ordered_json operator()(std::monostate) const { return nullptr; }
    nlohmann::ordered_json operator()(bool v) const { return v; }
    nlohmann::ordered_json operator()(int64_t v) const { return v; }
    nlohmann::ordered_json operator()(double v) const { return v; }
    nlohmann::ordered_json operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{}, value);
}

const std::string& required_string(const nlohmann::json& row, const char* key, const std::string& where) {
  const auto it = row.find(key);
  VERL_CHECK(it != row.end(), "score", where, ": missing \"", key,
             "\"; each line needs the strings \"data_source\" and \"solution_str\" and a \"ground_truth\"");
  VERL_CHECK(it->is_string(), "score", where, ": \"", key, "\" must be a string, got ", it->type_name(), " ",
             it->dump());
  return it->get_ref<const std::string&>();
}

// One output line for one input line; errors carry `where` ("FILE:LINE"). `custom` is the user's function
// (empty: default_compute_score).
std::string score_line(const std::string& line, const std::string& where, const reward::ComputeScoreFn& custom) {
  check_json_limits(line, where);
  nlohmann::json row;
  try {
    row = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number beyond double
    VERL_FAIL("score", where, ": not valid JSON (", e.what(), ")");
  }
  VERL_CHECK(row.is_object(), "score", where, ": expected a JSON object, got ", row.type_name());
  const std::string& data_source = required_string(row, "data_source", where);
  const std::string& solution_str = required_string(row, "solution_str", where);
  const auto truth = row.find("ground_truth");
  VERL_CHECK(truth != row.end(), "score", where, ": missing \"ground_truth\"");
  const nlohmann::json& ground_truth = *truth;
  nlohmann::json extra_info;
  if (const auto it = row.find("extra_info"); it != row.end()) {
    VERL_CHECK(it->is_object() || it->is_null(), "score", where, ": \"extra_info\" must be an object or null, got ",
               it->type_name());
    extra_info = *it;
  }
  reward::ScoreResult result;
  try {
    if (custom) {
      result = custom(data_source, solution_str, ground_truth, extra_info.is_null() ? nlohmann::json::object()
                                                                                      : extra_info);
    } else {
      result = reward::default_compute_score_json(data_source, solution_str, ground_truth, extra_info);
    }
  } catch (const reward::RewardFunctionError& e) {
    VERL_FAIL("score", where, ": the reward function raised: ", e.message());
  } catch (const Error& e) {
    VERL_FAIL("score", where, ": ", e.message());
  }
  nlohmann::ordered_json out;
  out["score"] = result.score;
  for (const auto& [key, value] : result.extra) out[key] = to_json(value);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string score_stream(std::istream& in, const std::string& name, const reward::ComputeScoreFn& custom) {
  std::string output;
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    output += score_line(line, name + ":" + std::to_string(line_number), custom);
    output += '\n';
  }
  VERL_CHECK(!in.bad(), "score", "reading ", name, " failed at line ", line_number + 1);
  return output;
}

}  // namespace

int run_score_command(const Args& args) {
  std::string input;
  std::string reward_function;
  std::string reward_name = "compute_score";
  bool name_given = false;
  std::string timeout_text;
  std::string sandbox_url;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--input" && i + 1 < args.size()) {
      input = args[++i];
    } else if (args[i].rfind("--input=", 0) == 0) {
      input = args[i].substr(8);
    } else if (args[i] == "--reward-function" && i + 1 < args.size()) {
      reward_function = args[++i];
    } else if (args[i].rfind("--reward-function=", 0) == 0) {
      reward_function = args[i].substr(18);
    } else if (args[i] == "--reward-name" && i + 1 < args.size()) {
      reward_name = args[++i];
      name_given = true;
    } else if (args[i].rfind("--reward-name=", 0) == 0) {
      reward_name = args[i].substr(14);
      name_given = true;
    } else if (args[i] == "--reward-timeout" && i + 1 < args.size()) {
      timeout_text = args[++i];
    } else if (args[i].rfind("--reward-timeout=", 0) == 0) {
      timeout_text = args[i].substr(17);
    } else if (args[i] == "--sandbox-fusion-url" && i + 1 < args.size()) {
      sandbox_url = args[++i];
    } else if (args[i].rfind("--sandbox-fusion-url=", 0) == 0) {
      sandbox_url = args[i].substr(21);
    } else {
      std::cerr << "error: unexpected argument '" << args[i] << "'\n" << kScoreUsage;
      return 2;
    }
  }
  if (input.empty()) {
    std::cerr << "error: verl score needs --input FILE.jsonl\n" << kScoreUsage;
    return 2;
  }
  if ((name_given || !timeout_text.empty()) && reward_function.empty()) {
    std::cerr << "error: " << (name_given ? "--reward-name" : "--reward-timeout") << " needs --reward-function FILE\n"
              << kScoreUsage;
    return 2;
  }
  if (!sandbox_url.empty() && !reward_function.empty()) {
    std::cerr << "error: --sandbox-fusion-url scores with verl's rule rewards; it does not go with --reward-function\n"
              << kScoreUsage;
    return 2;
  }
  if (!sandbox_url.empty() && sandbox_url.rfind("http://", 0) != 0 && sandbox_url.rfind("https://", 0) != 0) {
    std::cerr << "error: --sandbox-fusion-url expects the service's run_code URL (http://... or https://...), got '"
              << sandbox_url << "'\n";
    return 2;
  }
  reward::UserCodeLimits limits;
  limits.timeout_key = "--reward-timeout";
  if (!timeout_text.empty()) {
    char* end = nullptr;
    limits.timeout_s = std::strtod(timeout_text.c_str(), &end);
    if (end == timeout_text.c_str() || *end != '\0' || !std::isfinite(limits.timeout_s) || limits.timeout_s < 0) {
      std::cerr << "error: --reward-timeout expects a number of seconds >= 0 (0: no limit), got '" << timeout_text
                << "'\n";
      return 2;
    }
  }
  reward::ComputeScoreFn custom;
  if (!reward_function.empty()) {
    custom = reward::load_custom_reward_function(reward_function, reward_name, nlohmann::json::object(), limits);
  } else if (!sandbox_url.empty()) {
    custom = reward::default_score_function(
        std::make_shared<const reward::SandboxFusionClient>(reward::SandboxFusionOptions{sandbox_url}));
  }
  std::string output;
  if (input == "-") {
    output = score_stream(std::cin, "<stdin>", custom);
  } else {
    std::ifstream file(input, std::ios::binary);
    VERL_CHECK(file.is_open(), "score", "cannot open --input file '", input, "'");
    output = score_stream(file, input, custom);
  }
  std::cout << output;
  return 0;
}

}  // namespace verl::cli
