// Parquet's value and level encodings on bounded byte spans: the RLE / bit-packed hybrid (levels, booleans,
// dictionary ids), DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, and the
// encoders the writer uses. Every read is bounds-checked; malformed data is a verl::Error naming `where`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace verl::io::parquet {

// Decodes `count` values of `bit_width` bits (0..32) from an RLE / bit-packed hybrid run sequence occupying
// exactly [data, data+size). Returns the bytes consumed.
size_t decode_rle_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count, uint32_t* out,
                         const std::string& where);
// Encodes with RLE runs for repeats of 8 or more and bit-packed groups otherwise.
void encode_rle_hybrid(const uint32_t* values, size_t count, int bit_width, std::vector<uint8_t>& out);

// Bits needed for values up to max_value.
int bit_width_for(uint64_t max_value);

// DELTA_BINARY_PACKED: appends every value of the stream to `out` (at most `max_count`), returns bytes consumed.
size_t decode_delta_binary_packed(const uint8_t* data, size_t size, size_t max_count, std::vector<int64_t>& out,
                                  const std::string& where);
// `int32`: the deltas of an INT32 column, which wrap around in 32 bits (bit widths stay <= 32).
void encode_delta_binary_packed(const int64_t* values, size_t count, std::vector<uint8_t>& out, bool int32 = false);

// A byte string inside a decoded buffer, or owned (DELTA_BYTE_ARRAY rebuilds values from prefixes).
struct ByteRun {
  const uint8_t* data;
  size_t size;
};

// DELTA_LENGTH_BYTE_ARRAY: lengths, then the concatenated bytes. Returns bytes consumed.
size_t decode_delta_length_byte_array(const uint8_t* data, size_t size, size_t max_count, std::vector<ByteRun>& out,
                                      const std::string& where);
void encode_delta_length_byte_array(const std::vector<std::string>& values, std::vector<uint8_t>& out);

// DELTA_BYTE_ARRAY: prefix lengths, then suffixes as DELTA_LENGTH_BYTE_ARRAY.
void decode_delta_byte_array(const uint8_t* data, size_t size, size_t max_count, std::vector<std::string>& out,
                             const std::string& where);
void encode_delta_byte_array(const std::vector<std::string>& values, std::vector<uint8_t>& out);

// BYTE_STREAM_SPLIT for `width`-byte values: un-interleaves `count` values into `out` (count*width bytes).
void decode_byte_stream_split(const uint8_t* data, size_t size, size_t width, size_t count, std::vector<uint8_t>& out,
                              const std::string& where);

}  // namespace verl::io::parquet
