#include "verl/trainer/trainer_state.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::trainer {

nlohmann::json read_trainer_state(const std::string& path) {
  std::ifstream in(path);
  VERL_CHECK(in.good(), "checkpoint", "cannot read '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), path);
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL("checkpoint", "'", path, "' is not valid JSON: ", e.what());
  }
  // value("version", 0) itself throws on a non-number: the type is checked first.
  VERL_CHECK(state.is_object() && state.contains("version") && state["version"].is_number_integer() &&
                 state["version"].get<int64_t>() == kTrainerStateVersion && state.contains("dataloader"),
             "checkpoint", "'", path, "' is not a version ", kTrainerStateVersion, " trainer state");
  VERL_CHECK(state["dataloader"].is_object(), "checkpoint", "'", path, "': dataloader must be an object");
  VERL_CHECK(!state.contains("uid_generator") || state["uid_generator"].is_string(), "checkpoint", "'", path,
             "': uid_generator must be a string");
  VERL_CHECK(!state.contains("kl_ctrl_in_reward") || state["kl_ctrl_in_reward"].is_number(), "checkpoint", "'",
             path, "': kl_ctrl_in_reward must be a number");
  if (state.contains("step_metrics")) {
    const nlohmann::json& line = state["step_metrics"];
    VERL_CHECK(line.is_object(), "checkpoint", "'", path, "': step_metrics must be an object");
    for (const auto& [key, value] : line.items()) {
      VERL_CHECK(value.is_string(), "checkpoint", "'", path, "': step_metrics.", key, " must be a string");
      const std::string& number = value.get_ref<const std::string&>();
      char* end = nullptr;
      std::strtod(number.c_str(), &end);
      VERL_CHECK(end != number.c_str() && *end == '\0', "checkpoint", "'", path, "': step_metrics.", key, " is '",
                 number, "', not a number");
    }
  }
  return state;
}

}  // namespace verl::trainer
