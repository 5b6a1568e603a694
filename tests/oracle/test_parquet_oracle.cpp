// Parquet against the real implementation: files Apache Arrow (pyarrow), pandas and datasets write are read by
// verl.cpp exactly as pyarrow reads them back, and files verl.cpp writes (the writer, `verl data convert`,
// `verl data preprocess`) read back in pyarrow and pandas with the same rows and, for verl's datasets, the schema
// verl's own preprocessing writes. tests/oracle/parquet_oracle.py does the Python side under .venv/test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "unit/io/random_rows.h"
#include "verl/io/parquet/reader.h"
#include "verl/io/parquet/writer.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const std::string kParquetOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/parquet_oracle.py";

std::string parquet_oracle(const std::string& args) {
  CommandResult r = run_command(test_python() + "'" + kParquetOracle + "' " + args);
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err << "\n" << test_python_missing_hint();
  return r.out;
}

std::string rows_as_jsonl(const std::vector<io::Value>& rows) {
  std::string out;
  for (const auto& row : rows) out += io::to_json(row) + "\n";
  return out;
}

// The file matrix, written once per test binary run.
const std::string& matrix_dir() {
  static const std::string dir = [] {
    const std::string d = make_temp_dir("pyarrow_matrix");
    parquet_oracle("write-matrix '" + d + "'");
    return d;
  }();
  return dir;
}

std::vector<std::string> matrix_files() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(matrix_dir())) {
    if (entry.path().extension() == ".parquet") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ParquetOracle, EveryFileArrowWritesReadsAsArrowReadsIt) {
  const auto files = matrix_files();
  ASSERT_GE(files.size(), 50u) << "the matrix was not written";
  for (const auto& path : files) {
    const std::string name = fs::path(path).stem().string();
    if (name == "million_rows") continue;  // its own test, one row group at a time
    std::string rows;
    try {
      rows = rows_as_jsonl(io::parquet::read_parquet(path));
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
      continue;
    }
    EXPECT_EQ(compare_json_lines(rows, read_file(matrix_dir() + "/" + name + ".expected.jsonl")), "") << name;
  }
}

// One million rows in ten row groups of 100k, compared as they stream (peak memory: bench/parquet_memory.sh).
TEST(ParquetOracle, MillionRowsStreamRowGroupByRowGroup) {
  io::parquet::Reader reader(matrix_dir() + "/million_rows.parquet");
  ASSERT_EQ(reader.num_rows(), 1000000);
  ASSERT_EQ(reader.num_row_groups(), 10u);
  std::ifstream expected(matrix_dir() + "/million_rows.expected.jsonl");
  std::string line;
  size_t row = 0, differing = 0;
  for (size_t g = 0; g < reader.num_row_groups(); ++g) {
    for (const auto& value : reader.read_row_group(g)) {
      ASSERT_TRUE(std::getline(expected, line)) << "more rows than pyarrow read";
      if (compare_json_lines(io::to_json(value), line) != "" && differing++ < 3) {
        ADD_FAILURE() << "row " << row << ": " << io::to_json(value) << " vs " << line;
      }
      ++row;
    }
  }
  EXPECT_FALSE(std::getline(expected, line)) << "fewer rows than pyarrow read";
  EXPECT_EQ(differing, 0u);
}

TEST(ParquetOracle, WriterFilesReadBackInPyarrowAndPandas) {
  const std::string dir = make_temp_dir("pyarrow_read_ours");
  const std::vector<io::Value> rows = RandomRows(11, true).make(300);
  const std::string expected = rows_as_jsonl(rows);
  struct Case {
    const char* name;
    io::parquet::WriterOptions options;
  };
  std::vector<Case> cases(5);
  cases[0].name = "snappy_v1_dictionary";
  cases[1].name = "uncompressed_v2_delta";
  cases[1].options.codec = io::parquet::Codec::kUncompressed;
  cases[1].options.data_page_v2 = true;
  cases[1].options.dictionary = false;
  cases[1].options.int_encoding = io::parquet::Encoding::kDeltaBinaryPacked;
  cases[1].options.byte_array_encoding = io::parquet::Encoding::kDeltaByteArray;
  cases[1].options.row_group_rows = 64;
  cases[2].name = "gzip_v1_delta_length_small_pages";
  cases[2].options.codec = io::parquet::Codec::kGzip;
  cases[2].options.dictionary = false;
  cases[2].options.byte_array_encoding = io::parquet::Encoding::kDeltaLengthByteArray;
  cases[2].options.page_bytes = 512;
  cases[3].name = "zstd_v2_dictionary_small_groups";
  cases[3].options.codec = io::parquet::Codec::kZstd;
  cases[3].options.data_page_v2 = true;
  cases[3].options.row_group_rows = 7;
  cases[4].name = "empty";
  for (const Case& c : cases) {
    const std::string path = dir + "/" + c.name + ".parquet";
    const bool empty = std::string(c.name) == "empty";
    io::parquet::write_parquet(path, empty ? std::vector<io::Value>{} : rows, random_rows_schema(), c.options);
    const std::string want = empty ? "" : expected;
    EXPECT_EQ(compare_json_lines(parquet_oracle("read '" + path + "'"), want), "") << c.name << " (pyarrow)";
    EXPECT_EQ(compare_json_lines(parquet_oracle("read-pandas '" + path + "'"), want), "") << c.name << " (pandas)";
  }
}

// What the CLI writes: `verl data convert` (schema inferred from JSONL) and the preprocessing of verl's
// datasets, whose Arrow schema must be the one verl's own examples/data_preprocess/gsm8k.py writes (the fixture).
TEST(ParquetOracle, CliFilesReadBackInPyarrowWithVerlsSchema) {
  const std::string dir = make_temp_dir("pyarrow_read_cli");
  write_file(dir + "/rows.jsonl",
             "{\"id\":1,\"text\":\"héllo\",\"score\":0.5,\"tags\":[\"a\",\"b\"],\"meta\":{\"k\":1,\"v\":[1.5]}}\n"
             "{\"id\":2,\"text\":null,\"score\":-1e300,\"tags\":[],\"meta\":{\"k\":2,\"v\":[]}}\n"
             "{\"id\":-3,\"text\":\"日本\",\"score\":null,\"tags\":null,\"meta\":null}\n");
  ASSERT_EQ(run_command(verl_binary() + " data convert '" + dir + "/rows.jsonl' '" + dir + "/rows.parquet'").exit_code, 0);
  ASSERT_EQ(run_command(verl_binary() + " data preprocess gsm8k --input '" + fixtures_dir() +
                        "/gsm8k/test.jsonl' --split test --output '" + dir + "/gsm8k.parquet'")
                .exit_code,
            0);
  ASSERT_EQ(run_command(verl_binary() + " data preprocess arithmetic --output-dir '" + dir + "/arithmetic' --size 200")
                .exit_code,
            0);
  for (const std::string file : {"rows.parquet", "gsm8k.parquet", "arithmetic/train.parquet",
                                  "arithmetic/sft_train.parquet"}) {
    const std::string path = dir + "/" + file;
    const std::string ours = rows_as_jsonl(io::parquet::read_parquet(path));
    EXPECT_EQ(compare_json_lines(parquet_oracle("read '" + path + "'"), ours), "") << file << " (pyarrow)";
    EXPECT_EQ(compare_json_lines(parquet_oracle("read-pandas '" + path + "'"), ours), "") << file << " (pandas)";
  }
  EXPECT_EQ(parquet_oracle("schema '" + dir + "/gsm8k.parquet'"),
            parquet_oracle("schema '" + fixtures_dir() + "/verl_parquet/gsm8k_test.parquet'"));
  EXPECT_EQ(parquet_oracle("read '" + dir + "/gsm8k.parquet'"),
            parquet_oracle("read '" + fixtures_dir() + "/verl_parquet/gsm8k_test.parquet'"));
}

}  // namespace
}  // namespace verl::test
