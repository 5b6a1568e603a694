// Cross-check with hyparquet, an independent JavaScript implementation (tests/js, run with node): files our
// writer makes decode identically there, and files hyparquet-writer makes decode identically here.
#include <gtest/gtest.h>

#include <filesystem>

#include "random_rows.h"
#include "support/fixtures.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::test {
namespace {

const std::string kParquetHyparquetJs = VERL_SOURCE_DIR_FOR_TESTS "/tests/js";

bool have_hyparquet() {
  return std::filesystem::exists(kParquetHyparquetJs + "/node_modules/hyparquet") &&
         std::filesystem::exists(kParquetHyparquetJs + "/node_modules/hyparquet-writer") &&
         run_command("node --version").exit_code == 0;
}

std::string rows_as_jsonl(const std::vector<io::Value>& rows) {
  std::string out;
  for (const auto& row : rows) out += io::to_json(row) + "\n";
  return out;
}

TEST(ParquetHyparquet, OurFilesDecodeIdenticallyInHyparquet) {
  if (!have_hyparquet()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  const std::string dir = make_temp_dir("hyparquet_read");
  std::vector<io::Value> rows = RandomRows(5, true).make(250);
  struct Case {
    const char* name;
    io::parquet::WriterOptions options;
  };
  std::vector<Case> cases(4);
  cases[0].name = "snappy_v1_dictionary";
  cases[1].name = "uncompressed_v2_delta";
  cases[1].options.codec = io::parquet::Codec::kUncompressed;
  cases[1].options.data_page_v2 = true;
  cases[1].options.dictionary = false;
  cases[1].options.int_encoding = io::parquet::Encoding::kDeltaBinaryPacked;
  cases[1].options.byte_array_encoding = io::parquet::Encoding::kDeltaByteArray;
  cases[1].options.row_group_rows = 64;
  cases[2].name = "gzip_v1_delta_length_pages";
  cases[2].options.codec = io::parquet::Codec::kGzip;
  cases[2].options.dictionary = false;
  cases[2].options.byte_array_encoding = io::parquet::Encoding::kDeltaLengthByteArray;
  cases[2].options.page_bytes = 512;
  cases[3].name = "snappy_v2_dictionary_small_groups";
  cases[3].options.data_page_v2 = true;
  cases[3].options.row_group_rows = 7;
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name + ".parquet";
    io::parquet::write_parquet(path, rows, random_rows_schema(), c.options);
    CommandResult r = run_command("node '" + kParquetHyparquetJs + "/parquet_read.mjs' '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
    EXPECT_EQ(compare_json_lines(r.out, rows_as_jsonl(rows)), "") << c.name;
  }
}

TEST(ParquetHyparquet, HyparquetWriterFilesDecodeIdenticallyHere) {
  if (!have_hyparquet()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  const std::string dir = make_temp_dir("hyparquet_write");
  for (const char* codec : {"SNAPPY", "UNCOMPRESSED", "GZIP"}) {
    const std::string path = dir + "/" + codec + ".parquet";
    CommandResult r =
        run_command("node '" + kParquetHyparquetJs + "/parquet_write.mjs' '" + path + "' " + codec + " 3");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    io::parquet::Reader reader(path);
    EXPECT_GT(reader.num_row_groups(), 2u);
    EXPECT_EQ(compare_json_lines(rows_as_jsonl(reader.read_all()), r.out), "") << codec;
  }
}

TEST(ParquetHyparquet, FixturesDecodeAsHyparquetDecodesThem) {
  if (!have_hyparquet()) GTEST_SKIP() << "node or tests/js/node_modules missing: run scripts/install-deps.sh";
  const std::string fixtures = fixtures_dir() + "/verl_parquet";
  for (const auto& entry : std::filesystem::directory_iterator(fixtures)) {
    if (entry.path().extension() != ".parquet") continue;
    CommandResult r =
        run_command("node '" + kParquetHyparquetJs + "/parquet_read.mjs' '" + entry.path().string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(compare_json_lines(rows_as_jsonl(io::parquet::read_parquet(entry.path().string())), r.out), "")
        << entry.path();
  }
}

}  // namespace
}  // namespace verl::test
