// data.custom_cls against verl 0.9.1 itself: a subclass of verl's own RLHFDataset in the form verl's recipes write
// (tests/oracle/custom_dataset_class.py: HF datasets reads raw GSM8K JSON Lines, verl's base class filters overlong
// prompts with the transformers tokenizer it is given and builds the row dicts) is run by verl.cpp in its child
// Python (with .venv/test's packages and a ray import stub), and by tests/oracle/custom_dataset_oracle.py as verl's
// create_rl_dataset runs it (verl's hf_tokenizer, an OmegaConf config). The same rows, every field, and each
// prompt's ids as verl's agent loop renders raw_prompt (transformers' apply_chat_template) equal to the ids
// verl.cpp's RLHFDataset gives (its own tokenizer and chat template).
#include <gtest/gtest.h>

#include <filesystem>

#include "support/fixtures.h"
#include "support/run_command.h"
#include "support/scoped_env.h"
#include "support/test_python.h"
#include "support/tiny_sft_setup.h"
#include "verl/data/custom_dataset.h"
#include "verl/data/rl_dataset.h"

namespace verl::test {
namespace {

using Json = nlohmann::json;

const std::string kCustomDatasetOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/custom_dataset_oracle.py";
const std::string kCustomDatasetClassFile = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/custom_dataset_class.py";

TEST(CustomDatasetOracle, AVerlRLHFDatasetSubclassGivesVerlsRowsAndPromptIds) {
  if (!test_python_imports("datasets")) FAIL() << "datasets: " << test_python_missing_hint();
  const std::string dir = make_temp_dir("custom_dataset_oracle");
  const std::string tokenizer_dir = dir + "/tokenizer";
  tokenizer::write_byte_level_bpe_folder(tokenizer_dir, demo_like_tokenizer_spec());
  const int64_t max_prompt_length = 170;  // some of the first 40 GSM8K questions are longer: verl's filter drops them
  const Json config = {{"prompt_key", "prompt"},
                       {"max_prompt_length", max_prompt_length},
                       {"filter_overlong_prompts", true},
                       {"filter_overlong_prompts_workers", 1},
                       {"truncation", "error"},
                       {"return_raw_chat", true},
                       {"apply_chat_template_kwargs", Json::object()},
                       {"cache_dir", dir + "/cache"}};
  const std::vector<std::string> files = {fixtures_dir() + "/gsm8k/test.jsonl"};
  const int64_t max_samples = 40;

  // verl's side.
  const Json spec = {{"path", kCustomDatasetClassFile}, {"name", "GsmDataset"}, {"data_files", files},
                     {"tokenizer_dir", tokenizer_dir},  {"config", config},     {"max_samples", max_samples}};
  write_file(dir + "/spec.json", spec.dump());
  const CommandResult r =
      run_command(test_python() + kCustomDatasetOracle + " " + dir + "/spec.json " + dir + "/verl.json");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const Json verl_rows = Json::parse(read_file(dir + "/verl.json")).at("rows");
  ASSERT_GT(verl_rows.size(), 5u);
  ASSERT_LT(verl_rows.size(), static_cast<size_t>(max_samples)) << "the filter dropped nothing: a weaker check";

  // verl.cpp's side: .venv/test's packages (transformers, datasets, torch, verl) and the ray stub.
  const ScopedEnvVar site("VERL_PYTHON_SITE_PACKAGES", std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                                                           "/tests/oracle/ray_stub:" VERL_SOURCE_DIR_FOR_TESTS
                                                           "/.venv/test/lib/python3.11/site-packages");
  const ScopedEnvVar plugins("VERL_USE_EXTERNAL_PLUGINS", "none");
  data::CustomDatasetRequest request;
  request.path = kCustomDatasetClassFile;
  request.name = "GsmDataset";
  request.data_files = files;
  request.tokenizer_path = tokenizer_dir;
  request.config = config;
  request.max_samples = max_samples;
  request.what = "train";
  data::CustomDatasetRows rows = data::load_custom_dataset(request);
  EXPECT_EQ(rows.dropped_tensors, std::vector<std::string>{"dummy_tensor"});
  config::DataConfig data_config;
  data_config.prompt_key = "prompt";
  // verl's filter measured the `prompt` column; the class's __getitem__ then adds a system message to raw_prompt, so
  // a rendered prompt may pass the filter's limit (as it would in verl): the padding width here leaves room for it,
  // so that no prompt is truncated (truncation: unit.RLHFDataset).
  data_config.max_prompt_length = max_prompt_length + 40;
  data_config.truncation = "error";
  data_config.return_raw_chat = true;
  const data::RLHFDataset dataset(
      std::move(rows), std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(tokenizer_dir)),
      data_config);
  ASSERT_EQ(dataset.size(), static_cast<int64_t>(verl_rows.size()));
  std::vector<int64_t> all(verl_rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const protocol::DataProto batch = dataset.collate(all);

  for (size_t i = 0; i < verl_rows.size(); ++i) {
    const Json& verl = verl_rows[i];
    EXPECT_EQ(batch.non_tensor_batch.at("raw_prompt_ids")[i], verl.at("prompt_ids")) << "row " << i;
    for (const auto& [key, value] : verl.at("fields").items()) {
      ASSERT_TRUE(batch.non_tensor_batch.count(key)) << "row " << i << ": no column " << key;
      EXPECT_EQ(batch.non_tensor_batch.at(key)[i], value) << "row " << i << " " << key;
    }
  }
  EXPECT_EQ(batch.non_tensor_batch.at("raw_prompt")[0][0]["content"], "You are a careful solver.");
}

}  // namespace
}  // namespace verl::test
