// Corrupt parquet input gives one verl::Error naming the file and the problem, never a crash or a hang:
// truncation, bad magic, garbage footer, lying page sizes, unknown codecs, and random mutations.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "random_rows.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/io/parquet/metadata.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::test {
namespace {

// Reads the whole file; returns the error text, or "" when it read fine.
std::string read_error(const std::string& path) {
  try {
    io::parquet::read_parquet(path);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

std::string make_file(const std::string& dir, io::parquet::Codec codec) {
  io::parquet::WriterOptions options;
  options.codec = codec;
  options.row_group_rows = 20;
  const std::string path = dir + "/good.parquet";
  io::parquet::write_parquet(path, RandomRows(4, false).make(60), random_rows_schema(), options);
  return path;
}

// Expects reading `bytes` (written to a file) to fail with a message naming the file and containing `problem`.
void parquet_corrupt_expect_error(const std::string& dir, const std::string& name, const std::string& bytes,
                                  const std::string& problem) {
  const std::string path = dir + "/" + name + ".parquet";
  write_file(path, bytes);
  std::string error = read_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << name << ": " << error;
  EXPECT_NE(error.find(problem), std::string::npos) << name << ": " << error;
}

TEST(ParquetCorrupt, TruncatedBadMagicGarbageFooter) {
  const std::string dir = make_temp_dir("parquet_corrupt");
  const std::string good = read_file(make_file(dir, io::parquet::Codec::kSnappy));
  ASSERT_EQ(read_error(dir + "/good.parquet"), "");
  parquet_corrupt_expect_error(dir, "empty", "", "too short");
  parquet_corrupt_expect_error(dir, "truncated_half", good.substr(0, good.size() / 2), "bad magic");
  parquet_corrupt_expect_error(dir, "truncated_tail", good.substr(0, good.size() - 1), "bad magic");
  std::string magic = good;
  magic.replace(0, 4, "PAR0");
  parquet_corrupt_expect_error(dir, "bad_magic", magic, "bad magic");
  uint32_t footer_len;
  std::memcpy(&footer_len, good.data() + good.size() - 8, 4);
  std::string huge = good;
  uint32_t lie = 0x7FFFFFFF;
  std::memcpy(&huge[huge.size() - 8], &lie, 4);
  parquet_corrupt_expect_error(dir, "footer_length", huge, "footer length");
  std::string garbage = good;
  std::mt19937 rng(3);
  for (uint32_t i = 0; i < footer_len; ++i) garbage[good.size() - 8 - footer_len + i] = static_cast<char>(rng());
  const std::string path = dir + "/garbage.parquet";
  write_file(path, garbage);
  std::string error = read_error(path);
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

TEST(ParquetCorrupt, LyingPageSizes) {
  const std::string dir = make_temp_dir("parquet_lying_pages");
  const std::string good = read_file(make_file(dir, io::parquet::Codec::kUncompressed));
  // The first page header starts right after the magic.
  size_t consumed = 0;
  io::parquet::PageHeader header = io::parquet::parse_page_header(
      reinterpret_cast<const uint8_t*>(good.data()) + 4, good.size() - 4, "good", consumed);
  auto with_header = [&](io::parquet::PageHeader h) {
    std::vector<uint8_t> bytes = io::parquet::serialize_page_header(h);
    return good.substr(0, 4) + std::string(bytes.begin(), bytes.end()) + good.substr(4 + consumed);
  };
  io::parquet::PageHeader bigger = header;
  bigger.compressed_page_size = 1 << 30;
  bigger.uncompressed_page_size = 1 << 30;
  parquet_corrupt_expect_error(dir, "page_too_big", with_header(bigger), "page");
  io::parquet::PageHeader smaller = header;
  smaller.compressed_page_size = header.compressed_page_size / 2;
  smaller.uncompressed_page_size = header.uncompressed_page_size / 2;
  parquet_corrupt_expect_error(dir, "page_too_small", with_header(smaller), "column '");
  io::parquet::PageHeader mismatch = header;
  mismatch.uncompressed_page_size = header.uncompressed_page_size + 1;
  parquet_corrupt_expect_error(dir, "page_size_mismatch", with_header(mismatch), "header says");
}

TEST(ParquetCorrupt, UnknownAndUnsupportedCodecs) {
  const std::string dir = make_temp_dir("parquet_codec");
  const std::string good = read_file(make_file(dir, io::parquet::Codec::kSnappy));
  uint32_t footer_len;
  std::memcpy(&footer_len, good.data() + good.size() - 8, 4);
  const size_t data_end = good.size() - 8 - footer_len;
  io::parquet::FileMetaData meta = io::parquet::parse_file_metadata(
      reinterpret_cast<const uint8_t*>(good.data()) + data_end, footer_len, "good");
  // LZO and an unknown number are not read; BROTLI, LZ4 and LZ4_RAW are, so SNAPPY bytes under their names are
  // corrupt pages of that codec.
  const std::vector<std::pair<int, std::string>> cases = {{3, "unsupported compression codec LZO"},
                                                          {42, "unsupported compression codec"},
                                                          {4, "corrupt BROTLI page"},
                                                          {5, "corrupt LZ4 page"},
                                                          {7, "corrupt LZ4_RAW page"}};
  for (const auto& [codec, message] : cases) {
    io::parquet::FileMetaData changed = meta;
    for (auto& group : changed.row_groups) {
      for (auto& column : group.columns) column.meta_data.codec = static_cast<io::parquet::Codec>(codec);
    }
    std::vector<uint8_t> footer = io::parquet::serialize_file_metadata(changed);
    uint32_t len = static_cast<uint32_t>(footer.size());
    std::string bytes = good.substr(0, data_end) + std::string(footer.begin(), footer.end()) +
                        std::string(reinterpret_cast<const char*>(&len), 4) + "PAR1";
    parquet_corrupt_expect_error(dir, "codec_" + std::to_string(codec), bytes, message);
  }
}

TEST(ParquetCorrupt, RandomMutationsNeverCrash) {
  const std::string dir = make_temp_dir("parquet_mutations");
  int errors = 0;
  for (auto codec : {io::parquet::Codec::kSnappy, io::parquet::Codec::kUncompressed, io::parquet::Codec::kZstd,
                     io::parquet::Codec::kGzip}) {
    const std::string good = read_file(make_file(dir, codec));
    std::mt19937_64 rng(static_cast<uint64_t>(codec) + 100);
    for (int trial = 0; trial < 150; ++trial) {
      std::string bytes = good;
      int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        size_t at = rng() % bytes.size();
        switch (rng() % 4) {
          case 0: bytes[at] = static_cast<char>(rng()); break;
          case 1: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8))); break;
          case 2: bytes[at] = static_cast<char>(0xFF); break;
          default:
            // Keep the tail (footer) intact but corrupt a run of the data region.
            for (size_t k = 0; k < 16 && at + k < bytes.size() - 8; ++k) bytes[at + k] = static_cast<char>(rng());
        }
      }
      const std::string path = dir + "/mutated.parquet";
      write_file(path, bytes);
      try {
        io::parquet::read_parquet(path);
      } catch (const Error& e) {
        ++errors;
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(errors, 150) << "mutations were mostly not detected";
}

TEST(ParquetCorrupt, CliPrintsOneErrorLine) {
  const std::string dir = make_temp_dir("parquet_cli_error");
  write_file(dir + "/x.parquet", "PAR1 not really a parquet file PAR1");
  CommandResult r = run_command(verl_binary() + " data show '" + dir + "/x.parquet'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("error: [parquet] " + dir + "/x.parquet: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace verl::test
