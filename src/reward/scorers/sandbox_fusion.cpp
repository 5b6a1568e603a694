#include "verl/reward/scorers/sandbox_fusion.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/python/interpreter.h"
#include "verl/reward/scorers/prime_code.h"
#include "verl/reward/scorers/py_str.h"

extern const char verl_embedded_sandbox_fusion_request_py[];  // src/reward/scorers/sandbox_fusion_request.py

namespace verl::reward {

namespace pyb = pybind11;

namespace {

using Json = nlohmann::json;

constexpr const char* kComponent = "reward";
constexpr int kRequestSlack = 10;      // seconds on top of compile + run timeouts; verl's API_TIMEOUT
constexpr size_t kScoredTests = 10;    // continuous: the first 10 tests
constexpr size_t kThreadsPerRow = 32;  // verl's pool per row has max(32, cpus * 5); max_concurrent is the real cap
constexpr int kLoggedProblems = 20;    // logged at once; then one a minute (kLogInterval s)
constexpr int kLogInterval = 60;

// Python's str() of a JSON value, which is what verl sends as stdin and compares outputs with.
const char* const kPythonHelpers = R"PY(
import json


def str_of(json_text):
    return str(json.loads(json_text))
)PY";

pyb::object& python_helpers() {
  static std::once_flag once;
  static pyb::object* helpers = nullptr;  // never destroyed: the interpreter outlives static destructors
  python::call_once_with_gil(once, [] {
    pyb::dict scope;
    scope["__builtins__"] = pyb::module_::import("builtins");
    scope["__name__"] = pyb::str("verl_sandbox_fusion");
    pyb::exec(verl_embedded_sandbox_fusion_request_py, scope);  // post_run_code: the HTTP side
    pyb::exec(kPythonHelpers, scope);
    helpers = new pyb::object(scope);
  });
  return *helpers;
}

// Python's str(value) of a JSON value.
std::string python_str_of(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  const std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return python::with_gil(kComponent, [&] { return python_helpers()["str_of"](text).cast<std::string>(); });
}

std::string preview(const std::string& text) { return text.size() > 200 ? text.substr(0, 200) + "..." : text; }

// The first problems are logged, then at most one a minute with the count of those left out, so that a service
// that goes away late in a run still shows in the log.
void log_problem(const std::string& message) {
  static std::mutex mutex;
  static int logged = 0;
  static int64_t left_out = 0;
  static std::chrono::steady_clock::time_point last_logged;
  std::lock_guard<std::mutex> lock(mutex);
  const auto now = std::chrono::steady_clock::now();
  if (logged < kLoggedProblems || now - last_logged >= std::chrono::seconds(kLogInterval)) {
    VERL_LOG(Warn, kComponent) << "sandbox fusion: " << message
                               << (left_out > 0 ? " (" + std::to_string(left_out) + " more since the last such line)"
                                                : std::string());
    ++logged;
    left_out = 0;
    last_logged = now;
  } else {
    ++left_out;
  }
}

// A test's outcome, as verl's result list holds it: True, False, or -1 (request / sandbox error), -2 (runtime
// error), -3 (time limit), -4 (compile error).
enum class Outcome { kPass, kWrongAnswer, kError, kRuntimeError, kTimeLimit, kCompileError };

bool is_truthy(const Json& value) {
  if (value.is_null()) return false;
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  if (value.is_string() || value.is_array() || value.is_object()) return !value.empty();
  return true;
}

// Python's `value != 0` for a JSON value (False and 0.0 equal 0).
bool differs_from_zero(const Json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number()) return value.get<double>() != 0;
  return true;
}

std::string strip_trailing_newlines(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// verl's _process_single_case classification of the service's reply.
Outcome classify(const Json& reply, const Json& expected_output) {
  if (!is_truthy(reply) || !reply.is_object()) return Outcome::kError;  // verl: unknown state, or .get raises
  const Json none;
  const Json& compile = reply.contains("compile_result") ? reply["compile_result"] : none;
  const Json& run = reply.contains("run_result") ? reply["run_result"] : none;
  // verl reads fields of a truthy compile_result / run_result with .get: anything but an object raises there.
  if ((is_truthy(compile) && !compile.is_object()) || (is_truthy(run) && !run.is_object())) return Outcome::kError;
  const auto field = [&none](const Json& result, const char* key) -> const Json& {
    return is_truthy(result) && result.contains(key) ? result[key] : none;
  };
  const Json& status = reply.contains("status") ? reply["status"] : none;
  const Json& run_status = field(run, "status");
  if (status == "Failed") {
    const Json& compile_status = field(compile, "status");
    const bool compile_error =
        is_truthy(compile) && (compile_status == "Error" || compile_status == "TimeLimitExceeded" ||
                               (compile_status == "Finished" && differs_from_zero(field(compile, "return_code"))));
    if (compile_error) return Outcome::kCompileError;
    if (!is_truthy(run)) return Outcome::kError;
    if (run_status == "TimeLimitExceeded") return Outcome::kTimeLimit;
    if (run_status == "Error" || (run_status == "Finished" && differs_from_zero(field(run, "return_code")))) {
      return Outcome::kRuntimeError;
    }
    return Outcome::kError;
  }
  if (status == "Success") {
    if (!is_truthy(run) || run_status != "Finished") return Outcome::kError;
    if (expected_output.is_null()) return Outcome::kPass;
    const Json& stdout_value = field(run, "stdout");
    const std::string actual = stdout_value.is_null() ? std::string() : python_str_of(stdout_value);
    return strip_trailing_newlines(actual) == strip_trailing_newlines(python_str_of(expected_output))
               ? Outcome::kPass
               : Outcome::kWrongAnswer;
  }
  return Outcome::kError;  // SandboxError or an unknown status
}

// One test's code, stdin and expected output.
struct TestRequest {
  std::string code;
  std::optional<std::string> stdin_text;
  Json expected_output;
};

}  // namespace

struct SandboxFusionClient::Limiter {
  std::mutex mutex;
  std::condition_variable freed;
  int64_t in_flight = 0;
};

// Waits for a place among the max_concurrent requests in flight; gives it back when it goes out of scope.
class SandboxFusionClient::InFlight {
 public:
  explicit InFlight(const SandboxFusionClient& client) : limiter_(*client.limiter_) {
    std::unique_lock<std::mutex> lock(limiter_.mutex);
    limiter_.freed.wait(lock, [&] { return limiter_.in_flight < client.options_.max_concurrent; });
    ++limiter_.in_flight;
  }
  ~InFlight() {
    {
      std::lock_guard<std::mutex> lock(limiter_.mutex);
      --limiter_.in_flight;
    }
    limiter_.freed.notify_one();
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  Limiter& limiter_;
};

SandboxFusionClient::SandboxFusionClient(SandboxFusionOptions options)
    : options_(std::move(options)), limiter_(std::make_unique<Limiter>()) {
  VERL_CHECK(options_.max_concurrent >= 1, kComponent, "sandbox fusion max_concurrent must be >= 1, got ",
             options_.max_concurrent);
}

SandboxFusionClient::~SandboxFusionClient() = default;

std::string sandbox_fusion_extract_solution(const std::string& completion, bool* found) {
  *found = true;
  if (py::contains(completion, "```python")) return prime_code_extract_solution(completion);
  if (!py::contains(completion, "```")) {
    *found = false;
    return "";
  }
  std::string solution = py::split(completion, "```")[1];
  const size_t newline = solution.find('\n');
  if (newline != std::string::npos && py::is_alpha(py::strip(solution.substr(0, newline)))) {
    solution = solution.substr(newline + 1);  // a language name on the fence's line
  }
  return solution;
}

std::string sandbox_fusion_function_harness(const std::string& code, const std::string& fn_name) {
  // The names the harness itself reads (sys, json, traceback, globals, getattr, isinstance, print, str) are looked
  // up when it runs, after the user's code, exactly as in verl's harness: code that rebinds them changes both alike.
  static const std::string kImports =
      "\nimport traceback\n"
      "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
      "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\nfrom random import *\n"
      "from statistics import *\nfrom itertools import *\nfrom functools import *\nfrom operator import *\n"
      "from io import *\nfrom sys import *\nfrom json import *\nfrom builtins import *\nfrom typing import *\n"
      "import string\nimport re\nimport datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\n"
      "import math\nimport random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
      "import io\nimport sys\nimport json\n\n";
  static const std::string kRunner = R"PY(

def _execute_user_function():
    # Each line of stdin is one JSON argument.
    _raw_input_str = sys.stdin.read()
    _args = []
    if _raw_input_str.strip():
        try:
            _args = [json.loads(line) for line in _raw_input_str.split('\n')]
        except json.JSONDecodeError as _je:
            sys.stderr.write(f"WrapperError: Invalid JSON input for '{_SANDBOX_FN_NAME}': {_je}\nInput was: "
                             f"{_raw_input_str[:200]}\n")
            return None, True
    try:
        _target_callable = None
        if _SANDBOX_FN_NAME in globals():
            _target_callable = globals()[_SANDBOX_FN_NAME]
        elif 'Solution' in globals():
            _target_callable = getattr(globals()['Solution'](), _SANDBOX_FN_NAME)
        if not _target_callable:
            sys.stderr.write(f"WrapperError: Function or method '{_SANDBOX_FN_NAME}' not found.\n")
            return None, True
        return _target_callable(*_args), False
    except Exception:
        sys.stderr.write(f"Error during setup or execution of '{_SANDBOX_FN_NAME}':\n{traceback.format_exc()}\n")
        return None, True

if __name__ == '__main__':
    _result, _error_occurred = _execute_user_function()
    # A failure prints nothing and still exits 0, as in verl.
    if not _error_occurred:
        if isinstance(_result, (dict, list, tuple)) or _result is None or isinstance(_result, bool):
            print(json.dumps(_result))
        else:
            print(str(_result))
)PY";
  return kImports + "# === User's Original Code START ===\n" + code + "\n# === User's Original Code END ===\n\n" +
         "_SANDBOX_FN_NAME = \"" + fn_name + "\"\n" + kRunner;
}

double SandboxFusionClient::compute_score(const std::string& completion, const Json& test_cases, bool continuous,
                                          int64_t timeout) const {
  bool found = false;
  const std::string solution = sandbox_fusion_extract_solution(completion, &found);
  if (!found) return 0.0;  // verl: "Invalid completion (missing code block)"

  Json tests = test_cases;
  if (!tests.is_object()) {
    if (tests.is_string()) tests = Json::parse(tests.get_ref<const std::string&>(), nullptr, false);
    if (tests.is_discarded() || !tests.is_object()) {
      log_problem("test cases are not a JSON object (" + preview(test_cases.dump()) + "); the row scores 0");
      return 0.0;
    }
  }
  if (tests.contains("assert_case") && tests["assert_case"].is_array()) {
    const size_t n = tests["assert_case"].size();
    if (!tests.contains("inputs")) tests["inputs"] = Json(std::vector<std::string>(n, ""));
    if (!tests.contains("outputs")) tests["outputs"] = Json(std::vector<Json>(n, nullptr));
  }
  if (tests.empty() || !tests.contains("inputs") || !tests.contains("outputs")) {
    log_problem("test cases have no inputs / outputs; the row scores 0");
    return 0.0;
  }
  // verl takes len() of inputs / outputs / assert_case and iterates or indexes them. Lists are what verl's data
  // hold; a string is its characters there, a mapping's iteration its keys (indexing one by a number raises), and
  // anything without a length raises: the row scores 0.
  const auto sequence = [](const Json& value, bool iterated, std::optional<Json>* items) {
    if (value.is_array()) {
      *items = value;
    } else if (value.is_string()) {
      log_problem("test cases hold a string where verl expects a list; verl takes its characters, as here");
      Json chars = Json::array();
      for (char32_t c : py::decode(value.get<std::string>())) chars.push_back(py::encode(c));
      *items = chars;
    } else if (value.is_object() && iterated) {
      Json keys = Json::array();
      for (const auto& item : value.items()) keys.push_back(item.key());
      *items = keys;
    }
    // The length verl takes (or none: the row scores 0).
    if (value.is_array() || value.is_string() || value.is_object()) {
      return std::optional<size_t>(value.is_string() ? py::length(value.get<std::string>()) : value.size());
    }
    return std::optional<size_t>();
  };
  std::optional<Json> inputs, outputs, asserts;
  const std::optional<size_t> num_inputs = sequence(tests["inputs"], /*iterated=*/true, &inputs);
  if (!num_inputs) return 0.0;
  const size_t num_tests = *num_inputs;
  if (num_tests == 0) return 0.0;
  const std::optional<size_t> num_outputs = sequence(tests["outputs"], /*iterated=*/false, &outputs);
  if (!num_outputs) return 0.0;
  if (*num_outputs != num_tests) return 0.0;  // verl: every test -1
  std::vector<std::string> assert_cases(num_tests);
  if (tests.contains("assert_case")) {
    const std::optional<size_t> num_asserts = sequence(tests["assert_case"], /*iterated=*/false, &asserts);
    if (!num_asserts) return 0.0;
    if (*num_asserts != num_tests) return 0.0;  // verl: every test -1
  }
  // Indexing a mapping raises, as does adding a non-string assert to the code.
  if (!outputs || (tests.contains("assert_case") && !asserts)) return 0.0;
  for (size_t i = 0; asserts && i < num_tests; ++i) {
    if (!(*asserts)[i].is_string()) return 0.0;
    assert_cases[i] = (*asserts)[i].get<std::string>();
  }
  const Json fn_name = tests.contains("fn_name") ? tests["fn_name"] : Json();

  std::vector<TestRequest> requests(num_tests);
  for (size_t i = 0; i < num_tests; ++i) {
    std::string code = solution + "\n\n" + assert_cases[i];
    if (is_truthy(fn_name)) code = sandbox_fusion_function_harness(code, python_str_of(fn_name));
    requests[i].code = std::move(code);
    if (!(*inputs)[i].is_null()) requests[i].stdin_text = python_str_of((*inputs)[i]);
    requests[i].expected_output = (*outputs)[i];
  }

  std::vector<Outcome> outcomes(num_tests, Outcome::kError);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next++; i < num_tests; i = next++) {
      const TestRequest& request = requests[i];
      Json payload = Json::object();
      payload["compile_timeout"] = timeout;
      payload["run_timeout"] = timeout;
      payload["code"] = request.code;
      payload["stdin"] = request.stdin_text ? Json(*request.stdin_text) : Json();
      payload["memory_limit_MB"] = options_.memory_limit_mb;
      payload["language"] = "python";
      payload["files"] = Json::object();
      payload["fetch_files"] = Json::array();
      const std::string body = payload.dump(-1, ' ', false, Json::error_handler_t::replace);
      const double request_timeout = static_cast<double>(2 * timeout + kRequestSlack);

      std::string error;
      std::string reply_text;
      {
        const InFlight slot(*this);
        python::with_gil(kComponent, [&] {
          const pyb::tuple result = python_helpers()["post_run_code"](options_.url, body, request_timeout);
          reply_text = result[1].cast<std::string>();
          error = result[2].cast<std::string>();
        });
      }

      if (!error.empty()) {
        log_problem("request to " + options_.url + " failed: " + error + " (the test fails)");
        continue;
      }
      const Json reply = Json::parse(reply_text, nullptr, false);
      if (reply.is_discarded()) {
        log_problem("the reply of " + options_.url + " is not JSON: " + preview(reply_text) + " (the test fails)");
        continue;
      }
      outcomes[i] = classify(reply, request.expected_output);
    }
  };
  // A Python failure (the interpreter, not the service) is an error; the other threads stop after their test.
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const auto guarded_work = [&] {
    try {
      work();
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = num_tests;
    }
  };
  std::vector<std::thread> threads;
  const size_t num_threads = std::min(num_tests, kThreadsPerRow);
  for (size_t t = 1; t < num_threads; ++t) threads.emplace_back(guarded_work);
  guarded_work();
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);

  // verl marks every test after the first compile error as one.
  const auto first_compile_error = std::find(outcomes.begin(), outcomes.end(), Outcome::kCompileError);
  if (first_compile_error != outcomes.end()) std::fill(first_compile_error, outcomes.end(), Outcome::kCompileError);

  const size_t scored = continuous ? std::min(num_tests, kScoredTests) : num_tests;
  const auto passed = std::count(outcomes.begin(), outcomes.begin() + scored, Outcome::kPass);
  return static_cast<double>(passed) / static_cast<double>(scored);
}

}  // namespace verl::reward
