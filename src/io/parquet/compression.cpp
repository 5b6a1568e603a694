#include "verl/io/parquet/compression.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "verl/common/error.h"

namespace verl::io::parquet {

namespace {

// One LZ4 block (no frame) into exactly `out.size()` bytes at `offset`; false when it is not one.
bool lz4_block(const uint8_t* data, size_t size, std::vector<uint8_t>& out, size_t offset, size_t expected) {
  if (size > static_cast<size_t>(LZ4_MAX_INPUT_SIZE) || expected > static_cast<size_t>(LZ4_MAX_INPUT_SIZE) ||
      offset + expected > out.size()) {
    return false;
  }
  const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(data), reinterpret_cast<char*>(out.data() + offset),
                                    static_cast<int>(size), static_cast<int>(expected));
  return n >= 0 && static_cast<size_t>(n) == expected;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The deprecated LZ4 codec: Hadoop's framing (per block: big-endian decompressed size, compressed size, block)
// as older parquet-mr and Arrow wrote it, else a bare block, as Arrow's reader falls back to.
bool lz4_hadoop(const uint8_t* data, size_t size, std::vector<uint8_t>& out) {
  size_t in = 0, produced = 0;
  while (in < size) {
    if (size - in < 8) return false;
    const size_t block_out = big_endian_u32(data + in), block_in = big_endian_u32(data + in + 4);
    in += 8;
    if (block_in > size - in || !lz4_block(data + in, block_in, out, produced, block_out)) return false;
    in += block_in;
    produced += block_out;
  }
  return produced == out.size();
}

}  // namespace

void decompress(Codec codec, const uint8_t* data, size_t size, size_t uncompressed_size, std::vector<uint8_t>& out,
                const std::string& where) {
  out.resize(uncompressed_size);
  switch (codec) {
    case Codec::kUncompressed:
      VERL_CHECK(size == uncompressed_size, "parquet", where, ": uncompressed page of ", size,
                 " bytes but the header says ", uncompressed_size);
      if (size) std::memcpy(out.data(), data, size);
      return;
    case Codec::kSnappy: {
      size_t length = 0;
      const char* in = reinterpret_cast<const char*>(data);
      VERL_CHECK(snappy::GetUncompressedLength(in, size, &length), "parquet", where, ": corrupt SNAPPY page");
      VERL_CHECK(length == uncompressed_size, "parquet", where, ": SNAPPY page decompresses to ", length,
                 " bytes but the header says ", uncompressed_size);
      VERL_CHECK(snappy::RawUncompress(in, size, reinterpret_cast<char*>(out.data())), "parquet", where,
                 ": corrupt SNAPPY page");
      return;
    }
    case Codec::kZstd: {
      size_t n = ZSTD_decompress(out.data(), out.size(), data, size);
      VERL_CHECK(!ZSTD_isError(n), "parquet", where, ": corrupt ZSTD page (", ZSTD_getErrorName(n), ")");
      VERL_CHECK(n == uncompressed_size, "parquet", where, ": ZSTD page decompresses to ", n,
                 " bytes but the header says ", uncompressed_size);
      return;
    }
    case Codec::kGzip: {
      z_stream stream{};
      VERL_CHECK(inflateInit2(&stream, 15 + 32) == Z_OK, "parquet", where, ": zlib init failed");
      stream.next_in = const_cast<Bytef*>(data);
      stream.avail_in = static_cast<uInt>(size);
      // An empty page (a column that is null in every row) still holds a gzip stream; zlib refuses a null output.
      Bytef empty_output = 0;
      stream.next_out = out.empty() ? &empty_output : out.data();
      stream.avail_out = static_cast<uInt>(out.size());
      int rc = inflate(&stream, Z_FINISH);
      size_t produced = stream.total_out;
      inflateEnd(&stream);
      VERL_CHECK(rc == Z_STREAM_END, "parquet", where, ": corrupt GZIP page (zlib code ", rc, ")");
      VERL_CHECK(produced == uncompressed_size, "parquet", where, ": GZIP page decompresses to ", produced,
                 " bytes but the header says ", uncompressed_size);
      return;
    }
    case Codec::kLz4Raw:
      VERL_CHECK(lz4_block(data, size, out, 0, uncompressed_size), "parquet", where,
                 ": corrupt LZ4_RAW page (or not ", uncompressed_size, " bytes as the header says)");
      return;
    case Codec::kLz4:
      VERL_CHECK(lz4_hadoop(data, size, out) || lz4_block(data, size, out, 0, uncompressed_size), "parquet", where,
                 ": corrupt LZ4 page (neither Hadoop-framed nor a bare block of ", uncompressed_size, " bytes)");
      return;
    case Codec::kBrotli: {
      size_t produced = out.size();
      const auto rc = BrotliDecoderDecompress(size, data, &produced, out.data());
      VERL_CHECK(rc == BROTLI_DECODER_RESULT_SUCCESS, "parquet", where, ": corrupt BROTLI page");
      VERL_CHECK(produced == uncompressed_size, "parquet", where, ": BROTLI page decompresses to ", produced,
                 " bytes but the header says ", uncompressed_size);
      return;
    }
    default:
      VERL_FAIL("parquet", where, ": unsupported compression codec ", codec_name(codec), " (", static_cast<int>(codec),
                "); supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD, LZ4_RAW, LZ4, BROTLI");
  }
}

std::vector<uint8_t> compress(Codec codec, const uint8_t* data, size_t size) {
  std::vector<uint8_t> out;
  switch (codec) {
    case Codec::kUncompressed:
      out.assign(data, data + size);
      return out;
    case Codec::kSnappy: {
      out.resize(snappy::MaxCompressedLength(size));
      size_t n = 0;
      snappy::RawCompress(reinterpret_cast<const char*>(data), size, reinterpret_cast<char*>(out.data()), &n);
      out.resize(n);
      return out;
    }
    case Codec::kZstd: {
      out.resize(ZSTD_compressBound(size));
      size_t n = ZSTD_compress(out.data(), out.size(), data, size, 3);
      VERL_ASSERT(!ZSTD_isError(n), "parquet", "ZSTD_compress failed");
      out.resize(n);
      return out;
    }
    case Codec::kGzip: {
      z_stream stream{};
      VERL_ASSERT(deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                  "parquet", "deflateInit2 failed");
      out.resize(deflateBound(&stream, static_cast<uLong>(size)) + 32);
      stream.next_in = const_cast<Bytef*>(data);
      stream.avail_in = static_cast<uInt>(size);
      stream.next_out = out.data();
      stream.avail_out = static_cast<uInt>(out.size());
      int rc = deflate(&stream, Z_FINISH);
      size_t n = stream.total_out;
      deflateEnd(&stream);
      VERL_ASSERT(rc == Z_STREAM_END, "parquet", "deflate failed");
      out.resize(n);
      return out;
    }
    default:
      VERL_FAIL("parquet", "cannot write codec ", codec_name(codec), "; supported: UNCOMPRESSED, SNAPPY, GZIP, ZSTD");
  }
}

}  // namespace verl::io::parquet
