// `verl data preprocess gsm8k_multiturn_w_tool|gsm8k_multiturn_w_interaction` against verl's own scripts run
// through datasets (tests/oracle/multiturn_data_oracle.py): the same Arrow schema and the same rows as pyarrow
// reads them, on the GSM8K fixture.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/fixtures.h"
#include "support/json_lines.h"
#include "support/run_command.h"
#include "support/test_python.h"

namespace verl::test {
namespace {

const std::string kData = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/multiturn_data_oracle.py";
const std::string kParquet = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/parquet_oracle.py";

std::string python(const std::string& script, const std::string& args) {
  CommandResult r = run_command(test_python() + "'" + script + "' " + args);
  EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err << "\n" << test_python_missing_hint();
  return r.out;
}

TEST(MultiturnDataOracle, VerlsScriptsAndOursWriteTheSameFile) {
  const std::string dir = make_temp_dir("multiturn_data_oracle");
  const std::string input = fixtures_dir() + "/gsm8k/test.jsonl";
  for (const std::string variant : {"tool", "interaction"}) {
    const std::string ours = dir + "/ours_" + variant + ".parquet", verls = dir + "/verl_" + variant + ".parquet";
    CommandResult r = run_command(verl_binary() + " data preprocess gsm8k_multiturn_w_" + variant + " --input '" +
                                  input + "' --split test --output '" + ours + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    python(kData, "write " + variant + " '" + input + "' test '" + verls + "'");
    const std::string schema = python(kParquet, "schema '" + verls + "'");
    EXPECT_EQ(schema.find("need_tools_kwargs: bool") != std::string::npos, variant == "tool") << schema;
    EXPECT_EQ(python(kParquet, "schema '" + ours + "'"), schema) << variant;
    const std::string rows = python(kParquet, "read '" + verls + "'");
    EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 1319) << variant;
    EXPECT_EQ(compare_json_lines(python(kParquet, "read '" + ours + "'"), rows), "") << variant;
  }
}

}  // namespace
}  // namespace verl::test
