#include "verl/reward/scorers/digit_completion.h"

#include <algorithm>
#include <cstdlib>

#include "verl/common/error.h"
#include "verl/reward/scorers/py_str.h"

namespace verl::reward {

namespace {

long long parse_prompt_int(const std::string& text, const std::string& prompt) {
  const size_t digits_begin = (!text.empty() && text[0] == '-') ? 1 : 0;
  bool ok = text.size() > digits_begin && text.size() - digits_begin <= 18;
  for (size_t i = digits_begin; ok && i < text.size(); ++i) ok = text[i] >= '0' && text[i] <= '9';
  VERL_CHECK(ok, "reward", "digit_completion prompt '", prompt, "': '", text,
             "' is not an integer; expected \"{a},{b}:{max_number},{count}\" such as \"9,10:20,2\"");
  return std::strtoll(text.c_str(), nullptr, 10);
}

// Python's % for a positive divisor: the result is in [0, divisor).
long long python_mod(long long value, long long divisor) {
  const long long r = value % divisor;
  return r < 0 ? r + divisor : r;
}

// Length of the ground truth's prefix that `response` reproduces, in characters.
size_t matched_prefix(const std::u32string& response, const std::u32string& ground_truth) {
  size_t matched = 0;
  while (matched < response.size() && matched < ground_truth.size() && response[matched] == ground_truth[matched]) {
    ++matched;
  }
  return matched;
}

}  // namespace

std::string digit_completion_ground_truth(const std::string& prompt) {
  const std::vector<std::string> halves = py::split(prompt, ":");
  VERL_CHECK(halves.size() == 2, "reward", "digit_completion prompt '", prompt,
             "' must have one ':'; expected \"{a},{b}:{max_number},{count}\" such as \"9,10:20,2\"");
  const std::vector<std::string> numbers = py::split(halves[0], ",");
  const std::vector<std::string> info = py::split(halves[1], ",");
  VERL_CHECK(numbers.size() == 2 && info.size() == 2, "reward", "digit_completion prompt '", prompt,
             "' must look like \"{a},{b}:{max_number},{count}\" such as \"9,10:20,2\"");
  const long long first = parse_prompt_int(numbers[0], prompt);
  const long long second = parse_prompt_int(numbers[1], prompt);
  const long long max_number = parse_prompt_int(info[0], prompt);
  const long long count = parse_prompt_int(info[1], prompt);
  VERL_CHECK(max_number > 0, "reward", "digit_completion prompt '", prompt, "': max_number must be > 0");
  VERL_CHECK(count >= 0 && count <= 100000, "reward", "digit_completion prompt '", prompt,
             "': the count of numbers to complete must be in [0, 100000]");
  const long long diff = python_mod(second - first, max_number);
  std::string response;
  long long last = second;
  for (long long i = 0; i < count; ++i) {
    last = python_mod(last + diff, max_number);
    if (i) response += ",";
    response += std::to_string(last);
  }
  return response;
}

std::string digit_completion_target(const std::string& ground_truth) {
  return py::contains(ground_truth, ":") ? digit_completion_ground_truth(ground_truth) : ground_truth;
}

std::vector<float> digit_completion_dense_reward(const std::string& response, const std::string& ground_truth,
                                                 float sequence_reward) {
  const std::u32string response_chars = py::decode(py::sanitize_utf8(response));
  const std::u32string truth_chars = py::decode(py::sanitize_utf8(ground_truth));
  // Python computes the share in float64 and stores it into a float32 array.
  const float per_token = static_cast<float>(static_cast<double>(sequence_reward) /
                                             static_cast<double>(truth_chars.size() + 1));
  std::vector<float> reward(response_chars.size(), 0.0f);
  const size_t matched = matched_prefix(response_chars, truth_chars);
  std::fill(reward.begin(), reward.begin() + static_cast<std::ptrdiff_t>(matched), per_token);
  return reward;
}

std::vector<float> digit_completion_token_rewards(const std::string& response, const std::string& ground_truth,
                                                  size_t num_tokens) {
  std::vector<float> reward = digit_completion_dense_reward(response, ground_truth);
  float last;
  if (!reward.empty()) {
    last = reward.back();
  } else {
    last = ground_truth.empty() ? 1.0f : 0.0f;
  }
  reward.resize(std::max(reward.size(), num_tokens), last);
  reward.resize(num_tokens);
  return reward;
}

double digit_completion_compute_score(const std::string& solution_str, const std::string& ground_truth) {
  const std::u32string response = py::decode(py::sanitize_utf8(solution_str));
  const std::u32string truth = py::decode(py::sanitize_utf8(digit_completion_target(ground_truth)));
  if (response.empty()) return truth.empty() ? 1.0 : 0.0;
  // Shares of 1/(len(gt)+1): one per matched character, plus the EOS token when it inherits a non-zero
  // last value (every response character matched). Summed as a count so a perfect answer is exactly 1.0.
  const size_t matched = matched_prefix(response, truth);
  const size_t shares = matched + (matched == response.size() ? 1 : 0);
  return static_cast<double>(shares) / static_cast<double>(truth.size() + 1);
}

}  // namespace verl::reward
