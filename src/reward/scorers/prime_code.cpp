#include "verl/reward/scorers/prime_code.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "verl/common/error.h"
#include "verl/reward/scorers/python_code_runner.h"

namespace verl::reward {

namespace {

using Json = nlohmann::json;

constexpr const char* kComponent = "reward";
constexpr int kAllTestsTimeout = 5;    // verl's first check, of every test
constexpr int kOneTestTimeout = 10;    // its checks of one test each
constexpr size_t kTestsOneByOne = 10;  // "do not test all samples cuz some problems have enormous test cases"

const char* const kExpected =
    "verl's code test cases: a JSON object {\"inputs\": [str, ...], \"outputs\": [str, ...]} with as many outputs as "
    "inputs and an optional \"fn_name\"";

std::string preview(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

}  // namespace

const std::vector<std::string>& prime_code_data_sources() {
  static const std::vector<std::string> names = {"codecontests", "apps", "codeforces", "taco"};
  return names;
}

bool is_prime_code_data_source(const std::string& data_source) {
  const auto& names = prime_code_data_sources();
  return std::find(names.begin(), names.end(), data_source) != names.end();
}

std::string prime_code_extract_solution(const std::string& completion) {
  static const std::string kOpen = "```python", kClose = "```";
  const size_t open = completion.rfind(kOpen);
  const size_t start = open == std::string::npos ? 0 : open + kOpen.size();
  const size_t close = completion.find(kClose, start);
  return completion.substr(start, close == std::string::npos ? std::string::npos : close - start);
}

Json prime_code_test_cases(const Json& ground_truth) {
  Json tests = ground_truth;
  if (ground_truth.is_string()) {
    tests = Json::parse(ground_truth.get_ref<const std::string&>(), nullptr, false);
    VERL_CHECK(!tests.is_discarded(), kComponent, "reward_model.ground_truth is not JSON (", preview(ground_truth),
               "); expected ", kExpected);
  }
  VERL_CHECK(tests.is_object(), kComponent, "reward_model.ground_truth is ", preview(tests), "; expected ", kExpected);
  for (const char* key : {"inputs", "outputs"}) {
    VERL_CHECK(tests.contains(key) && tests[key].is_array(), kComponent, "reward_model.ground_truth has ",
               tests.contains(key) ? "a non-list '" + std::string(key) + "'" : "no '" + std::string(key) + "'",
               "; expected ", kExpected);
    for (size_t i = 0; i < tests[key].size(); ++i) {
      VERL_CHECK(tests[key][i].is_string(), kComponent, "reward_model.ground_truth's ", key, "[", i, "] is ",
                 preview(tests[key][i]), ", not a string: verl's prime_code fails every test of such a row; expected ",
                 kExpected);
    }
  }
  VERL_CHECK(tests["inputs"].size() == tests["outputs"].size(), kComponent, "reward_model.ground_truth has ",
             tests["inputs"].size(), " inputs and ", tests["outputs"].size(), " outputs; expected ", kExpected);
  VERL_CHECK(!tests.contains("fn_name") || tests["fn_name"].is_string() || tests["fn_name"].is_null(), kComponent,
             "reward_model.ground_truth's fn_name is ", preview(tests["fn_name"]), "; expected ", kExpected);
  return tests;
}

double prime_code_compute_score(const std::string& completion, const Json& ground_truth, bool continuous) {
  const Json tests = prime_code_test_cases(ground_truth);
  const std::string code = prime_code_extract_solution(completion);
  const size_t num_tests = tests["inputs"].size();
  // A first check whose process never answered goes on to the one-by-one checks even without tests (verl finds no
  // metadata and skips its success test), which then score 0.
  const CodeCheckResult all_tests = run_code_check({code, tests, kAllTestsTimeout});
  if (all_tests.replied && all_tests.all_passed()) return 1.0;
  if (!continuous) return 0.0;
  const size_t count = std::min(num_tests, kTestsOneByOne);
  size_t passed = 0;
  for (size_t i = 0; i < count; ++i) {
    // Only inputs and outputs, as verl builds these checks: a function's tests run as a program's.
    const Json one = {{"inputs", Json::array({tests["inputs"][i]})}, {"outputs", Json::array({tests["outputs"][i]})}};
    passed += run_code_check({code, one, kOneTestTimeout}).all_passed() ? 1 : 0;  // one verdict per check
  }
  return static_cast<double>(passed) / static_cast<double>(std::max<size_t>(count, 1));
}

}  // namespace verl::reward
