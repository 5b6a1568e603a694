// The training order: PyTorch's RandomSampler order for the same seed, drop_last, and exact resumption.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/common/error.h"
#include "verl/data/batch_sampler.h"

namespace verl::data {
namespace {

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

TEST(BatchSampler, ShuffledOrderEqualsPyTorchRandomSampler) {
  // Independent reference: PyTorch's own RandomSampler with a generator seeded like verl's.
  test::CommandResult py = test::run_command(
      test::test_python() + "-c \"import torch, json\n"
      "from torch.utils.data import RandomSampler\n"
      "g = torch.Generator(); g.manual_seed(7)\n"
      "s = RandomSampler(range(10), generator=g)\n"
      "print(json.dumps([list(s), list(s), list(s)]))\"");
  if (py.exit_code != 0) FAIL() << test::test_python_missing_hint() << ": " << py.err;
  auto expected = nlohmann::json::parse(py.out);
  BatchSampler sampler({10, 5, true, 7, true});
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(nlohmann::json(flatten(sampler.epoch_batches(epoch))), expected[epoch]) << "epoch " << epoch;
  }
}

TEST(BatchSampler, SequentialWithAndWithoutDropLast) {
  BatchSampler dropping({7, 3, false, 1, true});
  EXPECT_EQ(dropping.batches_per_epoch(), 2);
  EXPECT_EQ(dropping.epoch_batches(0), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
  BatchSampler keeping({7, 3, false, 1, false});
  EXPECT_EQ(keeping.batches_per_epoch(), 3);
  EXPECT_EQ(keeping.epoch_batches(1).back(), (std::vector<int64_t>{6}));
}

TEST(BatchSampler, EveryEpochIsAPermutationAndEpochsDiffer) {
  BatchSampler sampler({50, 10, true, 3, true});
  auto first = flatten(sampler.epoch_batches(0));
  auto second = flatten(sampler.epoch_batches(1));
  EXPECT_NE(first, second);
  std::sort(first.begin(), first.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(first[static_cast<size_t>(i)], i);
}

TEST(BatchSampler, ResumeContinuesWithExactlyTheRemainingBatches) {
  BatchSamplerOptions options{20, 4, true, 11, true};
  BatchSampler uninterrupted(options);
  std::vector<std::vector<int64_t>> expected;
  for (int epoch = 0; epoch < 2; ++epoch) {
    uninterrupted.start_epoch(epoch);
    while (!uninterrupted.epoch_done()) expected.push_back(uninterrupted.next_batch());
  }

  BatchSampler before(options);
  std::vector<std::vector<int64_t>> seen;
  before.start_epoch(0);
  for (int i = 0; i < 3; ++i) seen.push_back(before.next_batch());
  nlohmann::json saved = nlohmann::json::parse(before.state_dict().dump());

  BatchSampler after(options);
  after.load_state_dict(saved);
  for (int64_t epoch = after.epoch(); epoch < 2; ++epoch) {
    after.start_epoch(epoch);
    while (!after.epoch_done()) seen.push_back(after.next_batch());
  }
  EXPECT_EQ(seen, expected);
}

TEST(BatchSampler, MismatchedOrCorruptStateIsAnError) {
  BatchSampler sampler({20, 4, true, 11, true});
  nlohmann::json state = sampler.state_dict();
  BatchSampler other_seed({20, 4, true, 12, true});
  EXPECT_THROW(other_seed.load_state_dict(state), Error);
  EXPECT_THROW(sampler.load_state_dict(nlohmann::json{{"epoch", 1}}), Error);
  state["next_batch"] = 99;
  EXPECT_THROW(sampler.load_state_dict(state), Error);
}

TEST(BatchSampler, TooFewRowsForOneBatchIsAnError) {
  EXPECT_THROW(BatchSampler({3, 4, true, 1, true}), Error);
  EXPECT_THROW(BatchSampler({3, 0, true, 1, true}), Error);
}

}  // namespace
}  // namespace verl::data
