// DataProto operations against hand-built expectations (verl's tests/test_protocol_on_cpu.py cases).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "verl/common/error.h"
#include "verl/protocol/data_proto.h"

namespace verl::protocol {
namespace {

// Rows 0..n-1: obs = [[0,1],[2,3],...], labels = "a","b",...
DataProto make(int64_t n) {
  TensorMap tensors;
  tensors["obs"] = torch::arange(2 * n, torch::kInt64).reshape({n, 2});
  tensors["score"] = torch::arange(n, torch::kFloat32) * 0.5;
  NonTensorMap columns;
  for (int64_t i = 0; i < n; ++i) columns["label"].push_back(std::string(1, static_cast<char>('a' + i)));
  return DataProto::from_dict(tensors, columns, {{"temperature", 1.0}});
}

std::vector<int64_t> first_column(const DataProto& d) {
  torch::Tensor obs = d.tensor("obs").select(1, 0).contiguous();
  return std::vector<int64_t>(obs.data_ptr<int64_t>(), obs.data_ptr<int64_t>() + obs.numel());
}

std::vector<std::string> labels(const DataProto& d) {
  std::vector<std::string> out;
  for (const auto& v : d.column("label")) out.push_back(v.get<std::string>());
  return out;
}

TEST(DataProto, FromDictRejectsRowMismatch) {
  TensorMap tensors{{"a", torch::zeros({3, 2})}, {"b", torch::zeros({4})}};
  EXPECT_THROW(DataProto::from_dict(tensors), Error);
  NonTensorMap columns{{"uid", {Json("x"), Json("y")}}};
  EXPECT_THROW(DataProto::from_dict({{"a", torch::zeros({3})}}, columns), Error);
}

TEST(DataProto, RepeatInterleavedAndTiled) {
  DataProto d = make(2);
  EXPECT_EQ(first_column(d.repeat(3, true)), (std::vector<int64_t>{0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(labels(d.repeat(2, true)), (std::vector<std::string>{"a", "a", "b", "b"}));
  EXPECT_EQ(first_column(d.repeat(2, false)), (std::vector<int64_t>{0, 2, 0, 2}));
  EXPECT_EQ(d.repeat(2).meta_info["temperature"], 1.0);
}

TEST(DataProto, ChunkThenConcatRestoresRows) {
  DataProto d = make(6);
  auto parts = d.chunk(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(labels(parts[1]), (std::vector<std::string>{"c", "d"}));
  DataProto back = DataProto::concat(parts);
  EXPECT_TRUE(torch::equal(back.tensor("obs"), d.tensor("obs")));
  EXPECT_EQ(labels(back), labels(d));
  EXPECT_THROW(d.chunk(4), Error);
}

TEST(DataProto, SplitLeavesShortLastPart) {
  auto parts = make(5).split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].size(), 1);
  EXPECT_EQ(labels(parts[2]), (std::vector<std::string>{"e"}));
}

TEST(DataProto, PadToDivisorCyclesFromTheStartAndUnpads) {
  DataProto d = make(5);
  int64_t pad = d.pad_to_divisor(4);
  EXPECT_EQ(pad, 3);
  EXPECT_EQ(labels(d), (std::vector<std::string>{"a", "b", "c", "d", "e", "a", "b", "c"}));
  d.unpad(pad);
  EXPECT_EQ(labels(d), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  DataProto tiny = make(1);
  EXPECT_EQ(tiny.pad_to_divisor(3), 2);
  EXPECT_EQ(labels(tiny), (std::vector<std::string>{"a", "a", "a"}));
  EXPECT_EQ(make(4).pad_to_divisor(2), 0);
}

TEST(DataProto, ReorderAndIndex) {
  DataProto d = make(4);
  d.reorder({2, 0, 3, 1});
  EXPECT_EQ(labels(d), (std::vector<std::string>{"c", "a", "d", "b"}));
  EXPECT_EQ(first_column(d), (std::vector<int64_t>{4, 0, 6, 2}));
  EXPECT_THROW(d.reorder({0, 0, 1, 2}), Error);
  EXPECT_EQ(labels(make(3).index({2, 2, 0})), (std::vector<std::string>{"c", "c", "a"}));
}

TEST(DataProto, UnionMergesAndRejectsConflicts) {
  DataProto d = make(3);
  DataProto extra = DataProto::from_dict({{"values", torch::ones({3, 4})}}, {}, {{"eos", 2}});
  d.union_with(extra);
  EXPECT_TRUE(d.has_tensor("values"));
  EXPECT_EQ(d.meta_info["eos"], 2);
  // Same key, same value: fine.
  d.union_with(make(3));
  // Same key, different value: error.
  DataProto other = make(3);
  other.batch["obs"] = other.batch["obs"] + 1;
  EXPECT_THROW(d.union_with(other), Error);
  DataProto meta_clash = DataProto::from_dict({}, {}, {{"temperature", 0.5}});
  EXPECT_THROW(d.union_with(meta_clash), Error);
  EXPECT_THROW(d.union_with(make(2)), Error);
}

TEST(DataProto, SelectAndPop) {
  DataProto d = make(3);
  DataProto s = d.select({"obs"}, {"label"});
  EXPECT_EQ(s.batch.size(), 1u);
  EXPECT_TRUE(s.meta_info.empty());
  DataProto popped = d.pop({"score"});
  EXPECT_TRUE(popped.has_tensor("score"));
  EXPECT_FALSE(d.has_tensor("score"));
  EXPECT_THROW(d.select({"nope"}), Error);
}

TEST(DataProto, ConcatCollectsMetricsAndChecksMeta) {
  DataProto a = make(2), b = make(2);
  a.meta_info["metrics"] = {{"actor/pg_loss", 0.5}};
  b.meta_info["metrics"] = {{"actor/pg_loss", Json::array({0.25, 0.125})}};
  DataProto c = DataProto::concat({a, b});
  EXPECT_EQ(c.meta_info["metrics"]["actor/pg_loss"], Json::array({0.5, 0.25, 0.125}));
  b.meta_info["temperature"] = 0.7;
  EXPECT_THROW(DataProto::concat({a, b}), Error);
}

TEST(DataProto, SerializeRoundTripsExactly) {
  DataProto d = make(3);
  d.batch["mask"] = torch::tensor({true, false, true});
  d.batch["half"] = torch::randn({3, 5}).to(torch::kBFloat16);
  d.batch["f64"] = torch::randn({3, 2, 2}, torch::kFloat64);
  d.non_tensor_batch["reward_model"] = {Json{{"ground_truth", "72"}, {"style", "rule"}}, Json(nullptr),
                                        Json::array({1, 2.5, "x"})};
  d.meta_info["eos_token_id"] = Json::array({1, 2});
  std::string bytes = d.serialize();
  DataProto back = DataProto::deserialize(bytes);
  ASSERT_EQ(back.batch.size(), d.batch.size());
  for (const auto& [key, value] : d.batch) {
    EXPECT_EQ(back.tensor(key).scalar_type(), value.scalar_type()) << key;
    EXPECT_TRUE(torch::equal(back.tensor(key), value)) << key;
  }
  EXPECT_EQ(back.non_tensor_batch, d.non_tensor_batch);
  EXPECT_EQ(back.meta_info, d.meta_info);
  EXPECT_EQ(back.serialize(), bytes);
}

TEST(DataProto, DeserializeRejectsCorruptBytes) {
  std::string bytes = make(3).serialize();
  for (size_t cut : {size_t(0), size_t(5), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_THROW(DataProto::deserialize(bytes.substr(0, cut)), Error) << "cut at " << cut;
  }
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_THROW(DataProto::deserialize(bad_magic), Error);
  EXPECT_THROW(DataProto::deserialize(bytes + "extra"), Error);
}

}  // namespace
}  // namespace verl::protocol
