// Parquet encodings against the examples in the format specification (Encodings.md) and hand-worked bytes,
// plus encoder/decoder round trips over random data.
#include <gtest/gtest.h>

#include <random>

#include "verl/common/error.h"
#include "verl/io/parquet/encodings.h"

namespace verl::io::parquet {
namespace {

TEST(ParquetEncodings, RleBitPackedSpecExample) {
  // Spec: values 0..7 with bit width 3 bit-packed: header (1 group << 1) | 1, then 10001000 11000110 11111010.
  const std::vector<uint8_t> bytes = {0x03, 0x88, 0xC6, 0xFA};
  uint32_t out[8];
  EXPECT_EQ(decode_rle_hybrid(bytes.data(), bytes.size(), 3, 8, out, "t"), 4u);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], i);
}

TEST(ParquetEncodings, RleRunAndMixedRuns) {
  // Width 1: an RLE run of ten 1s (header 10 << 1 = 0x14, value byte 0x01), then one bit-packed group
  // (header 0x03) holding 1,0,1,0,1,0,1,0 (0b01010101, least significant bit first).
  const std::vector<uint8_t> bytes = {0x14, 0x01, 0x03, 0x55};
  std::vector<uint32_t> out(18);
  EXPECT_EQ(decode_rle_hybrid(bytes.data(), bytes.size(), 1, 18, out.data(), "t"), 4u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(out[i], 1u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(out[10 + i], (i % 2 == 0) ? 1u : 0u);
}

TEST(ParquetEncodings, RleRejectsOverrunsAndWideValues) {
  uint32_t out[16];
  const std::vector<uint8_t> short_pack = {0x05, 0xFF};  // 2 groups of width 3 need 6 bytes
  EXPECT_THROW(decode_rle_hybrid(short_pack.data(), short_pack.size(), 3, 16, out, "t"), Error);
  const std::vector<uint8_t> wide = {0x02, 0x09};  // value 9 does not fit width 3
  EXPECT_THROW(decode_rle_hybrid(wide.data(), wide.size(), 3, 1, out, "t"), Error);
  const std::vector<uint8_t> empty;
  EXPECT_THROW(decode_rle_hybrid(empty.data(), 0, 1, 1, out, "t"), Error);
}

TEST(ParquetEncodings, DeltaBinaryPackedSpecExample) {
  // Spec example 1: 1 2 3 4 5 -> block 128, 4 miniblocks, 5 values, first 1; min delta 1, all widths 0.
  const std::vector<uint8_t> bytes = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  std::vector<int64_t> out;
  EXPECT_EQ(decode_delta_binary_packed(bytes.data(), bytes.size(), 5, out, "t"), bytes.size());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  std::vector<uint8_t> encoded;
  encode_delta_binary_packed(out.data(), out.size(), encoded);
  EXPECT_EQ(encoded, bytes);
}

TEST(ParquetEncodings, DeltaBinaryPackedSecondSpecExample) {
  // Spec example 2: 7 5 3 1 2 3 4 5: deltas -2 -2 -2 1 1 1 1, min delta -2, relative 0 0 0 3 3 3 3 (width 2).
  std::vector<int64_t> values = {7, 5, 3, 1, 2, 3, 4, 5};
  std::vector<uint8_t> encoded;
  encode_delta_binary_packed(values.data(), values.size(), encoded);
  // header 80 01 04 08 0E, min delta zigzag(-2)=3, widths 02 00 00 00, then 32 values of 2 bits = 8 bytes:
  // 0,0,0,3 -> 0b11000000 = 0xC0; 3,3,3,0 -> 0b00111111 = 0x3F; rest zero.
  const std::vector<uint8_t> expected = {0x80, 0x01, 0x04, 0x08, 0x0E, 0x03, 0x02, 0x00, 0x00, 0x00,
                                         0xC0, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(encoded, expected);
  std::vector<int64_t> out;
  decode_delta_binary_packed(expected.data(), expected.size(), 8, out, "t");
  EXPECT_EQ(out, values);
}

TEST(ParquetEncodings, RandomRoundTrips) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    size_t n = rng() % 1000;
    int width = static_cast<int>(rng() % 33);
    std::vector<uint32_t> values(n);
    for (auto& v : values) {
      uint64_t r = rng();
      v = width == 0 ? 0 : static_cast<uint32_t>((r % 4 == 0 ? (r >> 8) % 3 : r >> 16) & ((uint64_t{1} << width) - 1));
    }
    std::vector<uint8_t> encoded;
    encode_rle_hybrid(values.data(), n, width, encoded);
    std::vector<uint32_t> decoded(n);
    EXPECT_EQ(decode_rle_hybrid(encoded.data(), encoded.size(), width, n, decoded.data(), "t"), encoded.size());
    EXPECT_EQ(decoded, values);

    std::vector<int64_t> ints(n);
    for (auto& v : ints) v = trial % 3 == 0 ? static_cast<int64_t>(rng()) : static_cast<int64_t>(rng() % 100) - 50;
    std::vector<uint8_t> delta;
    encode_delta_binary_packed(ints.data(), n, delta);
    std::vector<int64_t> back;
    EXPECT_EQ(decode_delta_binary_packed(delta.data(), delta.size(), n, back, "t"), delta.size());
    EXPECT_EQ(back, ints);
  }
}

TEST(ParquetEncodings, DeltaByteArrays) {
  std::vector<std::string> values = {"axis", "axle", "babble", "babyhood", "", "babyhood", "é🚀"};
  std::vector<uint8_t> encoded;
  encode_delta_byte_array(values, encoded);
  std::vector<std::string> back;
  decode_delta_byte_array(encoded.data(), encoded.size(), values.size(), back, "t");
  EXPECT_EQ(back, values);

  std::vector<uint8_t> lengths_encoded;
  encode_delta_length_byte_array(values, lengths_encoded);
  std::vector<ByteRun> runs;
  EXPECT_EQ(decode_delta_length_byte_array(lengths_encoded.data(), lengths_encoded.size(), values.size(), runs, "t"),
            lengths_encoded.size());
  ASSERT_EQ(runs.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(runs[i].data), runs[i].size), values[i]);
  }
  // A prefix longer than the previous value is corrupt.
  std::vector<int64_t> prefixes = {3};
  std::vector<uint8_t> bad;
  encode_delta_binary_packed(prefixes.data(), 1, bad);
  encode_delta_length_byte_array({"x"}, bad);
  std::vector<std::string> out;
  EXPECT_THROW(decode_delta_byte_array(bad.data(), bad.size(), 1, out, "t"), Error);
}

TEST(ParquetEncodings, ByteStreamSplit) {
  // Two 4-byte values 0x04030201 and 0x08070605 are stored as 01 05 02 06 03 07 04 08.
  const std::vector<uint8_t> bytes = {1, 5, 2, 6, 3, 7, 4, 8};
  std::vector<uint8_t> out;
  decode_byte_stream_split(bytes.data(), bytes.size(), 4, 2, out, "t");
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THROW(decode_byte_stream_split(bytes.data(), bytes.size(), 4, 3, out, "t"), Error);
}

}  // namespace
}  // namespace verl::io::parquet
