// StatefulDataLoader: the batch order equals PyTorch's DataLoader + RandomSampler (committed reference from
// tests/golden/data/gen_dataloader_order.py), batches are the dataset's collated rows, and a loader restored
// from a saved state after k batches returns exactly the remaining batches of an uninterrupted run.
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/data/dataloader.h"
#include "verl/io/parquet/writer.h"

namespace verl::data {
namespace {

using io::Struct;
using io::Value;
using nlohmann::json;

// A character-level tokenizer (ids are irrelevant here) and a dataset whose row i has ground truth "i".
std::shared_ptr<const RLHFDataset> numbered_dataset(int64_t n) {
  const std::string dir = test::make_temp_dir(str_cat("loader_", n));
  std::string vocab = R"("<pad>":0,"<eos>":1,"<unk>":2)";
  for (char c = 'a'; c <= 'z'; ++c) vocab += str_cat(",\"", c, "\":", 3 + (c - 'a'));
  test::write_file(dir + "/tokenizer.json",
                   R"({"model":{"type":"BPE","vocab":{)" + vocab + R"(},"unk_token":"<unk>","merges":[]}})");
  test::write_file(dir + "/tokenizer_config.json",
                   json{{"pad_token", "<pad>"},
                        {"eos_token", "<eos>"},
                        {"chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}"}}
                       .dump());
  std::vector<Value> rows;
  for (int64_t i = 0; i < n; ++i) {
    rows.push_back(Value(Struct{{"data_source", "numbers"},
                                {"prompt", io::List{Value(Struct{{"role", "user"}, {"content", "abc"}})}},
                                {"reward_model", Value(Struct{{"ground_truth", std::to_string(i)}})}}));
  }
  io::parquet::write_parquet(dir + "/rows.parquet", rows);
  config::DataConfig c;
  c.prompt_key = "prompt";
  c.max_prompt_length = 4;
  c.truncation = "error";
  return std::make_shared<const RLHFDataset>(
      std::vector<std::string>{dir + "/rows.parquet"},
      std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir)), c);
}

std::vector<int64_t> rows_of(const protocol::DataProto& batch) {
  std::vector<int64_t> rows;
  for (const auto& rm : batch.column("reward_model")) rows.push_back(std::stoll(rm["ground_truth"].get<std::string>()));
  return rows;
}

TEST(StatefulDataLoader, OrderEqualsPyTorchDataLoader) {
  const json reference =
      json::parse(test::read_file(std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/data/dataloader_order_reference.json"));
  ASSERT_EQ(reference["cases"].size(), 4u);
  for (const auto& c : reference["cases"]) {
    auto dataset = numbered_dataset(c["size"]);
    StatefulDataLoader loader(dataset, c["batch_size"], c["shuffle"], c["seed"], c["drop_last"]);
    EXPECT_EQ(loader.batches_per_epoch(), static_cast<int64_t>(c["epochs"][0].size())) << c["name"];
    for (size_t epoch = 0; epoch < c["epochs"].size(); ++epoch) {
      loader.start_epoch(static_cast<int64_t>(epoch));
      std::vector<std::vector<int64_t>> seen;
      while (loader.has_next()) {
        protocol::DataProto batch = loader.next();
        EXPECT_EQ(batch.tensor("input_ids").size(1), 4);
        seen.push_back(rows_of(batch));
      }
      EXPECT_EQ(json(seen), c["epochs"][epoch]) << c["name"] << " epoch " << epoch;
    }
  }
}

TEST(StatefulDataLoader, ResumeAfterKBatchesGivesTheRemainingBatches) {
  auto dataset = numbered_dataset(23);
  auto run = [&](StatefulDataLoader& loader, int64_t from_epoch, int64_t epochs, int64_t stop_after,
                 std::vector<std::vector<int64_t>>& seen) {
    for (int64_t epoch = from_epoch; epoch < epochs; ++epoch) {
      loader.start_epoch(epoch);
      while (loader.has_next()) {
        if (stop_after >= 0 && static_cast<int64_t>(seen.size()) == stop_after) return;
        seen.push_back(rows_of(loader.next()));
      }
    }
  };
  StatefulDataLoader uninterrupted(dataset, 4, true, 5, true);
  std::vector<std::vector<int64_t>> expected;
  run(uninterrupted, 0, 3, -1, expected);
  ASSERT_EQ(expected.size(), 15u);

  for (int64_t k : {0, 1, 3, 5, 7, 14}) {
    StatefulDataLoader before(dataset, 4, true, 5, true);
    std::vector<std::vector<int64_t>> seen;
    run(before, 0, 3, k, seen);
    const json saved = json::parse(before.state_dict().dump());  // as written to a checkpoint

    StatefulDataLoader after(dataset, 4, true, 5, true);
    after.load_state_dict(saved);
    // The trainer resumes at epoch global_step // len(loader), as verl does.
    run(after, k / after.batches_per_epoch(), 3, -1, seen);
    EXPECT_EQ(seen, expected) << "resumed after " << k << " batches";
  }
}

TEST(StatefulDataLoader, StateFromOtherSettingsIsRejected) {
  auto dataset = numbered_dataset(12);
  StatefulDataLoader loader(dataset, 4, true, 5, true);
  loader.start_epoch(0);
  EXPECT_EQ(loader.peek_rows(), rows_of(loader.next()));
  StatefulDataLoader other_batch(dataset, 3, true, 5, true);
  EXPECT_THROW(other_batch.load_state_dict(loader.state_dict()), Error);
  StatefulDataLoader other_seed(dataset, 4, true, 6, true);
  EXPECT_THROW(other_seed.load_state_dict(loader.state_dict()), Error);
  while (loader.has_next()) loader.next();
  EXPECT_THROW(loader.next(), Error);
  EXPECT_THROW(StatefulDataLoader(dataset, 13, true, 5, true), Error);  // drop_last leaves no batch
}

}  // namespace
}  // namespace verl::data
