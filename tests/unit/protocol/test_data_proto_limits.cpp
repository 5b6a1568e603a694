// The DataProto wire format (what MPI ranks send each other) read from hostile bytes: nesting in the CBOR meta
// and columns is bounded, and a tensor's size is checked against the bytes present before it is allocated.
#include <gtest/gtest.h>

#include <cstring>

#include "verl/common/error.h"
#include "verl/protocol/data_proto.h"

namespace verl::protocol {
namespace {

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
void put_blob(std::string& out, const std::string& blob) {
  put<uint64_t>(out, blob.size());
  out += blob;
}

std::string data_proto_limits_error_of(const std::string& bytes) {
  try {
    DataProto::deserialize(bytes);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The header of a serialized DataProto up to its tensor count, with the given CBOR meta and columns.
std::string header(const std::string& meta, const std::string& columns) {
  std::string out = "VERLDP";
  put<uint32_t>(out, 1);
  put_blob(out, meta);
  put_blob(out, columns);
  return out;
}

TEST(DataProtoLimits, DeeplyNestedCborMetaIsAnError) {
  const std::string empty_object = "\xa0";  // CBOR {}
  std::string deep(100000, '\x81');       // CBOR: an array of one element, 100000 times
  deep += '\xf6';                          // null
  std::string bytes = header(deep, empty_object);
  put<uint32_t>(bytes, 0);
  const std::string e = data_proto_limits_error_of(bytes);
  EXPECT_NE(e.find("nested deeper than 256 levels (limit 256)"), std::string::npos) << e;
  // 200 levels are fine (the meta must still be an object to be used, so wrap it).
  std::string ok = "\xa1\x61k" + std::string(200, '\x81') + "\xf6";
  bytes = header(ok, empty_object);
  put<uint32_t>(bytes, 0);
  EXPECT_EQ(data_proto_limits_error_of(bytes), "");
}

TEST(DataProtoLimits, TensorSizeIsCheckedAgainstTheBytesBeforeAllocating) {
  // The dtype code of float32, from a real serialization.
  DataProto real = DataProto::from_dict({{"x", torch::zeros({2}, torch::kFloat32)}});
  const std::string good = real.serialize();
  const std::string head = header("\xa0", "\xa0");
  ASSERT_EQ(good.compare(0, head.size(), head), 0) << "format changed";
  size_t pos = head.size() + sizeof(uint32_t) + sizeof(uint64_t) + 1;  // count, key length, key "x"
  const uint8_t float32_code = static_cast<uint8_t>(good[pos]);

  // [2^20, 2^18] float32: 1 TiB claimed, 0 bytes present.
  std::string bytes = head;
  put<uint32_t>(bytes, 1);
  put_blob(bytes, "x");
  put<uint8_t>(bytes, float32_code);
  put<uint32_t>(bytes, 2);
  put<int64_t>(bytes, int64_t{1} << 20);
  put<int64_t>(bytes, int64_t{1} << 18);
  put<uint64_t>(bytes, uint64_t{1} << 40);
  const std::string e = data_proto_limits_error_of(bytes);
  EXPECT_NE(e.find("serialized DataProto is truncated: tensor 'x' needs 1099511627776 bytes, 0 left"),
            std::string::npos) << e;
}


// Found by fuzz/fuzz_data_proto.cpp (fuzz/corpus/data_proto/regression-meta-not-an-object): meta_info read as a
// CBOR array was accepted, and a worker's meta_info.value(...) on it would throw nlohmann's type_error.
TEST(DataProtoLimits, MetaOrColumnsThatAreNotObjectsAreErrors) {
  std::string bytes = header("\x80", "\xa0");  // meta [], columns {}
  put<uint32_t>(bytes, 0);
  std::string e = data_proto_limits_error_of(bytes);
  EXPECT_NE(e.find("serialized DataProto has a meta_info of type array, expected a JSON object"), std::string::npos)
      << e;
  bytes = header("\xa0", "\x05");  // meta {}, columns 5
  put<uint32_t>(bytes, 0);
  e = data_proto_limits_error_of(bytes);
  EXPECT_NE(e.find("serialized DataProto has columns of type number, expected a JSON object of arrays"),
            std::string::npos) << e;
}

// Found by the same harness under UBSan (regression-zero-row-tensor): a tensor with no elements was copied with
// memcpy into its null data_ptr(). Its round trip keeps the dtype and shape.
TEST(DataProtoLimits, ZeroRowTensorRoundTrips) {
  DataProto proto = DataProto::from_dict({{"values", torch::empty({0, 4}, torch::kFloat32)}}, {{"uid", {}}});
  DataProto back = DataProto::deserialize(proto.serialize());
  EXPECT_EQ(back.tensor("values").sizes(), torch::IntArrayRef({0, 4}));
  EXPECT_EQ(back.tensor("values").scalar_type(), torch::kFloat32);
  EXPECT_EQ(back.column("uid").size(), 0u);
}

// Found by the same harness (regression-zero-dim-stride-overflow): a zero extent let the other extents be
// anything, and torch::empty's stride computation threw c10::Error ("Stride calculation overflowed").
TEST(DataProtoLimits, HugeExtentsBesideAZeroExtentAreErrors) {
  const std::string good = DataProto::from_dict({{"x", torch::zeros({2}, torch::kFloat32)}}).serialize();
  const std::string head = header("\xa0", "\xa0");
  const uint8_t float32_code = static_cast<uint8_t>(good[head.size() + sizeof(uint32_t) + sizeof(uint64_t) + 1]);
  std::string bytes = head;
  put<uint32_t>(bytes, 1);
  put_blob(bytes, "x");
  put<uint8_t>(bytes, float32_code);
  put<uint32_t>(bytes, 3);
  put<int64_t>(bytes, 0);
  put<int64_t>(bytes, int64_t{1} << 40);
  put<int64_t>(bytes, int64_t{1} << 40);
  put<uint64_t>(bytes, 0);
  const std::string e = data_proto_limits_error_of(bytes);
  EXPECT_NE(e.find("serialized tensor 'x' has a bad shape (extent 1099511627776 in dimension 2"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace verl::protocol
