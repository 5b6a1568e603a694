// The built-in verl.utils.reward_score.gsm8k (agent/verl_python_shim.h, used by the built-in GSM8K tool and
// interaction) against verl's own: verl 0.9.1's gsm8k.py in .venv/test scores the same strings, the results are
// compared by repr (so 0 vs 0.0 counts).
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/agent/verl_python_shim.h"
#include "verl/python/interpreter.h"

namespace verl::test {
namespace {

namespace py = pybind11;

// verl's module loaded from its file, without running verl/__init__.py (which imports torch).
const char* const kReference = R"PY(
import importlib.util
import json
import os
import sys

spec = importlib.util.find_spec("verl")
assert spec is not None, "verl is not installed in " + sys.executable
path = os.path.join(list(spec.submodule_search_locations)[0], "utils", "reward_score", "gsm8k.py")
module_spec = importlib.util.spec_from_file_location("verl_gsm8k_reference", path)
gsm8k = importlib.util.module_from_spec(module_spec)
module_spec.loader.exec_module(gsm8k)
cases = json.load(open(sys.argv[1]))
print(json.dumps([repr(gsm8k.compute_score(*case)) for case in cases]))
)PY";

// (solution_str, ground_truth, method, format_score, score)
nlohmann::json cases() {
  nlohmann::json out = nlohmann::json::array();
  const std::vector<std::pair<std::string, std::string>> texts = {
      {"The answer is #### 72", "72"},
      {"#### 1,234", "1234"},
      {"#### $1,234", "1234"},
      {"#### -3.5", "-3.5"},
      {"#### 72 and later #### 73", "73"},
      {"####72", "72"},
      {"no number at all", "1"},
      {"", "0"},
      {"So 3 apples plus 4 apples is 7.", "7"},
      {"Costs 1,000 dollars", "1,000"},
      {"Costs 1,000 dollars", "1000"},
      {"ends with a dot .", "."},
      {"only dots . . .", "."},
      {"value -12 then .", "-12"},
      {"3.14.15", "3.14.15"},
      {std::string(400, 'x') + " 42", "42"},
      {"#### 5 " + std::string(400, 'y'), "5"},
      {"#### 7\n" + std::string(298, 'z'), "7"},
      {"Natalia sold 48/2 = 24 clips in May. 48+24 = 72\n#### 72", "72"},
      {"answer: 0.5", "0.5"},
      {"-", "-"},
      {"a,b,c", ","},
  };
  for (const auto& [text, truth] : texts) {
    out.push_back({text, truth, "strict", 0.0, 1.0});
    out.push_back({text, truth, "flexible", 0.1, 2.0});
  }
  out.push_back({"#### 72", 72, "strict", 0.0, 1.0});  // a non-string ground truth never equals
  return out;
}

TEST(Gsm8kShimOracle, ComputeScoreEqualsVerls) {
  const std::string dir = make_temp_dir("gsm8k_shim_oracle");
  write_file(dir + "/reference.py", kReference);
  const nlohmann::json all = cases();
  write_file(dir + "/cases.json", all.dump());
  CommandResult r = run_command(test_python() + "'" + dir + "/reference.py' '" + dir + "/cases.json'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const nlohmann::json expected = nlohmann::json::parse(r.out);
  ASSERT_EQ(expected.size(), all.size());

  // The shim's source run on its own, so that a verl installed in the embedded interpreter cannot stand in.
  const std::vector<std::string> got = python::with_gil("test", [&] {
    py::dict scope;
    scope["__builtins__"] = py::module_::import("builtins");
    scope["__name__"] = py::str("gsm8k_shim");
    py::exec(agent::verl_python_shim_source("verl.utils.reward_score.gsm8k"), scope);
    py::object json = py::module_::import("json");
    py::list py_cases = json.attr("loads")(all.dump());
    std::vector<std::string> out;
    for (const auto& c : py_cases) {
      py::tuple args = py::tuple(c.cast<py::list>());
      out.push_back(py::repr(scope["compute_score"](*args)).cast<std::string>());
    }
    return out;
  });
  int differing = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (got[i] == expected[i].get<std::string>()) continue;
    ++differing;
    ADD_FAILURE() << "case " << i << " " << all[i].dump() << ": shim " << got[i] << ", verl "
                  << expected[i].get<std::string>();
  }
  EXPECT_EQ(differing, 0);
  // The cases reach every branch: full score, format score, and no answer.
  EXPECT_NE(std::find(got.begin(), got.end(), "1.0"), got.end());
  EXPECT_NE(std::find(got.begin(), got.end(), "0.1"), got.end());
  EXPECT_NE(std::find(got.begin(), got.end(), "0"), got.end());
}

}  // namespace
}  // namespace verl::test
