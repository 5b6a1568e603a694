// verl train's checks before any weights load see model.override_config as the workers will build the model: a
// context longer than config.json's max_position_embeddings passes with verl's
// override_config.max_position_embeddings (verl's DAPO scripts set 32768), and a field that would not fit the
// checkpoint's shapes is an error there, naming the key.
#include <gtest/gtest.h>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/trainer/main_ppo.h"

namespace verl::test {
namespace {

const DigitCompletionSetup& override_config_preflight_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("override_preflight"), 4);
  return instance;
}

std::string preflight_error(const std::vector<std::string>& extra) {
  config::ConfigArgs args;
  args.overrides = override_config_preflight_setup().base_overrides(make_temp_dir("override_preflight_run"));
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  const config::PPOConfig cfg = config::load_config(args).ppo;
  const auto tok = tokenizer::Tokenizer::from_folder(override_config_preflight_setup().model_dir);
  try {
    trainer::preflight_check(cfg, tok);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OverrideConfigPreflight, TheContextCheckSeesTheOverriddenMaxPositionEmbeddings) {
  // `verl model init` writes max_position_embeddings 4096; 8 + 5000 tokens do not fit it.
  const std::vector<std::string> long_responses = {"data.max_response_length=5000"};
  const std::string e = preflight_error(long_responses);
  EXPECT_NE(e.find("exceeds the model's max_position_embeddings 4096"), std::string::npos) << e;
  auto with_override = long_responses;
  with_override.push_back("+actor_rollout_ref.model.override_config.max_position_embeddings=32768");
  EXPECT_EQ(preflight_error(with_override), "");
  // A shape field: an error before any weights load, naming the key.
  const std::string shape = preflight_error({"+critic.model.override_config.num_hidden_layers=7"});
  EXPECT_NE(shape.find("critic.model.override_config.num_hidden_layers=7"), std::string::npos) << shape;
}

}  // namespace
}  // namespace verl::test
