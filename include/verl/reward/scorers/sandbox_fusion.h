// verl's sandbox_fusion reward (verl/utils/reward_score/sandbox_fusion): the codecontests / apps / codeforces / taco
// data sources' scorer when reward.sandbox_fusion.url is set. Each test is one request to a SandboxFusion service
// (https://github.com/bytedance/SandboxFusion, `POST /run_code`), which runs the response's code on the test's stdin.
//
//   code    = after the response's last "```python" up to the next "```"; else the first fenced block (its first
//             line dropped when it is a language name); a response without a fence scores 0
//   tests   = reward_model.ground_truth (a JSON string or an object): "inputs" / "outputs" lists, an optional
//             "fn_name" (the code is wrapped in a harness that calls that function, or Solution().<fn_name>, with
//             the JSON lines of the test's input as arguments and prints the result) and an optional "assert_case"
//             list (Python appended to the code per test; without inputs / outputs, the tests are its entries)
//   request = {compile_timeout: 10, run_timeout: 10, code, stdin: str(input), memory_limit_MB, language: python,
//             files: {}, fetch_files: []}; a 504 is retried twice (after 1 s, then 2 s), other failures are not
//   pass    = status "Success", run status "Finished" and stdout equal to str(output) up to trailing newlines
//             (any output passes when the expected one is null); a compile error fails every later test too
//   score   = the fraction of the first 10 tests that pass (verl's default_compute_score sets continuous)
//
// As in verl, everything that goes wrong scores rather than raises: a service that cannot be reached, answers an
// error or nonsense fails that test (logged); test cases verl cannot read (not JSON, not an object, lists of the
// wrong length or type) score 0 (logged). Requests run at once over all rows, at most max_concurrent in flight.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace verl::reward {

struct SandboxFusionOptions {
  std::string url;                 // the service's run_code endpoint (http:// or https://)
  int64_t max_concurrent = 64;     // requests in flight at once, over every caller of one client
  int64_t memory_limit_mb = 1024;  // sent as memory_limit_MB
};

// One service: its options and the requests-in-flight limit shared by every row scored through it.
class SandboxFusionClient {
 public:
  explicit SandboxFusionClient(SandboxFusionOptions options);
  ~SandboxFusionClient();
  SandboxFusionClient(const SandboxFusionClient&) = delete;
  SandboxFusionClient& operator=(const SandboxFusionClient&) = delete;

  const SandboxFusionOptions& options() const { return options_; }

  // verl's sandbox_fusion.compute_score(url, semaphore, memory_limit_mb, completion, test_cases, continuous,
  // timeout)[0]. Thread-safe.
  double compute_score(const std::string& completion, const nlohmann::json& test_cases, bool continuous = true,
                       int64_t timeout = 10) const;


 private:
  struct Limiter;  // the requests in flight
  class InFlight;  // one request's place among them
  SandboxFusionOptions options_;
  std::unique_ptr<Limiter> limiter_;
};

// The code verl sends, or "" with *found = false for a response without a fence.
std::string sandbox_fusion_extract_solution(const std::string& completion, bool* found);

// The program sent for a test of a function (fn_name): verl's harness around the code, as Python source.
std::string sandbox_fusion_function_harness(const std::string& code, const std::string& fn_name);

}  // namespace verl::reward
