// actor_rollout_ref.model.custom_chat_template replaces the model folder's chat template for the prompts `verl train`
// renders (verl's HFModelConfig sets it on the tokenizer): a validation-only run logs its rendered inputs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"

namespace verl::test {
namespace {

// The inputs of a validation-only run's logged generations.
std::vector<std::string> validation_inputs(const DigitCompletionSetup& setup, const std::string& name,
                                           const std::vector<std::string>& extra) {
  const std::string run_dir = make_temp_dir(name);
  std::vector<std::string> all = setup.base_overrides(run_dir);
  all.insert(all.end(), {"trainer.val_before_train=true", "trainer.val_only=true", "trainer.log_val_generations=4",
                         "data.max_prompt_length=24", "trainer.logger=[jsonl]"});
  all.insert(all.end(), extra.begin(), extra.end());
  const CommandResult r = run_command(verl_train_command(all));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> inputs;
  std::istringstream lines(read_file(run_dir + "/val_generations.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) inputs.push_back(nlohmann::json::parse(line)["input"].get<std::string>());
  }
  return inputs;
}

TEST(CustomChatTemplate, TheActorsTemplateRendersTheTrainersPrompts) {
  const DigitCompletionSetup setup = make_digit_completion_setup(make_temp_dir("custom_template_setup"), 4);
  const std::vector<std::string> folder = validation_inputs(setup, "custom_template_folder", {});
  // The user message's content twice: nothing the folder's template would write.
  const std::vector<std::string> custom = validation_inputs(
      setup, "custom_template_custom",
      {"actor_rollout_ref.model.custom_chat_template=\"{{ messages[0].content }}{{ messages[0].content }}\""});
  ASSERT_EQ(folder.size(), 4u);
  ASSERT_EQ(custom.size(), folder.size());
  for (size_t i = 0; i < custom.size(); ++i) {
    ASSERT_FALSE(custom[i].empty());
    ASSERT_EQ(custom[i].size() % 2, 0u) << custom[i];
    const std::string half = custom[i].substr(0, custom[i].size() / 2);
    EXPECT_EQ(custom[i], half + half);
    EXPECT_NE(folder[i].find(half), std::string::npos) << folder[i] << " vs " << half;
    EXPECT_NE(folder[i], custom[i]);
  }
}

}  // namespace
}  // namespace verl::test
