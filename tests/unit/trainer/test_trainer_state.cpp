// data.json, the controller's checkpoint state, read back by read_trainer_state: a real state passes, and each
// wrong type is one error naming the file and the key (before, nlohmann's type_error escaped with neither).
#include <gtest/gtest.h>

#include <string>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/trainer/trainer_state.h"

namespace verl::trainer {
namespace {

std::string trainer_state_error_of(const std::string& path) {
  try {
    read_trainer_state(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainerState, ValidStateIsRead) {
  const std::string path = test::make_temp_dir("trainer_state_ok") + "/data.json";
  test::write_file(path, R"({"version": 1, "dataloader": {"epoch": 0}, "uid_generator": "1 2 3",
                            "kl_ctrl_in_reward": 0.001, "step_metrics": {"actor/lr": "1e-06", "x": "nan"}})");
  const nlohmann::json state = read_trainer_state(path);
  EXPECT_EQ(state["dataloader"]["epoch"], 0);
  EXPECT_EQ(state["uid_generator"], "1 2 3");
}

TEST(TrainerState, WrongTypesAreErrorsNamingTheKey) {
  const std::string path = test::make_temp_dir("trainer_state_types") + "/data.json";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"version": "1", "dataloader": {}})", "is not a version 1 trainer state"},
      {R"([1, 2])", "is not a version 1 trainer state"},
      {R"({"version": 1, "dataloader": 5})", "dataloader must be an object"},
      {R"({"version": 1, "dataloader": {}, "uid_generator": 7})", "uid_generator must be a string"},
      {R"({"version": 1, "dataloader": {}, "kl_ctrl_in_reward": "x"})", "kl_ctrl_in_reward must be a number"},
      {R"({"version": 1, "dataloader": {}, "step_metrics": []})", "step_metrics must be an object"},
      {R"({"version": 1, "dataloader": {}, "step_metrics": {"a": 1.5}})", "step_metrics.a must be a string"},
      {R"({"version": 1, "dataloader": {}, "step_metrics": {"a": "1.5x"}})", "step_metrics.a is '1.5x', not a number"},
  };
  for (const auto& [text, expected] : cases) {
    test::write_file(path, text);
    const std::string e = trainer_state_error_of(path);
    EXPECT_NE(e.find(expected), std::string::npos) << text << " -> " << e;
    EXPECT_NE(e.find(path), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace verl::trainer
