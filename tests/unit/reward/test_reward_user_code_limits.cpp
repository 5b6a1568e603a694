// User code under control (issue 25): a reward function that loops, sleeps, calls sys.exit / os._exit or returns
// NaN is a RewardFunctionError (so on_error applies), within the time limit, and never ends the process.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/reward/scorers/custom_reward_function.h"

namespace verl::reward {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* const kHostileFile = R"PY(import math, os, sys, time

def loop(data_source, solution_str, ground_truth, extra_info=None):
    n = 0
    while True:
        n += 1

def sleep(data_source, solution_str, ground_truth, extra_info=None):
    time.sleep(1000)
    return 1.0

def swallow(data_source, solution_str, ground_truth, extra_info=None):
    try:
        time.sleep(1000)
    except TimeoutError:
        pass
    return 1.0

def quick(data_source, solution_str, ground_truth, extra_info=None):
    return 0.5

def sys_exit(data_source, solution_str, ground_truth, extra_info=None):
    sys.exit(0)

def os_exit(data_source, solution_str, ground_truth, extra_info=None):
    os._exit(0)

def nan(data_source, solution_str, ground_truth, extra_info=None):
    return float("nan")

def inf_in_dict(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": -math.inf, "acc": False}
)PY";

std::string hostile_file() {
  const std::string dir = test::make_temp_dir("reward_user_code_limits");
  test::write_file(dir + "/hostile.py", kHostileFile);
  return dir + "/hostile.py";
}

// The RewardFunctionError message of one call (empty when it returned) and the seconds it took.
std::pair<std::string, double> call(const ComputeScoreFn& fn) {
  const auto start = Clock::now();
  std::string message;
  try {
    fn("s", "x", "y", Json::object());
  } catch (const RewardFunctionError& e) {
    message = e.message();
  }
  return {message, std::chrono::duration<double>(Clock::now() - start).count()};
}

TEST(RewardUserCodeLimits, LoopAndSleepRaiseTimeoutWithinTheLimit) {
  const std::string path = hostile_file();
  UserCodeLimits limits;
  limits.timeout_s = 0.5;
  for (const char* name : {"loop", "sleep", "swallow"}) {
    const auto [message, seconds] = call(load_custom_reward_function(path, name, Json::object(), limits));
    EXPECT_EQ(message, "reward function '" + std::string(name) + "' from '" + path +
                           "' did not return within 0.5 s (custom_reward_function.timeout)");
    EXPECT_GE(seconds, 0.45) << name;
    EXPECT_LT(seconds, 3.0) << name;
  }
  // The process's Python keeps working: a later call is not hit by a stale TimeoutError.
  const auto quick = load_custom_reward_function(path, "quick", Json::object(), limits);
  for (int i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(quick("s", "x", "y", Json::object()).score, 0.5);
}

TEST(RewardUserCodeLimits, TimeoutOnAnotherThread) {
  const std::string path = hostile_file();
  UserCodeLimits limits;
  limits.timeout_s = 0.5;
  const auto loop = load_custom_reward_function(path, "loop", Json::object(), limits);
  std::pair<std::string, double> result;
  std::thread worker([&] { result = call(loop); });
  worker.join();
  EXPECT_NE(result.first.find("did not return within 0.5 s"), std::string::npos) << result.first;
  EXPECT_LT(result.second, 3.0);
}

TEST(RewardUserCodeLimits, ExitCallsAreErrorsNotExits) {
  const std::string path = hostile_file();
  EXPECT_EQ(call(load_custom_reward_function(path, "sys_exit", Json::object())).first,
            "SystemExit: 0 (at " + path + ":23)");
  EXPECT_EQ(call(load_custom_reward_function(path, "os_exit", Json::object())).first.rfind(
                "SystemExit: os._exit(0) called by user code; verl.cpp does not let it end the process (at " + path + ":26)", 0),
            0u);
}

TEST(RewardUserCodeLimits, NonFiniteScoresAreErrors) {
  const std::string path = hostile_file();
  EXPECT_EQ(call(load_custom_reward_function(path, "nan", Json::object())).first,
            "reward function 'nan' from '" + path + "' returned a non-finite score nan (a score must be a finite number)");
  EXPECT_NE(call(load_custom_reward_function(path, "inf_in_dict", Json::object())).first.find("non-finite score -inf"),
            std::string::npos);
}

}  // namespace
}  // namespace verl::reward
