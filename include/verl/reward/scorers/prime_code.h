// verl's prime_code reward (verl/utils/reward_score/prime_code), the codecontests / apps / codeforces / taco data
// sources' scorer when no sandbox fusion service is set: the response's Python code run against the row's tests.
//
//   code     = the text after the response's last "```python" (all of it when there is none), up to the next "```"
//   tests    = reward_model.ground_truth: {"inputs": [str...], "outputs": [str...]} (a JSON string or an object),
//              with "fn_name" for a function to call instead of a program reading stdin
//   score    = 1.0 when one check of all the tests passes every one (5 s per test, 6 s in all; no tests pass,
//              unless the check's process was killed or died);
//              else, with continuous (verl's default_compute_score sets it), the fraction of the first 10 tests
//              that pass one by one (10 s each, 11 s in all), each as a stdin program: verl leaves fn_name out
//              of these checks, so a function earns no partial credit; else 0.0
//
// The tests run in python_code_runner.h's child processes. Test cases verl cannot run (not a JSON object,
// missing or unequal inputs / outputs, entries that are not strings) are an error naming the row's data source,
// where verl prints a traceback and scores 0.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace verl::reward {

// The data sources verl scores with prime_code (or sandbox fusion, when sandbox_fusion.url is set).
const std::vector<std::string>& prime_code_data_sources();
bool is_prime_code_data_source(const std::string& data_source);

// The code verl runs: after the last ```python fence, up to the next ```.
std::string prime_code_extract_solution(const std::string& completion);

// reward_model.ground_truth as test cases (an object), or an error saying what verl's code data expect.
nlohmann::json prime_code_test_cases(const nlohmann::json& ground_truth);

double prime_code_compute_score(const std::string& completion, const nlohmann::json& ground_truth,
                                bool continuous = true);

}  // namespace verl::reward
