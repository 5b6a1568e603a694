// `verl bench generate --lora-rank` (issue 26): one row per LoRA mode and batch, and the merged weights and the
// side path generate the same tokens greedily on the tiny preset (B random, so a wrong side path shows).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "verl/bench/generate_bench.h"

namespace verl::bench {
namespace {

GenerateBenchOptions tiny_lora_options() {
  GenerateBenchOptions o;
  o.models = {"tiny"};
  o.batches = {1, 3};
  o.prompt_length = 6;
  o.response_length = 8;
  o.greedy = true;
  o.repeats = 1;
  o.lora_rank = 4;
  o.lora_alpha = 8;
  o.roofline.gemm_sizes = {32};
  o.roofline.seconds_per_point = 0.01;
  o.roofline.memory = false;
  return o;
}

const GenerateBenchRow& row_of(const GenerateBenchResult& r, int64_t batch, const std::string& mode) {
  for (const auto& row : r.rows) {
    if (row.batch == batch && row.lora == mode) return row;
  }
  throw std::runtime_error("no row for batch " + std::to_string(batch) + " lora " + mode);
}

TEST(GenerateBenchLora, RowsPerModeAndMergedEqualsSidePathGreedily) {
  const GenerateBenchResult r = run_generate_bench(tiny_lora_options());
  ASSERT_EQ(r.rows.size(), 6u);  // 2 batches x (off, merged, side)
  for (int64_t B : {1, 3}) {
    const auto& off = row_of(r, B, "off");
    const auto& merged = row_of(r, B, "merged");
    const auto& side = row_of(r, B, "side");
    EXPECT_GT(merged.merge_seconds, 0);
    EXPECT_EQ(side.merge_seconds, 0);
    ASSERT_EQ(merged.responses.sizes(), (std::vector<int64_t>{B, 8}));
    EXPECT_TRUE(torch::equal(merged.responses, side.responses)) << "batch " << B << "\nmerged " << merged.responses
                                                                << "\nside " << side.responses;
    // The adapters change the model: the base generates other tokens (the check above is not trivially true).
    EXPECT_FALSE(torch::equal(off.responses, side.responses)) << "batch " << B;
  }
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["lora_rank"], 4);
  EXPECT_EQ(j["rows"][1]["lora"], "merged");
  EXPECT_NE(format_generate_bench(r).find("tiny lora side"), std::string::npos);
}

TEST(GenerateBenchLora, UnknownModeIsAnError) {
  GenerateBenchOptions o = tiny_lora_options();
  o.lora_modes = {"merged", "fused"};
  EXPECT_THROW(run_generate_bench(o), std::exception);
}

}  // namespace
}  // namespace verl::bench
