// verl's MFU estimate (model/flops_counter.h) against verl 0.9.1's own flops_counter.py, run live by
// tests/oracle/flops_counter_oracle.py in .venv/test: the FLOPs of a forward and backward pass for each model family
// verl.cpp runs (config.json shapes of Qwen2.5-7B, Llama-3-8B, Qwen3-8B, Mistral-7B, Qwen1.5-MoE-A2.7B,
// Qwen3-30B-A3B; transformers builds verl's config from the same JSON), and the promised FLOP/s of device names.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/model/flops_counter.h"
#include "verl/model/hf_config.h"

namespace verl::test {
namespace {

using nlohmann::json;

const std::string kFlopsCounterOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/flops_counter_oracle.py";

json flops_model(const std::string& arch, const std::string& model_type, json fields) {
  fields["architectures"] = json::array({arch});
  fields["model_type"] = model_type;
  return fields;
}

TEST(FlopsCounterOracle, EveryFamilysFlopsAndTheDeviceTableAreVerls) {
  const std::vector<json> configs = {
      flops_model("Qwen2ForCausalLM", "qwen2",
                  {{"vocab_size", 152064},
                   {"hidden_size", 3584},
                   {"intermediate_size", 18944},
                   {"num_hidden_layers", 28},
                   {"num_attention_heads", 28},
                   {"num_key_value_heads", 4}}),
      flops_model("LlamaForCausalLM", "llama",
                  {{"vocab_size", 128256},
                   {"hidden_size", 4096},
                   {"intermediate_size", 14336},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 8}}),
      flops_model("Qwen3ForCausalLM", "qwen3",
                  {{"vocab_size", 151936},
                   {"hidden_size", 4096},
                   {"intermediate_size", 12288},
                   {"num_hidden_layers", 36},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 8},
                   {"head_dim", 128}}),
      flops_model("MistralForCausalLM", "mistral",
                  {{"vocab_size", 32000},
                   {"hidden_size", 4096},
                   {"intermediate_size", 14336},
                   {"num_hidden_layers", 32},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 8}}),
      flops_model("Qwen2MoeForCausalLM", "qwen2_moe",
                  {{"vocab_size", 151936},
                   {"hidden_size", 2048},
                   {"intermediate_size", 5632},
                   {"num_hidden_layers", 24},
                   {"num_attention_heads", 16},
                   {"num_key_value_heads", 16},
                   {"moe_intermediate_size", 1408},
                   {"num_experts", 60},
                   {"num_experts_per_tok", 4},
                   {"shared_expert_intermediate_size", 5632}}),
      flops_model("Qwen3MoeForCausalLM", "qwen3_moe",
                  {{"vocab_size", 151936},
                   {"hidden_size", 2048},
                   {"intermediate_size", 6144},
                   {"num_hidden_layers", 48},
                   {"num_attention_heads", 32},
                   {"num_key_value_heads", 4},
                   {"head_dim", 128},
                   {"moe_intermediate_size", 768},
                   {"num_experts", 128},
                   {"num_experts_per_tok", 8}}),
  };
  const std::vector<std::vector<int64_t>> seqlens = {{512, 1024, 37}, {4096}, {1, 2, 3, 2000}};
  const std::vector<std::string> devices = {
      "CPU",         "NVIDIA H200",           "NVIDIA H20",          "NVIDIA H100 80GB HBM3",
      "NVIDIA L40S", "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X", "NVIDIA GeForce RTX 4090"};
  json request = {{"models", json::array()}, {"devices", devices}};
  for (size_t i = 0; i < configs.size(); ++i) {
    request["models"].push_back({{"config", configs[i]}, {"seqlens", seqlens[i % seqlens.size()]}});
  }
  const std::string path = make_temp_dir("flops_counter_oracle") + "/request.json";
  std::ofstream(path) << request.dump();
  const CommandResult r = run_command(test_python() + kFlopsCounterOracle + " " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const json verl = json::parse(r.out);
  for (size_t i = 0; i < configs.size(); ++i) {
    const model::HFConfig config = model::parse_hf_config_text(configs[i].dump());
    model::SequenceLengthSums sums;
    for (int64_t s : seqlens[i % seqlens.size()]) {
      sums.tokens += static_cast<double>(s);
      sums.squared_tokens += static_cast<double>(s * s);
    }
    const double expected = verl.at("flops")[i].get<double>();
    EXPECT_GT(expected, 0.0) << configs[i].at("model_type");
    EXPECT_NEAR(model::estimated_flops(config, sums), expected, 1e-12 * expected) << configs[i].at("model_type");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    const json& expected = verl.at("promised")[i];
    const double got = model::promised_flops_of_device_name(devices[i]);
    if (expected.is_null()) {
      EXPECT_EQ(got, std::numeric_limits<double>::infinity()) << devices[i];
    } else {
      EXPECT_DOUBLE_EQ(got, expected.get<double>()) << devices[i];
    }
  }
  EXPECT_DOUBLE_EQ(model::promised_flops(torch::Device(torch::kCPU)), 448e9);
}

// verl's mfu: FLOPs / seconds / promised / ranks, a third of it for a forward-only pass.
TEST(FlopsCounterOracle, MfuDividesByTimePromisedAndRanks) {
  const model::HFConfig config = model::parse_hf_config_text(flops_model("LlamaForCausalLM", "llama",
                                                                         {{"vocab_size", 1000},
                                                                          {"hidden_size", 64},
                                                                          {"intermediate_size", 128},
                                                                          {"num_hidden_layers", 2},
                                                                          {"num_attention_heads", 4},
                                                                          {"num_key_value_heads", 2}})
                                                                 .dump());
  const model::SequenceLengthSums sums = model::SequenceLengthSums::of_attention_mask(
      torch::tensor({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, torch::kInt64).reshape({2, 5}));
  EXPECT_DOUBLE_EQ(sums.tokens, 8.0);
  EXPECT_DOUBLE_EQ(sums.squared_tokens, 9.0 + 25.0);
  const double flops = model::estimated_flops(config, sums);
  const torch::Device cpu(torch::kCPU);
  EXPECT_DOUBLE_EQ(model::model_flops_utilization(config, sums, 2.0, cpu, 4, false), flops / 2.0 / 448e9 / 4.0);
  EXPECT_DOUBLE_EQ(model::model_flops_utilization(config, sums, 2.0, cpu, 4, true), flops / 2.0 / 448e9 / 12.0);
  EXPECT_EQ(model::model_flops_utilization(config, sums, 0.0, cpu, 4, false), 0.0);
}

}  // namespace
}  // namespace verl::test
