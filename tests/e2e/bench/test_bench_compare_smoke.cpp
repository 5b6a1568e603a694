// bench/compare.sh --quick: the peer comparison (transformers, TRL) end to end on a tiny model. The full
// comparison is not part of the test suite (it is slow); this run checks that every row's sides ran the same work
// and that the table and the JSON Lines record carry what bench/RESULTS.md reports.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"

namespace verl::test {
namespace {

TEST(BenchCompare, QuickRunComparesEveryRowWithItsPeer) {
  const std::string out = make_temp_dir("bench_compare_quick");
  const std::string command = std::string("cd ") + VERL_SOURCE_DIR_FOR_TESTS +
                              " && VERL_COMPARE_NO_BUILD=1 bench/compare.sh --quick --threads 1 --verl " +
                              verl_binary() + " --out " + out;
  const CommandResult r = run_command(command);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // One record; every row timed on both sides with the repeats asked for, memory measured.
  std::ifstream in(out + "/compare.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto record = nlohmann::json::parse(line);
  EXPECT_GT(record["roofline"]["gemm_peak_flops"].get<double>(), 0);
  EXPECT_GT(record["roofline"]["bandwidth_bytes_per_s"].get<double>(), 0);
  EXPECT_TRUE(record["versions"].contains("trl"));
  std::map<std::string, int> works;
  for (const auto& row : record["rows"]) {
    const std::string work = row["work"];
    works[work.substr(0, work.find(','))]++;
    ASSERT_EQ(row["verl"].size(), 2u) << work;  // --quick: 2 repeats, warm-up excluded
    for (const auto& v : row["verl"]) EXPECT_TRUE(std::isfinite(v.get<double>()) && v.get<double>() > 0) << work;
    EXPECT_GT(row["verl_rss"].get<double>(), 1e7) << work;
    if (row["peer"].is_null()) {
      EXPECT_EQ(work.rfind("PPO step", 0), 0u) << "only the PPO row has no peer: " << work;
      continue;
    }
    ASSERT_EQ(row["peer_values"].size(), 2u) << work;
    for (const auto& v : row["peer_values"]) EXPECT_TRUE(std::isfinite(v.get<double>()) && v.get<double>() > 0);
    EXPECT_GT(row["peer_rss"].get<double>(), 1e7) << work;
  }
  // generate at batch 1 and 4, each against the dynamic and the static cache; log-prob; fwd+bwd; GRPO; PPO.
  EXPECT_EQ(works["generate"], 4);
  EXPECT_EQ(works["log-prob pass"], 1);
  EXPECT_EQ(works["forward+backward+AdamW"], 1);
  EXPECT_EQ(works["GRPO step"], 1);
  EXPECT_EQ(works["PPO step with a critic (GAE)"], 1);
  EXPECT_NE(r.out.find("ratio best"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TRL GRPOTrainer"), std::string::npos) << r.out;
}

TEST(BenchCompare, UnknownRowIsAOneLineError) {
  const CommandResult r = run_command(std::string("cd ") + VERL_SOURCE_DIR_FOR_TESTS +
                                      " && VERL_COMPARE_NO_BUILD=1 bench/compare.sh --quick --rows generate,vllm"
                                      " --verl " + verl_binary() + " --out " + make_temp_dir("bench_compare_bad"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("error: --rows: unknown ['vllm']"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
