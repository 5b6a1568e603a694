// data.chat_template_timeout reaches the dataset's chat template: a prompt whose template never ends is an error
// naming the template's file, the key and the row, after the configured seconds (issue 25); a negative value is
// a config error naming the key. With the time limit perturbed to 0 the first test hung (killed after 100 s).
#include <gtest/gtest.h>

#include <chrono>

#include "support/char_tokenizer.h"
#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/config/config_loader.h"
#include "verl/data/rl_dataset.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::data {
namespace {

TEST(RLHFDatasetTemplateLimit, ATemplateWithoutEndFailsTheRowAfterTheConfiguredSeconds) {
  const std::string dir = test::make_temp_dir("rl_template_limit");
  test::write_char_tokenizer(dir + "/tok");
  test::write_file(dir + "/tok/chat_template.jinja",
                   "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}");
  test::write_file(dir + "/rows.jsonl", R"({"prompt": [{"role": "user", "content": "12"}], "data_source": "x"})"
                                        "\n");
  auto tokenizer =
      std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir + "/tok"));
  config::DataConfig c;
  c.prompt_key = "prompt";
  c.reward_fn_key = "data_source";
  c.max_prompt_length = 8;
  c.truncation = "error";
  c.shuffle = false;
  c.chat_template_timeout = 1;
  RLHFDataset dataset({dir + "/rows.jsonl"}, tokenizer, c);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = test::error_of([&] { dataset.collate({0}); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(error.find("rows.jsonl' row 0"), std::string::npos) << error;
  EXPECT_NE(error.find("chat template from '" + dir + "/tok/chat_template.jinja' did not return within 1 s "
                       "(data.chat_template_timeout)"),
            std::string::npos)
      << error;
  EXPECT_LT(seconds, 20);
}

TEST(RLHFDatasetTemplateLimit, ANegativeTimeoutIsAConfigErrorNamingTheKey) {
  config::ConfigArgs args;
  args.overrides = {"data.chat_template_timeout=-1"};
  const std::string error = test::error_of([&] { config::load_config(args); });
  EXPECT_NE(error.find("data.chat_template_timeout must be a number of seconds >= 0 (0: no limit), got -1"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace verl::data
