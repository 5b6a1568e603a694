// verl's own parquet files (made by pyarrow via datasets) read by `verl data show` equal the committed
// .expected.jsonl row for row; --limit, --columns and --schema behave; JSONL <-> parquet conversion keeps rows.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "verl/io/parquet/reader.h"

namespace verl::test {
namespace {

const std::string kParquetFixtures = fixtures_dir() + "/verl_parquet";

TEST(ParquetFixtures, EveryFixtureMatchesItsExpectedJsonl) {
  int compared = 0, read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kParquetFixtures)) {
    if (entry.path().extension() != ".parquet") continue;
    const std::string path = entry.path().string();
    CommandResult r = run_command(verl_binary() + " data show '" + path + "'");
    ASSERT_EQ(r.exit_code, 0) << path << ": " << r.err;
    ++read;
    std::string expected_path = path.substr(0, path.size() - 8) + ".expected.jsonl";
    if (!std::filesystem::exists(expected_path)) {
      io::parquet::Reader reader(path);
      EXPECT_GT(reader.num_rows(), 0) << path;
      continue;
    }
    EXPECT_EQ(compare_json_lines(r.out, read_file(expected_path)), "") << path;
    ++compared;
  }
  EXPECT_GE(read, 3);
  EXPECT_GE(compared, 2);
}

TEST(ParquetFixtures, LimitAndColumns) {
  const std::string path = kParquetFixtures + "/gsm8k_test.parquet";
  CommandResult r = run_command(verl_binary() + " data show '" + path + "' --limit 3 --columns extra_info,prompt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Expected: the first 3 expected rows reduced to those columns, in schema order (prompt before extra_info).
  std::string expected, line;
  std::istringstream in(read_file(kParquetFixtures + "/gsm8k_test.expected.jsonl"));
  for (int i = 0; i < 3 && std::getline(in, line); ++i) {
    nlohmann::ordered_json full = nlohmann::ordered_json::parse(line), picked = nlohmann::ordered_json::object();
    picked["prompt"] = full["prompt"];
    picked["extra_info"] = full["extra_info"];
    expected += picked.dump() + "\n";
  }
  EXPECT_EQ(compare_json_lines(r.out, expected), "");
  CommandResult bad = run_command(verl_binary() + " data show '" + path + "' --columns nope");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("no column 'nope'; columns: data_source, prompt, ability, reward_model, extra_info"),
            std::string::npos)
      << bad.err;
}

TEST(ParquetFixtures, SchemaText) {
  CommandResult r =
      run_command(verl_binary() + " data show '" + kParquetFixtures + "/arithmetic_sequence_test.parquet' --schema");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "message schema {\n"
            "  optional group prompt (LIST) {\n"
            "    repeated group list {\n"
            "      optional group element {\n"
            "        optional binary content (STRING);\n"
            "        optional binary role (STRING);\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(ParquetFixtures, ConvertBothWaysKeepsRows) {
  const std::string dir = make_temp_dir("data_convert");
  const std::string source = kParquetFixtures + "/gsm8k_test.expected.jsonl";
  for (const char* codec : {"snappy", "zstd", "gzip", "none"}) {
    const std::string pq = dir + "/gsm8k_" + codec + ".parquet", back = dir + "/back_" + codec + ".jsonl";
    CommandResult a = run_command(verl_binary() + " data convert '" + source + "' '" + pq + "' --codec " + codec);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    CommandResult b = run_command(verl_binary() + " data convert '" + pq + "' '" + back + "'");
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(compare_json_lines(read_file(back), read_file(source)), "") << codec;
  }
  CommandResult jsonl_show = run_command(verl_binary() + " data show '" + source + "' --limit 2");
  EXPECT_EQ(jsonl_show.exit_code, 0);
  std::istringstream in(read_file(source));
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(compare_json_lines(jsonl_show.out, l1 + "\n" + l2 + "\n"), "");
}

}  // namespace
}  // namespace verl::test
