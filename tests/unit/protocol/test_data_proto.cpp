// DataProto operations against hand-built expectations (verl's tests/test_protocol_on_cpu.py cases).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "support/error_text.h"
#include "verl/common/error.h"
#include "verl/protocol/data_proto.h"

namespace verl::protocol {
namespace {

using verl::test::error_of;

// Rows 0..n-1: obs = [[0,1],[2,3],...], labels = "a","b",...
DataProto data_proto_make(int64_t n) {
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
  DataProto d = data_proto_make(2);
  EXPECT_EQ(first_column(d.repeat(3, true)), (std::vector<int64_t>{0, 0, 0, 2, 2, 2}));
  EXPECT_EQ(labels(d.repeat(2, true)), (std::vector<std::string>{"a", "a", "b", "b"}));
  EXPECT_EQ(first_column(d.repeat(2, false)), (std::vector<int64_t>{0, 2, 0, 2}));
  EXPECT_EQ(d.repeat(2).meta_info["temperature"], 1.0);
}

TEST(DataProto, ChunkThenConcatRestoresRows) {
  DataProto d = data_proto_make(6);
  auto parts = d.chunk(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(labels(parts[1]), (std::vector<std::string>{"c", "d"}));
  DataProto back = DataProto::concat(parts);
  EXPECT_TRUE(torch::equal(back.tensor("obs"), d.tensor("obs")));
  EXPECT_EQ(labels(back), labels(d));
  EXPECT_THROW(d.chunk(4), Error);
}

TEST(DataProto, SplitLeavesShortLastPart) {
  auto parts = data_proto_make(5).split(2);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].size(), 1);
  EXPECT_EQ(labels(parts[2]), (std::vector<std::string>{"e"}));
}

TEST(DataProto, PadToDivisorCyclesFromTheStartAndUnpads) {
  DataProto d = data_proto_make(5);
  int64_t pad = d.pad_to_divisor(4);
  EXPECT_EQ(pad, 3);
  EXPECT_EQ(labels(d), (std::vector<std::string>{"a", "b", "c", "d", "e", "a", "b", "c"}));
  d.unpad(pad);
  EXPECT_EQ(labels(d), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  DataProto tiny = data_proto_make(1);
  EXPECT_EQ(tiny.pad_to_divisor(3), 2);
  EXPECT_EQ(labels(tiny), (std::vector<std::string>{"a", "a", "a"}));
  EXPECT_EQ(data_proto_make(4).pad_to_divisor(2), 0);
}

TEST(DataProto, ReorderAndIndex) {
  DataProto d = data_proto_make(4);
  d.reorder({2, 0, 3, 1});
  EXPECT_EQ(labels(d), (std::vector<std::string>{"c", "a", "d", "b"}));
  EXPECT_EQ(first_column(d), (std::vector<int64_t>{4, 0, 6, 2}));
  EXPECT_THROW(d.reorder({0, 0, 1, 2}), Error);
  EXPECT_EQ(labels(data_proto_make(3).index({2, 2, 0})), (std::vector<std::string>{"c", "c", "a"}));
}

TEST(DataProto, UnionMergesAndRejectsConflicts) {
  DataProto d = data_proto_make(3);
  DataProto extra = DataProto::from_dict({{"values", torch::ones({3, 4})}}, {}, {{"eos", 2}});
  d.union_with(extra);
  EXPECT_TRUE(d.has_tensor("values"));
  EXPECT_EQ(d.meta_info["eos"], 2);
  // Same key, same value: fine.
  d.union_with(data_proto_make(3));
  // Same key, different value: error.
  DataProto other = data_proto_make(3);
  other.batch["obs"] = other.batch["obs"] + 1;
  EXPECT_THROW(d.union_with(other), Error);
  DataProto meta_clash = DataProto::from_dict({}, {}, {{"temperature", 0.5}});
  EXPECT_THROW(d.union_with(meta_clash), Error);
  EXPECT_THROW(d.union_with(data_proto_make(2)), Error);
}

TEST(DataProto, UnionRowsKeepsThisMetaAndStillRejectsConflictingRows) {
  DataProto d = data_proto_make(3);
  // A worker's output: new tensors and a column, plus timing and a meta key that clashes with the batch's.
  DataProto output = DataProto::from_dict({{"values", torch::ones({3, 4})}}, {{"reward_source", {"rm", "rm", "rule"}}},
                                          {{"temperature", 0.5}, {"timing", {{"gen", 1.5}}}});
  d.union_rows_with(output);
  EXPECT_TRUE(d.has_tensor("values"));
  EXPECT_EQ(d.column("reward_source")[2], "rule");
  EXPECT_EQ(d.meta_info["temperature"], 1.0);
  EXPECT_FALSE(d.meta_info.contains("timing"));
  DataProto other = data_proto_make(3);
  other.batch["obs"] = other.batch["obs"] + 1;
  EXPECT_NE(error_of([&] { d.union_rows_with(other); }).find("tensor 'obs'"), std::string::npos);
  EXPECT_THROW(d.union_rows_with(data_proto_make(2)), Error);
}

TEST(DataProto, SelectAndPop) {
  DataProto d = data_proto_make(3);
  DataProto s = d.select({"obs"}, {"label"});
  EXPECT_EQ(s.batch.size(), 1u);
  EXPECT_TRUE(s.meta_info.empty());
  DataProto popped = d.pop({"score"});
  EXPECT_TRUE(popped.has_tensor("score"));
  EXPECT_FALSE(d.has_tensor("score"));
  EXPECT_THROW(d.select({"nope"}), Error);
}

TEST(DataProto, ConcatCollectsMetricsAndChecksMeta) {
  DataProto a = data_proto_make(2), b = data_proto_make(2);
  a.meta_info["metrics"] = {{"actor/pg_loss", 0.5}};
  b.meta_info["metrics"] = {{"actor/pg_loss", Json::array({0.25, 0.125})}};
  DataProto c = DataProto::concat({a, b});
  EXPECT_EQ(c.meta_info["metrics"]["actor/pg_loss"], Json::array({0.5, 0.25, 0.125}));
  b.meta_info["temperature"] = 0.7;
  EXPECT_THROW(DataProto::concat({a, b}), Error);
}

TEST(DataProto, SerializeRoundTripsExactly) {
  DataProto d = data_proto_make(3);
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
  std::string bytes = data_proto_make(3).serialize();
  for (size_t cut : {size_t(0), size_t(5), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    EXPECT_THROW(DataProto::deserialize(bytes.substr(0, cut)), Error) << "cut at " << cut;
  }
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_THROW(DataProto::deserialize(bad_magic), Error);
  EXPECT_THROW(DataProto::deserialize(bytes + "extra"), Error);
}

// ---- cases the tests above leave out: missing keys, bounds, keep-all select, column conflicts, dtypes ----

TEST(DataProto, MissingKeysAreErrorsNamingTheKey) {
  DataProto d = data_proto_make(2);
  EXPECT_NE(error_of([&] { d.tensor("values"); }).find("'values'"), std::string::npos);
  EXPECT_NE(error_of([&] { d.column("uid"); }).find("'uid'"), std::string::npos);
  EXPECT_NE(error_of([&] { d.select({}, {"uid"}); }).find("'uid'"), std::string::npos);
  EXPECT_NE(error_of([&] { d.select({}, {}, {"eos"}); }).find("'eos'"), std::string::npos);
  EXPECT_NE(error_of([&] { d.pop({"obs", "nope"}); }).find("'nope'"), std::string::npos);
  EXPECT_TRUE(d.has_tensor("obs"));  // a failed pop removes nothing
  EXPECT_EQ(DataProto().size(), 0);
}

TEST(DataProto, SelectSharesStorageKeepsMetaAndKeepsAllWhenAsked) {
  DataProto d = data_proto_make(3);
  DataProto s = d.select({"obs"}, {}, {"temperature"});
  EXPECT_EQ(s.tensor("obs").data_ptr(), d.tensor("obs").data_ptr());
  EXPECT_EQ(s.meta_info, Json({{"temperature", 1.0}}));
  EXPECT_TRUE(s.non_tensor_batch.empty());
  DataProto all = d.select({}, {}, {}, /*keep_all_if_empty=*/true);
  EXPECT_EQ(all.batch.size(), 2u);
  EXPECT_EQ(labels(all), labels(d));
  EXPECT_EQ(all.meta_info, d.meta_info);
  DataProto popped = d.pop({}, {"label"}, {"temperature"});
  EXPECT_EQ(labels(popped), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(popped.meta_info["temperature"], 1.0);
  EXPECT_EQ(d.non_tensor_batch.count("label"), 0u);
  EXPECT_FALSE(d.meta_info.contains("temperature"));
}

TEST(DataProto, UnionRejectsAConflictingColumnAndFillsAnEmptyProto) {
  DataProto d = data_proto_make(2);
  DataProto other = data_proto_make(2);
  other.non_tensor_batch["label"][1] = "z";
  EXPECT_NE(error_of([&] { d.union_with(other); }).find("non-tensor column 'label'"), std::string::npos);
  DataProto dtype_clash = data_proto_make(2);
  dtype_clash.batch["score"] = dtype_clash.batch["score"].to(torch::kFloat64);
  EXPECT_NE(error_of([&] { d.union_with(dtype_clash); }).find("tensor 'score'"), std::string::npos);
  DataProto empty;
  empty.union_with(data_proto_make(2));
  EXPECT_EQ(empty.size(), 2);
  EXPECT_EQ(labels(empty), (std::vector<std::string>{"a", "b"}));
}

TEST(DataProto, BoundsAndCountsAreErrors) {
  DataProto d = data_proto_make(3);
  EXPECT_THROW(d.index({3}), Error);
  EXPECT_THROW(d.index({-1}), Error);
  EXPECT_THROW(d.slice(2, 4), Error);
  EXPECT_THROW(d.slice(2, 1), Error);
  EXPECT_THROW(d.chunk(0), Error);
  EXPECT_THROW(d.split(0), Error);
  EXPECT_THROW(d.repeat(0), Error);
  EXPECT_THROW(d.pad_to_divisor(0), Error);
  EXPECT_THROW(d.unpad(4), Error);
  EXPECT_THROW(d.reorder({0, 1}), Error);
  EXPECT_THROW(DataProto::concat({}), Error);
  DataProto s = d.slice(1, 3);
  EXPECT_EQ(labels(s), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(first_column(s), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(s.meta_info["temperature"], 1.0);
  EXPECT_EQ(d.slice(1, 1).size(), 0);
}

TEST(DataProto, ConcatRejectsPartsWithDifferentKeysAndMergesEveryMetric) {
  DataProto a = data_proto_make(2), b = data_proto_make(1);
  b.batch.erase("score");
  EXPECT_NE(error_of([&] { DataProto::concat({a, b}); }).find("'score'"), std::string::npos);
  DataProto c = data_proto_make(1);
  c.batch["extra"] = torch::zeros({1});
  EXPECT_NE(error_of([&] { DataProto::concat({a, c}); }).find("different keys"), std::string::npos);
  DataProto x = data_proto_make(1), y = data_proto_make(1), z = data_proto_make(1);
  x.meta_info["metrics"] = {{"critic/vf_loss", 1.5}, {"critic/grad_norm", Json::array({2.0, 3.0})}};
  y.meta_info["metrics"] = {{"critic/vf_loss", 0.5}};
  z.meta_info["metrics"] = {{"critic/grad_norm", Json::array({4.0})}, {"critic/lr", 1e-5}};
  Json merged = DataProto::concat({x, y, z}).meta_info["metrics"];
  EXPECT_EQ(merged["critic/vf_loss"], Json::array({1.5, 0.5}));
  EXPECT_EQ(merged["critic/grad_norm"], Json::array({2.0, 3.0, 4.0}));
  EXPECT_EQ(merged["critic/lr"], Json::array({1e-5}));
  x.meta_info["metrics"] = Json::array({1});
  EXPECT_NE(error_of([&] { DataProto::concat({x, y}); }).find("must be an object"), std::string::npos);
}

TEST(DataProto, RepeatTilesColumnsAndKeepsTrailingDimensions) {
  DataProto d = data_proto_make(3);
  d.batch["cube"] = torch::arange(3 * 2 * 2, torch::kInt64).reshape({3, 2, 2});
  DataProto tiled = d.repeat(2, /*interleave=*/false);
  EXPECT_EQ(labels(tiled), (std::vector<std::string>{"a", "b", "c", "a", "b", "c"}));
  EXPECT_EQ(tiled.tensor("cube").sizes(), (std::vector<int64_t>{6, 2, 2}));
  EXPECT_TRUE(torch::equal(tiled.tensor("cube").slice(0, 3, 6), d.tensor("cube")));
  DataProto inter = d.repeat(2);
  EXPECT_TRUE(torch::equal(inter.tensor("cube")[1], d.tensor("cube")[0]));
  EXPECT_TRUE(torch::equal(inter.tensor("cube")[4], d.tensor("cube")[2]));
}

TEST(DataProto, SerializeRoundTripsEveryDtypeEmptyAndStridedInputs) {
  DataProto d = data_proto_make(4);
  const std::vector<torch::ScalarType> dtypes = {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16,
                                                 torch::kInt64,   torch::kInt32,   torch::kInt16,   torch::kInt8,
                                                 torch::kUInt8,   torch::kBool};
  for (size_t i = 0; i < dtypes.size(); ++i) {
    d.batch["t" + std::to_string(i)] = (torch::arange(4 * 3, torch::kFloat64).reshape({4, 3}) * 7.25).to(dtypes[i]);
  }
  d.batch["strided"] = torch::arange(12, torch::kFloat32).reshape({3, 4}).t();  // non-contiguous [4, 3]
  d.batch["nan"] = torch::tensor({std::nan(""), -0.0, std::numeric_limits<double>::infinity(), 1e-45}, torch::kFloat32);
  d.non_tensor_batch["unicode"] = {Json("é∑"), Json(""), Json::object(), Json(-3)};
  DataProto back = DataProto::deserialize(d.serialize());
  for (const auto& [key, value] : d.batch) {
    const torch::Tensor& got = back.tensor(key);
    EXPECT_EQ(got.scalar_type(), value.scalar_type()) << key;
    EXPECT_EQ(got.sizes(), value.sizes()) << key;
    // Bitwise: compare the raw bytes (NaN and -0.0 included).
    torch::Tensor a = got.contiguous(), b = value.contiguous();
    EXPECT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()), 0) << key;
  }
  EXPECT_EQ(back.non_tensor_batch, d.non_tensor_batch);

  DataProto empty_back = DataProto::deserialize(DataProto().serialize());
  EXPECT_EQ(empty_back.size(), 0);
  EXPECT_TRUE(empty_back.batch.empty());
  EXPECT_TRUE(empty_back.meta_info.empty());
  DataProto zero_rows = DataProto::from_dict({{"x", torch::zeros({0, 5}, torch::kInt64)}}, {{"uid", {}}});
  DataProto zero_back = DataProto::deserialize(zero_rows.serialize());
  EXPECT_EQ(zero_back.tensor("x").sizes(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(zero_back.column("uid").size(), 0u);

  std::string bytes = data_proto_make(2).serialize();
  std::string other_version = bytes;
  other_version[6] = 9;  // the uint32 format version follows the 6-byte magic
  EXPECT_NE(error_of([&] { DataProto::deserialize(other_version); }).find("format version 9"), std::string::npos);
  DataProto complex = DataProto::from_dict({{"c", torch::zeros({2}, torch::kComplexFloat)}});
  EXPECT_NE(error_of([&] { complex.serialize(); }).find("unsupported dtype"), std::string::npos);
}

}  // namespace
}  // namespace verl::protocol
