// LoRA (model/lora.h): PEFT's initialisation, the side path's formula, gradients only into the adapters, the
// disabled adapter as the base, the merged weights for a scope restored exactly, generation with the adapters equal
// to generation with the merged model, target selection, PEFT folders and their errors. The PEFT oracle itself is
// tests/oracle/test_lora_oracle.cpp.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"
#include "verl/rollout/generator.h"

namespace verl::model {
namespace {

namespace fs = std::filesystem;

CausalLM base_model(Arch arch = Arch::Qwen2, uint64_t seed = 3) {
  HFConfig c = test::tiny_config(arch);
  c.initializer_range = 0.2;
  CausalLM m(c);
  init_weights(m, seed, /*perturb_norms_and_biases=*/true);
  m->eval();
  return m;
}

struct LoraBatch {
  torch::Tensor ids, mask, pos;
};
LoraBatch lora_ragged_batch() {  // left-padded rows of lengths 6, 3, 5
  auto ids = torch::tensor({{0, 5, 9, 2, 7, 1}, {0, 0, 0, 4, 8, 3}, {0, 11, 6, 12, 2, 9}}, torch::kInt64);
  auto mask = (ids != 0).to(torch::kInt64);
  mask[0][0] = 1;
  ids[0][0] = 13;
  return {ids, mask, position_ids_from_mask(mask)};
}

torch::Tensor logits_of(CausalLM& m, const LoraBatch& b) {
  torch::NoGradGuard no_grad;
  return m->forward(b.ids, b.mask, b.pos);
}

// Real positions only (left padding is masked and meaningless).
double max_diff(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& mask) {
  return ((a - b).abs() * mask.unsqueeze(-1).to(a.scalar_type())).max().item<double>();
}

LoraSpec spec(int64_t r, double alpha, std::vector<std::string> targets = {"all-linear"}) {
  LoraSpec s;
  s.rank = r;
  s.alpha = alpha;
  s.target_modules = std::move(targets);
  return s;
}

// Non-zero B (a fresh adapter is the identity), seeded.
void randomize_b(CausalLM& m, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  for (auto& [name, t] : lora_named_parameters(m)) {
    if (name.find("lora_B") != std::string::npos) t.copy_(torch::empty(t.sizes()).normal_(0.0, 0.3, gen));
  }
}

TEST(Lora, FreshAdapterIsPeftInitAndLeavesTheModelUnchanged) {
  auto m = base_model();
  const LoraBatch b = lora_ragged_batch();
  const auto before = logits_of(m, b);
  add_lora(m, spec(4, 8), /*seed=*/1);
  const auto named = lora_named_parameters(m);
  ASSERT_EQ(named.size(), 2u * 7u * 2u);  // 2 layers x 7 projections x (A, B)
  for (const auto& [name, t] : named) {
    EXPECT_TRUE(t.requires_grad()) << name;
    if (name.find("lora_A") != std::string::npos) {
      // kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)), variance bound^2 / 3.
      const double bound = 1.0 / std::sqrt(static_cast<double>(t.size(1)));
      EXPECT_EQ(t.size(0), 4) << name;
      EXPECT_LE(t.abs().max().item<double>(), bound) << name;
      EXPECT_GT(t.abs().max().item<double>(), 0.8 * bound) << name;
    } else {
      EXPECT_EQ(t.size(1), 4) << name;
      EXPECT_EQ(t.abs().max().item<double>(), 0.0) << name;
    }
  }
  // All A's together: the uniform's variance within 10%.
  std::vector<torch::Tensor> scaled;
  for (const auto& [name, t] : named) {
    if (name.find("lora_A") != std::string::npos) scaled.push_back(t.flatten() * std::sqrt(static_cast<double>(t.size(1))));
  }
  const double var = torch::cat(scaled).var().item<double>();
  EXPECT_NEAR(var, 1.0 / 3.0, 0.1 / 3.0);
  for (const auto& item : m->named_parameters()) {
    if (!is_lora_parameter_name(item.key())) EXPECT_FALSE(item.value().requires_grad()) << item.key();
  }
  EXPECT_EQ(max_diff(logits_of(m, b), before, b.mask), 0.0);
}

TEST(Lora, SidePathIsScaledBA) {
  auto m = base_model();
  add_lora(m, spec(3, 12, {"q_proj", "down_proj"}), 1);
  randomize_b(m, 2);
  auto& q = m->model->layer_list[1]->self_attn->q_proj;
  auto state = lora_state(m);
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 5, 32}, torch::TensorOptions().dtype(torch::kFloat32));
  const auto got = lora_linear(q, x, state.get()).to(torch::kFloat64);
  const auto xd = x.to(torch::kFloat64);
  const auto A = lora_named_parameters(m);
  torch::Tensor a, bb;
  for (const auto& [name, t] : A) {
    if (name == "model.layers.1.self_attn.q_proj.lora_A.weight") a = t.to(torch::kFloat64);
    if (name == "model.layers.1.self_attn.q_proj.lora_B.weight") bb = t.to(torch::kFloat64);
  }
  ASSERT_TRUE(a.defined() && bb.defined());
  const auto want = torch::matmul(xd, q->weight.to(torch::kFloat64).t()) + q->bias.to(torch::kFloat64) +
                    (12.0 / 3.0) * torch::matmul(torch::matmul(xd, a.t()), bb.t());
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-5);
  // Not targeted: k_proj has no adapter.
  EXPECT_FALSE(has_adapter(m->model->layer_list[1]->self_attn->k_proj));
}

TEST(Lora, GradientsReachOnlyTheAdapters) {
  auto m = base_model();
  add_lora(m, spec(2, 4), 1);
  randomize_b(m, 2);
  m->model->gradient_checkpointing = true;  // the recomputed layers must still reach A and B
  m->train();
  const LoraBatch b = lora_ragged_batch();
  m->forward(b.ids, b.mask, b.pos).pow(2).mean().backward();
  for (const auto& item : m->named_parameters()) {
    if (is_lora_parameter_name(item.key())) {
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_GT(item.value().grad().abs().max().item<double>(), 0.0) << item.key();
    } else {
      EXPECT_FALSE(item.value().grad().defined()) << item.key();
    }
  }
}

TEST(Lora, DisabledAdapterIsTheBaseAndMergedScopeRestoresExactly) {
  auto m = base_model(Arch::Qwen3);
  const LoraBatch b = lora_ragged_batch();
  const auto base = logits_of(m, b);
  add_lora(m, spec(4, 16), 1);
  randomize_b(m, 5);
  const auto adapted = logits_of(m, b);
  EXPECT_GT(max_diff(adapted, base, b.mask), 1e-2);  // the adapter matters
  {
    AdapterDisabled off(m);
    EXPECT_EQ(max_diff(logits_of(m, b), base, b.mask), 0.0);
  }
  EXPECT_EQ(max_diff(logits_of(m, b), adapted, b.mask), 0.0);
  std::vector<std::pair<void*, torch::Tensor>> weights;
  for (const auto& item : m->named_parameters()) weights.emplace_back(item.value().data_ptr(), item.value().clone());
  {
    MergedAdapter merged(m);
    EXPECT_LT(max_diff(logits_of(m, b), adapted, b.mask), 1e-4);
  }
  size_t i = 0;
  for (const auto& item : m->named_parameters()) {
    EXPECT_EQ(item.value().data_ptr(), weights[i].first) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), weights[i].second)) << item.key();
    ++i;
  }
}

TEST(Lora, GenerationWithAdaptersEqualsTheMergedModel) {
  auto m = base_model(Arch::Llama);
  add_lora(m, spec(4, 8, {"q_proj", "v_proj", "o_proj", "up_proj"}), 1);
  randomize_b(m, 7);
  // The merged model, built independently: a copy of the weights, merged for good.
  auto merged_model = base_model(Arch::Llama);
  add_lora(merged_model, spec(4, 8, {"q_proj", "v_proj", "o_proj", "up_proj"}), 1);
  {
    torch::NoGradGuard no_grad;
    auto src = lora_named_parameters(m), dst = lora_named_parameters(merged_model);
    for (size_t i = 0; i < src.size(); ++i) dst[i].second.copy_(src[i].second);
  }
  merge_and_unload(merged_model);
  EXPECT_FALSE(lora_state(merged_model));
  const auto prompts = torch::tensor({{0, 0, 5, 9}, {3, 8, 1, 2}}, torch::kInt64);
  const auto prompt_mask = (prompts != 0).to(torch::kInt64);
  rollout::SamplingParams p;
  p.do_sample = false;
  p.max_response_length = 12;
  p.ignore_eos = true;
  p.pad_token_id = 39;
  rollout::GenerationOutput with_merge, side_path;
  {
    torch::NoGradGuard no_grad;
    MergedAdapter merged(m);  // the rollout's route (actor_rollout_ref_worker: generate_sequences)
    with_merge = rollout::generate(m, prompts, prompt_mask, p);
  }
  side_path = rollout::generate(m, prompts, prompt_mask, p);  // no merge: the general decode path with the side path
  const auto reference = rollout::generate(merged_model, prompts, prompt_mask, p);
  EXPECT_TRUE(torch::equal(with_merge.responses, reference.responses)) << with_merge.responses << reference.responses;
  EXPECT_TRUE(torch::equal(side_path.responses, reference.responses)) << side_path.responses << reference.responses;
  // And the adapter changes what is generated (the test could fail).
  AdapterDisabled off(m);
  EXPECT_FALSE(torch::equal(rollout::generate(m, prompts, prompt_mask, p).responses, reference.responses));
}

TEST(Lora, TargetSelection) {
  auto m = base_model();
  EXPECT_EQ(lora_target_names(m, spec(2, 4, {"q_proj", "v_proj"})).size(), 4u);
  LoraSpec ex = spec(2, 4);
  ex.exclude_modules = {"o_proj", "model.layers.0.mlp.down_proj"};
  const auto names = lora_target_names(m, ex);
  EXPECT_EQ(names.size(), 14u - 2u - 1u);
  LoraSpec re = spec(2, 4, {R"(.*layers\.1\.mlp\..*)"});
  re.target_regex = true;
  EXPECT_EQ(lora_target_names(m, re),
            (std::vector<std::string>{"model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj",
                                      "model.layers.1.mlp.down_proj"}));
  try {
    lora_target_names(m, spec(2, 4, {"q_proj", "c_attn"}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("c_attn"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gate_proj"), std::string::npos) << e.what();
  }
  EXPECT_THROW(add_lora(m, spec(0, 4), 1), Error);
}

TEST(Lora, PeftFolderRoundTripAndBadAdapters) {
  const std::string dir = test::make_temp_dir("lora_peft_folder");
  auto m = base_model();
  const LoraBatch b = lora_ragged_batch();
  add_lora(m, spec(4, 8, {"q_proj", "k_proj", "gate_proj"}), 1);
  randomize_b(m, 3);
  save_peft_adapter(m, dir + "/adapter", "/models/base");
  const auto config = nlohmann::json::parse(test::read_file(dir + "/adapter/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["target_modules"], (nlohmann::json{"gate_proj", "k_proj", "q_proj"}));
  EXPECT_EQ(config["base_model_name_or_path"], "/models/base");
  EXPECT_EQ(peft_base_model(dir + "/adapter"), "/models/base");

  auto fresh = base_model();
  load_peft_adapter(fresh, dir + "/adapter");
  EXPECT_EQ(max_diff(logits_of(fresh, b), logits_of(m, b), b.mask), 0.0);

  auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  // The run's lora_rank against the file's r.
  LoraSpec other = spec(8, 8);
  auto m2 = base_model();
  std::string e = error_of([&] { load_peft_adapter(m2, dir + "/adapter", &other); });
  EXPECT_NE(e.find("adapter_config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("r=4"), std::string::npos) << e;
  // An adapter for another base (hidden 64): shapes named with the file.
  HFConfig wide = test::tiny_config(Arch::Qwen2);
  wide.hidden_size = 64;
  CausalLM w(wide);
  e = error_of([&] { load_peft_adapter(w, dir + "/adapter"); });
  EXPECT_NE(e.find("adapter_model.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("expects"), std::string::npos) << e;
  // Unimplemented PEFT options are named.
  auto edited = config;
  edited["use_dora"] = true;
  test::write_file(dir + "/adapter/adapter_config.json", edited.dump());
  e = error_of([&] { read_peft_adapter_config(dir + "/adapter"); });
  EXPECT_NE(e.find("use_dora"), std::string::npos) << e;
  // A tensor missing from the weights.
  edited = config;
  edited["target_modules"] = {"q_proj", "k_proj", "gate_proj", "up_proj"};
  test::write_file(dir + "/adapter/adapter_config.json", edited.dump());
  auto m3 = base_model();
  e = error_of([&] { load_peft_adapter(m3, dir + "/adapter"); });
  EXPECT_NE(e.find("lacks tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("up_proj"), std::string::npos) << e;

  // save_model: refused with the side path on, the merged weights inside a MergedAdapter scope.
  EXPECT_THROW(save_model(m, dir + "/refused"), Error);
  {
    MergedAdapter merged(m);
    save_model(m, dir + "/merged");
  }
  auto loaded = load_model(dir + "/merged");
  EXPECT_LT(max_diff(logits_of(loaded, b), logits_of(m, b), b.mask), 1e-4);
}

TEST(Lora, CheckpointStateHoldsTheAdaptersOnly) {
  const std::string dir = test::make_temp_dir("lora_state");
  auto m = base_model();
  add_lora(m, spec(2, 4), 1);
  randomize_b(m, 9);
  save_lora_state(m, dir + "/state.safetensors");
  EXPECT_EQ(load_tensors(dir + "/state.safetensors").size(), 28u);
  auto fresh = base_model();
  add_lora(fresh, spec(2, 4), 99);
  load_lora_state(fresh, dir + "/state.safetensors");
  auto a = lora_named_parameters(m), c = lora_named_parameters(fresh);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i].second, c[i].second)) << a[i].first;
  auto narrow = base_model();
  add_lora(narrow, spec(2, 4, {"q_proj"}), 1);
  EXPECT_THROW(load_lora_state(narrow, dir + "/state.safetensors"), Error);
}

}  // namespace
}  // namespace verl::model
