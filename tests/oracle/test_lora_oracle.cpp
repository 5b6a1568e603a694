// LoRA against Hugging Face PEFT (the library verl builds its LoRA with), both directions:
//   - adapters PEFT makes (random non-zero A and B; all-linear, [q_proj, v_proj], exclude_modules + use_rslora, a
//     regex target) load in verl.cpp (model/lora.h) and give PeftModel's logits;
//   - adapters verl.cpp saves (save_peft_adapter) load with peft.PeftModel.from_pretrained on the transformers model,
//     with no warning (a missing or unexpected key fails the script), and give verl.cpp's logits;
//   - verl.cpp's merge_and_unload gives PEFT's merge_and_unload weights.
// tests/oracle/lora_oracle.py is the Python side under .venv/test (peft pinned in scripts/requirements/test.txt).
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

const std::string kLoraOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/lora_oracle.py";
// Both sides in fp32 on the same weights; measured at most ~2e-6 on the 2-core AVX-512 VM. A wrong scale
// (alpha / r read as alpha / (r + 1)) moves the logits by > 0.1.
constexpr double kLogitsAtol = 1e-4;
constexpr double kMergedWeightsAtol = 1e-6;

CommandResult lora_oracle(const std::string& args) {
  return run_command(test_python() + "'" + kLoraOracle + "' " + args);
}

struct Made {
  std::string dir;
  std::vector<std::string> models;
};

const Made& made() {
  static const Made m = [] {
    Made out;
    out.dir = make_temp_dir("lora_oracle");
    CommandResult r = lora_oracle("make '" + out.dir + "'");
    EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
    if (r.exit_code != 0) return out;
    const auto manifest = nlohmann::json::parse(read_file(out.dir + "/manifest.json"));
    for (const auto& name : manifest["models"]) out.models.push_back(name.get<std::string>());
    return out;
  }();
  return m;
}

std::map<std::string, torch::Tensor> load_refs(const std::string& path) {
  std::map<std::string, torch::Tensor> refs;
  for (auto& [name, t] : model::load_tensors(path)) refs[name] = t;
  return refs;
}

// max |ours - ref| over real (unpadded) positions, with the first values side by side.
void expect_logits_close(const torch::Tensor& ours, const torch::Tensor& ref, const torch::Tensor& mask,
                         const std::string& label) {
  ASSERT_EQ(ours.sizes(), ref.sizes()) << label;
  const auto m = mask.to(torch::kBool).unsqueeze(-1).expand(ref.sizes());
  const auto a = ours.to(torch::kFloat64).masked_select(m), b = ref.to(torch::kFloat64).masked_select(m);
  const double diff = (a - b).abs().max().item<double>();
  std::ostringstream first;
  for (int64_t i = 0; i < 4; ++i) first << " " << a[i].item<double>() << "/" << b[i].item<double>();
  EXPECT_LE(diff, kLogitsAtol) << label << ": max |diff| " << diff << "; first values verl.cpp/peft:" << first.str();
  EXPECT_GT(b.abs().max().item<double>(), 0.1) << label << ": reference trivially small";
}

torch::Tensor verl_logits(model::CausalLM& m, const std::map<std::string, torch::Tensor>& refs) {
  torch::NoGradGuard no_grad;
  return m->forward(refs.at("input_ids"), refs.at("attention_mask"), refs.at("position_ids"));
}

TEST(LoraOracle, PeftAdaptersLoadInVerlWithTheSameLogits) {
  ASSERT_FALSE(made().models.empty());
  for (const auto& name : made().models) {
    const auto refs = load_refs(made().dir + "/refs/" + name + ".safetensors");
    auto m = model::load_model(made().dir + "/models/" + name);
    const auto base = verl_logits(m, refs);
    model::load_peft_adapter(m, made().dir + "/adapters/" + name);
    expect_logits_close(verl_logits(m, refs), refs.at("logits"), refs.at("attention_mask"), name);
    // The adapter is not the identity here (else the comparison says nothing about it).
    EXPECT_GT((verl_logits(m, refs) - base).abs().max().item<double>(), 0.05) << name;
  }
}

TEST(LoraOracle, VerlAdaptersLoadInPeftWithTheSameLogits) {
  ASSERT_FALSE(made().models.empty());
  struct Case {
    std::string base;
    model::LoraSpec spec;
  };
  std::vector<Case> cases(4);
  cases[0].base = "llama_all_linear";
  cases[0].spec.rank = 4;
  cases[0].spec.alpha = 16;
  cases[1].base = "qwen2_qv";
  cases[1].spec.rank = 3;
  cases[1].spec.alpha = 5;
  cases[1].spec.target_modules = {"k_proj", "o_proj", "down_proj"};
  cases[2].base = "qwen3_exclude_rslora";
  cases[2].spec.rank = 2;
  cases[2].spec.alpha = 8;
  cases[2].spec.exclude_modules = {"gate_proj", "model.layers.1.self_attn.v_proj"};
  cases[3].base = "qwen3_moe_attention";
  cases[3].spec.rank = 3;
  cases[3].spec.alpha = 6;
  cases[3].spec.target_modules = {"v_proj", "o_proj"};
  const std::string out = make_temp_dir("lora_oracle_verl_adapters");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const std::string base_dir = made().dir + "/models/" + c.base;
    const auto refs = load_refs(made().dir + "/refs/" + c.base + ".safetensors");
    auto m = model::load_model(base_dir);
    model::add_lora(m, c.spec, /*seed=*/10 + i);
    {  // B non-zero: a fresh adapter is the identity and would prove nothing.
      torch::NoGradGuard no_grad;
      auto gen = at::detail::createCPUGenerator(20 + i);
      for (auto& [name, t] : model::lora_named_parameters(m)) {
        if (name.find("lora_B") != std::string::npos) t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.3, gen));
      }
    }
    const std::string adapter = out + "/adapter_" + std::to_string(i);
    model::save_peft_adapter(m, adapter, base_dir);
    const std::string logits_file = out + "/peft_logits_" + std::to_string(i) + ".safetensors";
    CommandResult r = lora_oracle("logits '" + logits_file + "' '" + base_dir + "' '" + adapter + "'");
    ASSERT_EQ(r.exit_code, 0) << c.base << ": " << r.err;
    const auto peft = load_refs(logits_file);
    expect_logits_close(verl_logits(m, refs), peft.at("logits"), refs.at("attention_mask"), "verl adapter on " + c.base);
  }
}

TEST(LoraOracle, MergeAndUnloadEqualsPeft) {
  ASSERT_FALSE(made().models.empty());
  for (const auto& name : made().models) {
    auto m = model::load_model(made().dir + "/models/" + name);
    model::load_peft_adapter(m, made().dir + "/adapters/" + name);
    model::merge_and_unload(m);
    std::map<std::string, torch::Tensor> peft;
    for (auto& [key, t] : model::load_tensors(made().dir + "/merged/" + name)) peft[key] = t;
    for (const auto& item : m->named_parameters()) {
      ASSERT_TRUE(peft.count(item.key())) << name << ": PEFT's merged model lacks " << item.key();
      const double diff = (item.value() - peft.at(item.key())).abs().max().item<double>();
      EXPECT_LE(diff, kMergedWeightsAtol) << name << " " << item.key();
    }
  }
}

}  // namespace
}  // namespace verl::test
