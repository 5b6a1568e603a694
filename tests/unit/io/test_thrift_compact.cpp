// Thrift compact protocol against bytes worked out by hand from the protocol description.
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/io/parquet/thrift_compact.h"

namespace verl::io::parquet {
namespace {

// struct { 1: i32 5, 2: binary "ab", 20: i64 -1, 21: bool true, 22: list<i32> [1, -2] }
const std::vector<uint8_t> kEncoded = {
    0x15, 0x0A,              // field 1 (delta 1), type i32 (5); zigzag(5) = 10
    0x18, 0x02, 'a', 'b',    // field 2 (delta 1), type binary (8); length 2
    0x06, 0x28, 0x01,        // delta 18 > 15: type i64 (6), zigzag field id 20 = 40, zigzag(-1) = 1
    0x11,                    // field 21 (delta 1), type true (1)
    0x19, 0x25, 0x02, 0x03,  // field 22 (delta 1), type list (9); 2 elements of i32 (5); zigzag 1 = 2, -2 = 3
    0x00,                    // stop
};

TEST(ThriftCompact, WriterProducesHandEncodedBytes) {
  ThriftWriter w;
  w.begin_struct();
  w.field_i32(1, 5);
  w.field_binary(2, "ab");
  w.field_i64(20, -1);
  w.field_bool(21, true);
  w.field_list_begin(22, ThriftType::kI32, 2);
  w.write_i32(1);
  w.write_i32(-2);
  w.end_struct();
  EXPECT_EQ(w.bytes(), kEncoded);
}

TEST(ThriftCompact, ReaderDecodesAndSkips) {
  ThriftReader r(kEncoded.data(), kEncoded.size(), "test");
  r.begin_struct();
  int16_t id;
  ThriftType type;
  ASSERT_TRUE(r.read_field(id, type));
  EXPECT_EQ(id, 1);
  EXPECT_EQ(r.read_i32(), 5);
  ASSERT_TRUE(r.read_field(id, type));
  EXPECT_EQ(id, 2);
  r.skip(type);
  ASSERT_TRUE(r.read_field(id, type));
  EXPECT_EQ(id, 20);
  EXPECT_EQ(r.read_i64(), -1);
  ASSERT_TRUE(r.read_field(id, type));
  EXPECT_EQ(id, 21);
  EXPECT_TRUE(r.read_bool(type));
  ASSERT_TRUE(r.read_field(id, type));
  EXPECT_EQ(id, 22);
  r.skip(type);
  EXPECT_FALSE(r.read_field(id, type));
  EXPECT_EQ(r.position(), kEncoded.size());
}

TEST(ThriftCompact, TruncatedAndLyingInputsAreErrors) {
  for (size_t cut = 0; cut < kEncoded.size(); ++cut) {
    ThriftReader r(kEncoded.data(), cut, "cut");
    r.begin_struct();
    EXPECT_THROW(r.skip(ThriftType::kStruct), Error) << "cut at " << cut;
  }
  const std::vector<uint8_t> huge_list = {0x19, 0xF5, 0xFF, 0xFF, 0xFF, 0x0F};  // 2^32-1 i32 elements, no data
  ThriftReader r(huge_list.data(), huge_list.size(), "huge");
  EXPECT_THROW(r.skip(ThriftType::kStruct), Error);
  std::vector<uint8_t> deep(200, 0x1C);  // struct in struct in ...
  ThriftReader d(deep.data(), deep.size(), "deep");
  EXPECT_THROW(d.skip(ThriftType::kStruct), Error);
}

}  // namespace
}  // namespace verl::io::parquet
