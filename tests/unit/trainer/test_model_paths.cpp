// verl's HFModelConfig paths: actor_rollout_ref.model.tokenizer_path and hf_config_path (critic.model.hf_config_path)
// take the tokenizer and config.json from folders apart from the weights'. A run on a weights-only folder with both
// set trains exactly as the run on the whole model folder, and its checkpoint's huggingface/ holds the tokenizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const DigitCompletionSetup& model_paths_setup() {
  static const DigitCompletionSetup instance = make_digit_completion_setup(make_temp_dir("model_paths_setup"), 4);
  return instance;
}

// The setup's model with only its safetensors weights.
std::string weights_only_folder() {
  static const std::string dir = [] {
    const std::string out = make_temp_dir("model_paths_weights");
    for (const auto& entry : fs::directory_iterator(model_paths_setup().model_dir)) {
      if (entry.path().extension() == ".safetensors")
        fs::copy_file(entry.path(), fs::path(out) / entry.path().filename());
    }
    return out;
  }();
  return dir;
}

TrainRun one_step(const std::string& name, const std::vector<std::string>& extra) {
  const std::string run_dir = make_temp_dir(name);
  std::vector<std::string> all = model_paths_setup().base_overrides(run_dir);
  all.insert(all.end(), {"trainer.total_training_steps=1", "trainer.save_freq=1", "trainer.test_freq=-1"});
  all.insert(all.end(), extra.begin(), extra.end());
  TrainRun run = run_verl_train(all, run_dir);
  run.result.out = run_dir;  // where its checkpoint is
  return run;
}

TEST(ModelPaths, TokenizerAndConfigFromTheirOwnFoldersTrainAsTheWholeFolder) {
  const DigitCompletionSetup& setup = model_paths_setup();
  const TrainRun whole = one_step("model_paths_whole", {});
  ASSERT_EQ(whole.result.exit_code, 0) << whole.result.err;
  const std::string weights = weights_only_folder();
  const TrainRun apart =
      one_step("model_paths_apart", {"actor_rollout_ref.model.path=" + weights,
                                     "actor_rollout_ref.model.tokenizer_path=" + setup.dir + "/tok",
                                     "actor_rollout_ref.model.hf_config_path=" + setup.model_dir,
                                     "critic.model.path=" + weights, "critic.model.hf_config_path=" + setup.model_dir});
  ASSERT_EQ(apart.result.exit_code, 0) << apart.result.err;
  ASSERT_FALSE(whole.history.empty());
  for (const char* key : {"critic/score/mean", "actor/pg_loss", "critic/vf_loss", "response_length/mean"}) {
    ASSERT_TRUE(whole.history.count(key)) << key;
    ASSERT_TRUE(apart.history.count(key)) << key;
    EXPECT_EQ(apart.history.at(key), whole.history.at(key)) << key;
  }
  const fs::path hf = fs::path(apart.result.out) / "global_step_1" / "actor" / "huggingface";
  for (const char* file : {"config.json", "tokenizer.json", "generation_config.json"}) {
    EXPECT_TRUE(fs::exists(hf / file)) << (hf / file);
  }
  EXPECT_EQ(read_file((hf / "tokenizer.json").string()), read_file(setup.dir + "/tok/tokenizer.json"));
  // The critic's export copies the actor's tokenizer (critic.model.tokenizer_path follows it).
  const fs::path critic_hf = fs::path(apart.result.out) / "global_step_1" / "critic" / "huggingface";
  EXPECT_EQ(read_file((critic_hf / "tokenizer.json").string()), read_file(setup.dir + "/tok/tokenizer.json"));
}

TEST(ModelPaths, AMissingTokenizerOrConfigIsOneLineNamingItsKey) {
  const std::string weights = weights_only_folder();
  const std::string model = model_paths_setup().model_dir;
  struct Case {
    std::vector<std::string> overrides;
    std::string expected;
  };
  const Case cases[] = {
      {{"actor_rollout_ref.model.path=" + weights},
       "actor_rollout_ref.model.path='" + weights + "' is not a Hugging Face model folder (no config.json)"},
      {{"actor_rollout_ref.model.path=" + weights, "actor_rollout_ref.model.hf_config_path=" + model},
       "actor_rollout_ref.model.path='" + weights +
           "' has no tokenizer.json (set actor_rollout_ref.model.tokenizer_path to the tokenizer's folder)"},
      {{"actor_rollout_ref.model.tokenizer_path=" + weights},
       "actor_rollout_ref.model.tokenizer_path='" + weights + "' has no tokenizer.json"},
      {{"critic.model.hf_config_path=" + weights},
       "critic.model.hf_config_path='" + weights + "' is not a Hugging Face model folder (no config.json)"},
      {{"actor_rollout_ref.model.path=/nonexistent/weights", "actor_rollout_ref.model.hf_config_path=" + model},
       "actor_rollout_ref.model.path='/nonexistent/weights' is not a folder"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> all = model_paths_setup().base_overrides(make_temp_dir("model_paths_error"));
    all.insert(all.end(), c.overrides.begin(), c.overrides.end());
    const CommandResult r = run_command("VERL_LOG_LEVEL=warn " + verl_train_command(all));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace verl::test
