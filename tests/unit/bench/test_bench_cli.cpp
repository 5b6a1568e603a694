// `verl bench roofline|generate|ppo` in their quick modes (a few seconds): the output has the expected
// fields, counts are the exact ones for the sizes asked, and the rates are positive and finite. Speed
// targets are measured by running the benches, never by unit tests. `bench ppo`'s roles follow the config, and
// each phase reports its peak resident memory (seen failing with reset_peak_resident returning false).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/run_command.h"

namespace verl::test {
namespace {

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

bool positive_finite(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; }

// `bench roofline` measures bf16 GEMMs too; the other benches measure the fp32 peak they divide by.
void expect_roofline(const nlohmann::json& r, bool with_bf16 = false) {
  ASSERT_TRUE(r.contains("gemm")) << r.dump();
  EXPECT_EQ(r["gemm"].size(), with_bf16 ? 4u : 2u);  // --quick: sizes 64 and 128 (fp32, then bf16)
  double best = 0, best_bf16 = 0;
  for (const auto& g : r["gemm"]) {
    EXPECT_TRUE(positive_finite(g["flops_per_s"])) << g.dump();
    double& peak = g["dtype"] == "bf16" ? best_bf16 : best;
    EXPECT_TRUE(g["dtype"] == "bf16" || g["dtype"] == "fp32") << g.dump();
    peak = std::max(peak, g["flops_per_s"].get<double>());
  }
  EXPECT_EQ(r["gemm_peak_flops"].get<double>(), best);
  EXPECT_EQ(r["bf16_gemm_peak_flops"].get<double>(), best_bf16);
  EXPECT_GE(r["machine"]["threads"].get<int>(), 1);
  EXPECT_GE(r["machine"]["cores"].get<int>(), 1);
  EXPECT_TRUE(r["machine"].contains("blas"));
  EXPECT_TRUE(r["machine"].contains("cpu_kernels"));
}

TEST(BenchCli, RooflineQuick) {
  const std::string dir = make_temp_dir("bench_roofline");
  auto r = run_command(verl_binary() + " bench roofline --quick --json " + dir + "/r.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GEMM peak:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bf16 GEMM peak:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory bandwidth:"), std::string::npos) << r.out;
  // Two runs append two records.
  ASSERT_EQ(run_command(verl_binary() + " bench roofline --quick --gemm-sizes 32 --json " + dir + "/r.jsonl").exit_code, 0);
  const auto records = json_lines(dir + "/r.jsonl");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0]["bench"], "roofline");
  expect_roofline(records[0], /*with_bf16=*/true);
  EXPECT_EQ(records[1]["gemm"].size(), 2u);  // one size, fp32 and bf16
  ASSERT_EQ(records[0]["memory"].size(), 2u);
  EXPECT_EQ(records[0]["memory"][0]["kernel"], "copy");
  EXPECT_EQ(records[0]["memory"][1]["kernel"], "triad");
  EXPECT_TRUE(positive_finite(records[0]["bandwidth_bytes_per_s"]));
}

TEST(BenchCli, GenerateQuick) {
  const std::string dir = make_temp_dir("bench_generate");
  auto r = run_command(verl_binary() + " bench generate --quick --batches 1,3 --json " + dir + "/g.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("% of bound"), std::string::npos) << r.out;
  const auto records = json_lines(dir + "/g.jsonl");
  ASSERT_EQ(records.size(), 1u);
  const auto& g = records[0];
  expect_roofline(g["roofline"]);
  ASSERT_EQ(g["rows"].size(), 2u);
  const int64_t batches[] = {1, 3};
  for (size_t i = 0; i < 2; ++i) {
    const auto& row = g["rows"][i];
    EXPECT_EQ(row["model"], "tiny");
    EXPECT_EQ(row["batch"], batches[i]);
    EXPECT_EQ(row["prefill"]["tokens"].get<double>(), batches[i] * 8.0);  // --quick: prompt 8
    EXPECT_EQ(row["decode"]["tokens"].get<double>(), batches[i] * 3.0);   // 4 response tokens: 3 decode steps
    for (const char* phase : {"prefill", "decode"}) {
      const auto& p = row[phase];
      for (const char* key : {"seconds", "cpu_seconds", "tokens_per_s", "flops", "bytes", "bound_tokens_per_s",
                              "compute_bound_tokens_per_s", "memory_bound_tokens_per_s", "fraction_of_bound"}) {
        EXPECT_TRUE(positive_finite(p[key])) << phase << "." << key << " = " << p[key];
      }
      EXPECT_DOUBLE_EQ(p["tokens_per_s"].get<double>(), p["tokens"].get<double>() / p["seconds"].get<double>());
      EXPECT_DOUBLE_EQ(p["bound_tokens_per_s"].get<double>(),
                       std::min(p["compute_bound_tokens_per_s"].get<double>(), p["memory_bound_tokens_per_s"].get<double>()));
    }
  }
}

TEST(BenchCli, PpoQuick) {
  const std::string dir = make_temp_dir("bench_ppo");
  auto r = run_command("VERL_LOG_LEVEL=warn " + verl_binary() + " bench ppo --quick --json " + dir + "/p.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("MFU %"), std::string::npos) << r.out;
  const auto records = json_lines(dir + "/p.jsonl");
  ASSERT_EQ(records.size(), 1u);
  const auto& p = records[0];
  expect_roofline(p["roofline"]);
  EXPECT_EQ(p["batch_size"], 2);
  EXPECT_EQ(p["n"], 2);
  const std::vector<std::string> names = {"gen", "old_log_prob", "ref", "values", "adv", "update_critic", "update_actor"};
  ASSERT_EQ(p["phases"].size(), names.size());
  // tiny: 4 responses of 8 prompt + 4 response tokens.
  const double trunk = 2.0 * 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128), head = 2.0 * 64 * 256;
  const double attn = 4.0 * 2 * 4 * 16 * 12 * 12;
  const double forward = 4 * (12 * trunk + 4 * head + attn), value_forward = 4 * (12 * trunk + 4 * 2.0 * 64 + attn);
  const std::map<std::string, double> flops = {{"old_log_prob", forward}, {"ref", forward}, {"values", value_forward},
                                               {"update_critic", 3 * value_forward}, {"update_actor", 3 * forward}};
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& phase = p["phases"][i];
    EXPECT_EQ(phase["phase"], names[i]);
    EXPECT_TRUE(positive_finite(phase["seconds"])) << phase.dump();
    // The process's peak resident memory during the phase (Linux): at least the loaded model's parameters.
    EXPECT_GT(phase["peak_rss_bytes"].get<int64_t>(), 1 << 20) << phase.dump();
    if (names[i] == "adv") continue;
    EXPECT_EQ(phase["tokens"].get<double>(), names[i] == "gen" ? 16.0 : 48.0) << names[i];
    EXPECT_TRUE(positive_finite(phase["mfu"])) << phase.dump();
    EXPECT_TRUE(positive_finite(phase["tokens_per_s"])) << phase.dump();
    if (flops.count(names[i])) EXPECT_DOUBLE_EQ(phase["flops"].get<double>(), flops.at(names[i])) << names[i];
  }
  EXPECT_EQ(p["roles"], nlohmann::json({"actor", "ref", "critic"}));
  // The roles follow the config as the trainer's do: GRPO without a KL loss holds the actor alone (the memory a
  // one-model peer is compared with).
  r = run_command("VERL_LOG_LEVEL=warn " + verl_binary() + " bench ppo --quick --json " + dir +
                  "/grpo.jsonl algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_kl_loss=false");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("roles actor\n"), std::string::npos) << r.out;
  const auto grpo = json_lines(dir + "/grpo.jsonl").at(0);
  EXPECT_EQ(grpo["roles"], nlohmann::json({"actor"}));
  std::vector<std::string> grpo_names;
  for (const auto& phase : grpo["phases"]) grpo_names.push_back(phase["phase"]);
  EXPECT_EQ(grpo_names, (std::vector<std::string>{"gen", "old_log_prob", "adv", "update_actor"}));
}

TEST(BenchCli, BadInputsAreClearErrors) {
  auto r = run_command(verl_binary() + " bench generate --quick --models qwen2-7b");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown model preset 'qwen2-7b'; valid presets: qwen2-25m, qwen2.5-0.5b, tiny"),
            std::string::npos) << r.err;
  r = run_command(verl_binary() + " bench generate --quick --batches 1,x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--batches expects an integer, got 'x'"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " bench ppo --quick --micro-batch-size 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--micro-batch-size (3) must divide"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " bench ppo --quick actor_rollout_ref.actor.clip_ratoi=0.1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("clip_ratio"), std::string::npos) << r.err;
  EXPECT_EQ(run_command(verl_binary() + " bench nothing").exit_code, 2);
  EXPECT_EQ(run_command(verl_binary() + " bench roofline --frobnicate").exit_code, 2);
}

}  // namespace
}  // namespace verl::test
