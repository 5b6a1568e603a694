#include "verl/reward/scorers/custom_reward_function.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <system_error>
#include <thread>

#include "verl/common/strings.h"
#include "verl/reward/scorers/default_compute_score.h"

namespace verl::reward {

ComputeScoreFn default_score_function(std::shared_ptr<const SandboxFusionClient> sandbox) {
  return [sandbox](const std::string& data_source, const std::string& solution_str, const nlohmann::json& ground_truth,
                   const nlohmann::json& extra_info) {
    return default_compute_score_json(data_source, solution_str, ground_truth, extra_info, sandbox.get());
  };
}

ComputeScoreBatchFn default_score_batch(int64_t num_workers, std::shared_ptr<const SandboxFusionClient> sandbox) {
  VERL_CHECK(num_workers >= 1, "reward", "reward.num_workers must be >= 1, got ", num_workers);
  return [num_workers, sandbox](const std::vector<ScoreCall>& calls, const config::RewardRateLimits* /*rate_limits*/) {
    std::vector<ScoreOutcome> outcomes(calls.size());
    std::vector<std::exception_ptr> errors(calls.size());
    const auto score = [&](size_t i) {
      try {
        const ScoreCall& c = calls[i];
        outcomes[i].result =
            default_compute_score_json(c.data_source, c.solution_str, c.ground_truth, c.extra_info, sandbox.get());
      } catch (...) {
        errors[i] = std::current_exception();
      }
    };
    std::vector<size_t> code_calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (rule_scorer_runs_code(calls[i].data_source)) {
        code_calls.push_back(i);
      } else {
        score(i);
      }
    }
    // Each thread takes the next call; a call's checks run on a code runner of its own (python_code_runner.h).
    std::atomic<size_t> next{0};
    const auto work = [&] {
      for (size_t k = next++; k < code_calls.size(); k = next++) score(code_calls[k]);
    };
    std::vector<std::thread> threads;
    const size_t num_threads = std::min(code_calls.size(), static_cast<size_t>(num_workers));
    for (size_t t = 1; t < num_threads; ++t) threads.emplace_back(work);
    if (num_threads > 0) work();
    for (auto& thread : threads) thread.join();
    for (size_t i = 0; i < calls.size(); ++i) {
      if (!errors[i]) continue;
      try {
        std::rethrow_exception(errors[i]);
      } catch (const Error& e) {
        throw Error("reward", str_cat("row ", i, " (data_source '", calls[i].data_source, "'): ", e.message()));
      }
    }
    return outcomes;
  };
}

namespace {

// A non-finite score is the function's error (it would turn a whole group's advantages into NaN).
std::optional<std::string> non_finite_error(const ScoreResult& result, const std::string& who) {
  if (std::isfinite(result.score)) return std::nullopt;
  return who + " returned a non-finite score " + python_float_str(result.score) + " (a score must be a finite number)";
}

}  // namespace

RewardFunction load_reward_function(const std::string& path, const std::string& name,
                                    const nlohmann::json& reward_kwargs, const UserCodeLimits& limits) {
  VERL_CHECK(!path.empty(), "reward", "custom_reward_function.path is empty");
  VERL_CHECK(!name.empty(), "reward", "custom_reward_function.name is empty (verl's default is compute_score)");
  VERL_CHECK(reward_kwargs.is_object() || reward_kwargs.is_null(), "reward",
             "custom_reward_function.reward_kwargs must be a map, got ", reward_kwargs.type_name());
  std::error_code ec;
  VERL_CHECK(std::filesystem::is_regular_file(path, ec), "reward", "reward function file '", path,
             "' not found (custom_reward_function.path, function '", name, "')");
  const nlohmann::json kwargs = reward_kwargs.is_null() ? nlohmann::json::object() : reward_kwargs;
  RewardFunction loaded = ends_with(path, ".so")
                              ? RewardFunction{load_plugin_reward_function(path, name, kwargs, limits), nullptr}
                              : load_python_reward_function(path, name, kwargs, limits);
  const std::string who = "reward function '" + name + "' from '" + path + "'";
  RewardFunction out;
  out.score = [score = std::move(loaded.score), who](const std::string& data_source, const std::string& solution_str,
                                                     const nlohmann::json& ground_truth,
                                                     const nlohmann::json& extra_info) {
    ScoreResult result = score(data_source, solution_str, ground_truth, extra_info);
    if (auto error = non_finite_error(result, who)) throw RewardFunctionError("reward", *error);
    return result;
  };
  if (loaded.score_batch) {
    out.score_batch = [batch = std::move(loaded.score_batch), who](const std::vector<ScoreCall>& calls,
                                                                   const config::RewardRateLimits* rate_limits) {
      std::vector<ScoreOutcome> outcomes = batch(calls, rate_limits);
      for (ScoreOutcome& outcome : outcomes) {
        if (!outcome.result.has_value()) continue;
        if (auto error = non_finite_error(*outcome.result, who)) {
          outcome.result.reset();
          outcome.error = outcome.raised = *error;
        }
      }
      return outcomes;
    };
  }
  return out;
}

ComputeScoreFn load_custom_reward_function(const std::string& path, const std::string& name,
                                           const nlohmann::json& reward_kwargs, const UserCodeLimits& limits) {
  return load_reward_function(path, name, reward_kwargs, limits).score;
}

std::string python_float_str(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's repr layout: fixed notation for 1e-4 <= |x| < 1e16.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string text(buffer, result.ptr);
  std::string sign;
  if (text[0] == '-') {
    sign = "-";
    text.erase(0, 1);
  }
  const size_t e = text.find('e');
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.') digits += text[i];
  }
  const int decpt = exponent + 1;  // value = 0.digits * 10^decpt
  if (decpt <= -4 || decpt > 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1) mantissa += "." + digits.substr(1);
    const int abs_exp = std::abs(exponent);
    return sign + mantissa + (exponent < 0 ? "e-" : "e+") + (abs_exp < 10 ? "0" : "") + std::to_string(abs_exp);
  }
  if (decpt <= 0) return sign + "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  if (static_cast<size_t>(decpt) >= digits.size()) {
    return sign + digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
}

std::string python_str(const ExtraValue& value) {
  struct Visitor {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool v) const { return v ? "True" : "False"; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return python_float_str(v); }
    std::string operator()(const std::string& v) const { return v; }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace verl::reward
