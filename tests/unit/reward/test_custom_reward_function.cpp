// custom_reward_function: verl-style Python files in the embedded interpreter and C ABI plugins; what they
// return, how their errors read, and Python's str() of the values verl prints.
#include <gtest/gtest.h>

#include <string>

#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/reward/scorers/custom_reward_function.h"

namespace verl::reward {
namespace {

using verl::test::error_of;

using Json = nlohmann::json;

const char* const kRewardFile = R"PY(import re

class FakeNumpyScalar:  # what numpy scalars offer: .dtype, .item(), __float__
    dtype = "int64"
    def __init__(self, value):
        self.value = value
    def item(self):
        return self.value
    def __float__(self):
        return float(self.value)

def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    match = re.search(r"#### (\-?[0-9]+)", solution_str)
    pred = match.group(1) if match else None
    acc = pred == ground_truth
    return {"score": kwargs.get("scale", 1.0) * float(acc), "acc": acc, "pred": pred,
            "source": data_source, "index": extra_info["index"], "module": __name__}

def length(data_source, solution_str, ground_truth, extra_info=None):
    return len(solution_str)

def boolean(data_source, solution_str, ground_truth, extra_info=None):
    return ground_truth == [1, 2] and extra_info == {"a": None, "b": [True, 1.5]}

def numpy_like(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": FakeNumpyScalar(0.5), "n": FakeNumpyScalar(3), "obj": [1, 2]}

def text(data_source, solution_str, ground_truth, extra_info=None):
    return "1.0"

def no_score(data_source, solution_str, ground_truth, extra_info=None):
    return {"acc": 1}

def raising(data_source, solution_str, ground_truth, extra_info=None):
    raise ValueError("cannot parse " + solution_str)

not_callable = 3
)PY";

std::string write_reward_file(const std::string& name, const std::string& text) {
  const std::string dir = test::make_temp_dir("custom_reward_" + name);
  const std::string path = dir + "/" + name;
  test::write_file(path, text);
  return path;
}

ExtraValue extra(const ScoreResult& r, const std::string& key) {
  for (const auto& [k, v] : r.extra) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no extra key " << key;
  return std::monostate{};
}

TEST(CustomRewardPython, VerlSignatureWithRewardKwargsAndDictResult) {
  const std::string path = write_reward_file("reward.py", kRewardFile);
  const ComputeScoreFn fn = load_custom_reward_function(path, "compute_score", Json{{"scale", 2.0}});
  ScoreResult r = fn("openai/gsm8k", "so 3+4=7\n#### 7", "7", Json{{"index", 5}});
  EXPECT_TRUE(r.is_dict);
  EXPECT_DOUBLE_EQ(r.score, 2.0);
  EXPECT_EQ(std::get<bool>(extra(r, "acc")), true);
  EXPECT_EQ(std::get<std::string>(extra(r, "pred")), "7");
  EXPECT_EQ(std::get<std::string>(extra(r, "source")), "openai/gsm8k");
  EXPECT_EQ(std::get<int64_t>(extra(r, "index")), 5);
  EXPECT_EQ(std::get<std::string>(extra(r, "module")), "custom_module");  // loaded as verl does
  ASSERT_EQ(r.extra.size(), 5u);
  EXPECT_EQ(r.extra[0].first, "acc");  // dict order kept, "score" left out
  r = fn("openai/gsm8k", "no answer", "7", Json{{"index", 6}});
  EXPECT_DOUBLE_EQ(r.score, 0.0);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(extra(r, "pred")));  // None
}

TEST(CustomRewardPython, NumbersBoolsAndJsonArguments) {
  const std::string path = write_reward_file("reward.py", kRewardFile);
  ScoreResult r = load_custom_reward_function(path, "length", Json::object())("s", "abcde", "x", Json::object());
  EXPECT_FALSE(r.is_dict);
  EXPECT_DOUBLE_EQ(r.score, 5.0);
  // Non-ASCII text arrives as code points: "é" is one character.
  r = load_custom_reward_function(path, "length", nullptr)("s", "\xC3\xA9", "x", Json::object());
  EXPECT_DOUBLE_EQ(r.score, 1.0);
  const auto boolean = load_custom_reward_function(path, "boolean", Json::object());
  EXPECT_DOUBLE_EQ(boolean("s", "", Json::array({1, 2}), Json{{"a", nullptr}, {"b", {true, 1.5}}}).score, 1.0);
  EXPECT_DOUBLE_EQ(boolean("s", "", "[1, 2]", Json::object()).score, 0.0);
  r = load_custom_reward_function(path, "numpy_like", Json::object())("s", "", "x", Json::object());
  EXPECT_DOUBLE_EQ(r.score, 0.5);
  EXPECT_EQ(std::get<int64_t>(extra(r, "n")), 3);
  EXPECT_EQ(std::get<std::string>(extra(r, "obj")), "[1, 2]");  // other values: their str()
}

TEST(CustomRewardPython, BadResultsAndRaisingCode) {
  const std::string path = write_reward_file("reward.py", kRewardFile);
  std::string e = error_of([&] { load_custom_reward_function(path, "text", Json::object())("s", "", "", {}); });
  EXPECT_NE(e.find("reward function 'text' from '" + path + "' returned str; expected a number"), std::string::npos)
      << e;
  e = error_of([&] { load_custom_reward_function(path, "no_score", Json::object())("s", "", "", {}); });
  EXPECT_NE(e.find("returned a dict without a \"score\" key"), std::string::npos) << e;
  const auto raising = load_custom_reward_function(path, "raising", Json::object());
  try {
    raising("s", "abc", "", Json::object());
    FAIL() << "expected RewardFunctionError";
  } catch (const RewardFunctionError& err) {
    EXPECT_EQ(err.message(), "ValueError: cannot parse abc (at " + path + ":35)");
  }
  // A reward_kwargs key that repeats an argument is Python's TypeError, raised as user code's error.
  const auto repeated = load_custom_reward_function(path, "compute_score", Json{{"ground_truth", "1"}});
  EXPECT_THROW(repeated("s", "", "", Json{{"index", 1}}), RewardFunctionError);
}

TEST(CustomRewardPython, LoadErrorsNamePathAndFunction) {
  const std::string path = write_reward_file("reward.py", kRewardFile);
  std::string e = error_of([&] { load_custom_reward_function("/nonexistent/r.py", "compute_score", {}); });
  EXPECT_EQ(e, "[reward] reward function file '/nonexistent/r.py' not found (custom_reward_function.path, function "
               "'compute_score')");
  e = error_of([&] { load_custom_reward_function(path, "missing_fn", {}); });
  EXPECT_EQ(e, "[reward] reward function 'missing_fn' not found in '" + path + "' (custom_reward_function.name)");
  e = error_of([&] { load_custom_reward_function(path, "not_callable", {}); });
  EXPECT_NE(e.find("'not_callable' in '" + path + "' is not a function"), std::string::npos) << e;
  const std::string broken = write_reward_file("broken.py", "def compute_score(:\n");
  e = error_of([&] { load_custom_reward_function(broken, "compute_score", {}); });
  EXPECT_NE(e.find("cannot load reward function file '" + broken + "' (function 'compute_score'): SyntaxError"),
            std::string::npos)
      << e;
  const std::string failing = write_reward_file("failing.py", "import no_such_module_xyz\n");
  e = error_of([&] { load_custom_reward_function(failing, "compute_score", {}); });
  EXPECT_NE(e.find("ModuleNotFoundError"), std::string::npos) << e;
  const std::string not_python = write_reward_file("reward.txt", "def compute_score(): pass\n");
  e = error_of([&] { load_custom_reward_function(not_python, "compute_score", {}); });
  EXPECT_NE(e.find("not a Python source file"), std::string::npos) << e;
  e = error_of([&] { load_custom_reward_function(path, "compute_score", Json::array()); });
  EXPECT_NE(e.find("reward_kwargs must be a map"), std::string::npos) << e;
  for (const std::string& message : {e}) EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(CustomRewardPlugin, CAbiFunctionScoresAndReportsErrors) {
  const std::string plugin = VERL_TEST_REWARD_PLUGIN;
  const auto fn = load_custom_reward_function(plugin, "compute_score", Json::object());
  EXPECT_DOUBLE_EQ(fn("s", "the answer is 42", "42", Json::object()).score, 1.0);
  EXPECT_DOUBLE_EQ(fn("s", "the answer is 41", "42", Json::object()).score, 0.0);
  EXPECT_FALSE(fn("s", "42", "42", Json::object()).is_dict);
  try {
    fn("s", "FAIL", "42", Json::object());
    FAIL() << "expected RewardFunctionError";
  } catch (const RewardFunctionError& e) {
    EXPECT_EQ(e.message(), "plugin returned 7: cannot score a FAIL answer");
  }
  // Every argument arrives: ground truth as JSON text when not a string, extra_info and reward_kwargs as JSON.
  const auto check = load_custom_reward_function(plugin, "check_arguments", Json{{"scale", 2}});
  EXPECT_DOUBLE_EQ(check("my_source", "x = 42", Json::array({1, 2}), Json{{"index", 7}}).score, 2.5);
  const std::string e = error_of([&] { load_custom_reward_function(plugin, "no_such_symbol", {}); });
  EXPECT_NE(e.find("reward function 'no_such_symbol' not found in '" + plugin + "'"), std::string::npos) << e;
  const std::string fake = write_reward_file("fake.so", "not an ELF file");
  EXPECT_NE(error_of([&] { load_custom_reward_function(fake, "compute_score", {}); })
                .find("cannot load reward plugin '" + fake + "'"),
            std::string::npos);
}

TEST(CustomRewardText, PythonStrOfValues) {
  EXPECT_EQ(python_float_str(1.0), "1.0");
  EXPECT_EQ(python_float_str(-2.5), "-2.5");
  EXPECT_EQ(python_float_str(0.1), "0.1");
  EXPECT_EQ(python_float_str(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(python_float_str(1e-05), "1e-05");
  EXPECT_EQ(python_float_str(0.0001), "0.0001");
  EXPECT_EQ(python_float_str(1e16), "1e+16");
  EXPECT_EQ(python_float_str(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_str(123456789012345680.0), "1.2345678901234568e+17");
  EXPECT_EQ(python_float_str(-2.5e-300), "-2.5e-300");
  EXPECT_EQ(python_float_str(9007199254740992.0), "9007199254740992.0");
  EXPECT_EQ(python_float_str(0.0), "0.0");
  EXPECT_EQ(python_str(ExtraValue{true}), "True");
  EXPECT_EQ(python_str(ExtraValue{std::monostate{}}), "None");
  EXPECT_EQ(python_str(ExtraValue{int64_t{-3}}), "-3");
  EXPECT_EQ(python_str(ExtraValue{std::string("12")}), "12");
}

}  // namespace
}  // namespace verl::reward
