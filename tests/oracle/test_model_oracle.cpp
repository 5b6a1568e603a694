// Llama / Qwen2 / Qwen3 / Mistral / Qwen2-MoE / Qwen3-MoE against Hugging Face transformers, the implementation verl
// runs. Models transformers
// creates and saves (random weights, fixed seed; fp32, bf16, sharded; tied and untied embeddings; GQA 4/2, 4/1,
// 4/4; head_dim != hidden / heads; q/k/v biases, q/k norm, linear, llama3 and yarn rope; routed experts with and
// without renormalised weights, a shared expert, dense layers among sparse ones; ForTokenClassification critics) give
// verl.cpp's logits, log-probs, entropy and values within the tolerance table below, on a left-padded batch of ragged
// rows, and the same 64 greedy tokens (and their log-probs, the KV-cache decode path's numbers) as model.generate.
// Folders verl.cpp writes (`verl model init`, `verl model export`) load in transformers without a warning and give the
// same numbers. Configs transformers runs but verl.cpp does not implement fail with one line naming the key.
// tests/oracle/model_oracle.py does the Python side under .venv/test; its docstring says what each tensor is.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/digit_completion_setup.h"
#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/model/weights.h"
#include "verl/rollout/generator.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;
using Refs = std::map<std::string, torch::Tensor>;

const std::string kModelOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/model_oracle.py";

// Tolerances, max |verl.cpp - transformers| over real (unpadded) positions. Both sides compute in fp32 on the same
// weights: fp32 folders as saved, bf16 folders upcast to fp32 when loaded (transformers with dtype=float32,
// verl.cpp's load_model default), so one row per quantity serves every dtype the folders are saved in. Measured on
// a 2-core AVX2 CPU: at most 5.2e-6 on any quantity; a mistake as small as reading rms_norm_eps 1e-5 as 1e-6 moves
// logits by 1.2e-3.
struct Tolerance {
  const char* what;
  double atol;
};
constexpr Tolerance kLogits{"logits", 1e-4};
constexpr Tolerance kLogProbs{"log_probs", 1e-4};
constexpr Tolerance kEntropy{"entropy", 1e-4};
constexpr Tolerance kValues{"values", 1e-4};
// Greedy decoding: transformers' top-1 and top-2 logits must be at least this far apart at every step, or a
// rounding difference could pick the other token; below it the test names the tie instead of flaking.
constexpr double kMinGreedyMargin = 1e-4;
constexpr int64_t kResponseLength = 3;  // model_oracle.py's RESPONSE_LENGTH
constexpr double kTemperature = 0.7;    // model_oracle.py's TEMPERATURE
constexpr int64_t kNewTokens = 64;      // model_oracle.py's NEW_TOKENS

CommandResult model_oracle(const std::string& args) {
  return run_command(test_python() + "'" + kModelOracle + "' " + args);
}

Refs model_load_refs(const std::string& path) {
  Refs refs;
  for (auto& [name, t] : model::load_tensors(path)) refs[name] = t;
  return refs;
}

// The matrix of transformers-made models. It depends only on model_oracle.py (fixed seeds) and the pinned
// transformers (scripts/requirements/test.txt), so it is made once into a folder named by their hash and reused by
// later runs and other processes (one test run alone): made in a fresh folder, then renamed.
struct Matrix {
  std::string dir;
  nlohmann::json manifest;
};

const Matrix& matrix() {
  static const Matrix m = [] {
    const std::string inputs =
        read_file(kModelOracle) + read_file(VERL_SOURCE_DIR_FOR_TESTS "/scripts/requirements/test.txt");
    std::ostringstream key;
    key << std::hex << std::hash<std::string>{}(inputs);
    Matrix out;
    out.dir = std::string(VERL_TEST_TMP_ROOT) + "/model_oracle_matrix_" + key.str();
    if (!fs::exists(out.dir + "/manifest.json")) {
      const std::string fresh = make_temp_dir("model_oracle_matrix");
      CommandResult r = model_oracle("make-models '" + fresh + "'");
      EXPECT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
      if (r.exit_code != 0) return out;
      std::error_code taken;  // another process may have renamed its copy first: use that one
      fs::rename(fresh, out.dir, taken);
      if (taken) fs::remove_all(fresh);
    }
    out.manifest = nlohmann::json::parse(read_file(out.dir + "/manifest.json"));
    return out;
  }();
  return m;
}

std::vector<nlohmann::json> matrix_models(bool critic) {
  std::vector<nlohmann::json> out;
  if (!matrix().manifest.contains("models")) return out;
  for (const auto& m : matrix().manifest["models"]) {
    if (m["critic"].get<bool>() == critic) out.push_back(m);
  }
  return out;
}

// max |ours - ref| where `mask` [B, L'] is 1 (trailing dimensions broadcast), with the first values side by side.
void expect_close(const torch::Tensor& ours, const torch::Tensor& ref, const torch::Tensor& mask, const Tolerance& tol,
                  const std::string& label) {
  ASSERT_EQ(ours.sizes(), ref.sizes()) << label << " " << tol.what;
  auto m = mask.to(torch::kBool);
  while (m.dim() < ref.dim()) m = m.unsqueeze(-1);
  m = m.expand(ref.sizes());
  const auto a = ours.to(torch::kFloat64).masked_select(m), b = ref.to(torch::kFloat64).masked_select(m);
  ASSERT_GT(b.numel(), 0) << label;
  const double diff = (a - b).abs().max().item<double>();
  std::ostringstream first;
  for (int64_t i = 0; i < std::min<int64_t>(4, a.numel()); ++i)
    first << " " << a[i].item<double>() << "/" << b[i].item<double>();
  EXPECT_LE(diff, tol.atol) << label << " " << tol.what << ": max |diff| " << diff << " (atol " << tol.atol
                            << "); first values verl.cpp/transformers:" << first.str();
  EXPECT_GT(b.abs().max().item<double>(), 0.1) << label << " " << tol.what << ": reference trivially small";
}

// Logits over the whole batch, and verl's log-prob pass over the last kResponseLength tokens of each row, with
// both attention kernels (the SDPA default and the eager reference).
void expect_lm_matches(const std::string& model_dir, const Refs& refs, const std::string& label) {
  const auto &ids = refs.at("input_ids"), &mask = refs.at("attention_mask"), &pos = refs.at("position_ids");
  ASSERT_TRUE(torch::equal(pos, model::position_ids_from_mask(mask))) << label << ": verl's position ids";
  model::CausalLM m = model::load_model(model_dir);
  const int64_t L = ids.size(1), R = kResponseLength;
  torch::NoGradGuard no_grad;
  for (auto kernel : {model::AttentionKernel::Sdpa, model::AttentionKernel::Eager}) {
    model::set_attention_kernel(m, kernel);
    const std::string where = label + (kernel == model::AttentionKernel::Sdpa ? " (sdpa)" : " (eager)");
    expect_close(m->forward(ids, mask, pos), refs.at("logits"), mask, kLogits, where);
    auto out = model::response_log_probs(m, ids, mask, pos, ids.narrow(1, L - R, R), kTemperature, true);
    const auto response_mask = mask.narrow(1, L - R, R);
    expect_close(out.log_probs, refs.at("log_probs"), response_mask, kLogProbs, where);
    expect_close(out.entropy, refs.at("entropy"), response_mask, kEntropy, where);
  }
}

void expect_values_match(const std::string& model_dir, const Refs& refs, const std::string& label) {
  const auto &ids = refs.at("input_ids"), &mask = refs.at("attention_mask"), &pos = refs.at("position_ids");
  model::LoadOptions options;
  options.head = model::HeadKind::Value;
  options.value_head_seed = 12345;  // a fresh head would not match: the folder's score.* must be the one loaded
  model::CausalLM m = model::load_model(model_dir, options);
  torch::NoGradGuard no_grad;
  expect_close(m->values(m->hidden_states(ids, mask, pos)), refs.at("values"), mask, kValues, label);
  const int64_t L = ids.size(1), R = kResponseLength;
  expect_close(model::response_values(m, ids, mask, pos, R), refs.at("values").narrow(1, L - R - 1, R),
               mask.narrow(1, L - R, R), kValues, label + " response_values");
}

// rollout::generate, greedy with no eos, against transformers' generate; the first differing step is named
// with transformers' top-1 / top-2 margin there.
void expect_generation_matches(const std::string& model_dir, const Refs& refs, const std::string& label) {
  const auto& margin = refs.at("gen_margin");
  const double min_margin = margin.min().item<double>();
  ASSERT_GE(min_margin, kMinGreedyMargin) << label << ": near tie in transformers' greedy decoding (top-1 minus "
                                          << "top-2 logit " << min_margin << "); pick another seed in model_oracle.py";
  model::CausalLM m = model::load_model(model_dir);
  rollout::SamplingParams p;
  p.do_sample = false;
  p.max_response_length = kNewTokens;
  p.ignore_eos = true;
  p.pad_token_id = m->config.pad_token_id.value_or(0);
  p.calculate_log_probs = true;
  const auto out = rollout::generate(m, refs.at("gen_prompts"), refs.at("gen_prompt_mask"), p);
  const auto& want = refs.at("gen_tokens");
  ASSERT_EQ(out.responses.sizes(), want.sizes()) << label;
  if (torch::equal(out.responses, want)) {
    // The decode path's logits (KV cache, fused decode kernels), which argmax alone would hardly see.
    expect_close(out.rollout_log_probs, refs.at("gen_log_probs"), torch::ones_like(want), kLogProbs,
                 label + " rollout");
  }
  for (int64_t b = 0; b < want.size(0); ++b) {
    for (int64_t t = 0; t < want.size(1); ++t) {
      if (out.responses[b][t].item<int64_t>() != want[b][t].item<int64_t>()) {
        ADD_FAILURE() << label << " row " << b << ": first different token at step " << t << ": verl.cpp "
                      << out.responses[b][t].item<int64_t>() << ", transformers " << want[b][t].item<int64_t>()
                      << " (transformers' top-1 minus top-2 logit there: " << margin[b][t].item<double>() << ")";
        break;
      }
    }
  }
}

TEST(ModelOracle, LogitsLogProbsAndEntropyMatchTransformers) {
  const auto models = matrix_models(false);
  ASSERT_GE(models.size(), 11u) << "the matrix was not written";
  int sharded = 0, bf16 = 0;
  for (const auto& entry : models) {
    const std::string name = entry["name"];
    const std::string dir = matrix().dir + "/models/" + name;
    sharded += fs::exists(dir + "/model.safetensors.index.json") && !fs::exists(dir + "/model.safetensors");
    bf16 += entry["dtype"] == "bfloat16";
    expect_lm_matches(dir, model_load_refs(matrix().dir + "/refs/" + name + ".safetensors"), name);
  }
  EXPECT_GE(sharded, 2) << "sharded folders (model.safetensors.index.json) are part of the matrix";
  EXPECT_GE(bf16, 2) << "bf16 folders are part of the matrix";
}

TEST(ModelOracle, CriticValuesMatchTokenClassification) {
  const auto critics = matrix_models(true);
  ASSERT_GE(critics.size(), 3u) << "the matrix was not written";
  for (const auto& entry : critics) {
    const std::string name = entry["name"];
    expect_values_match(matrix().dir + "/models/" + name,
                        model_load_refs(matrix().dir + "/refs/" + name + ".safetensors"), name);
  }
}

TEST(ModelOracle, GreedyGenerationMatchesGenerateFor64Tokens) {
  const auto models = matrix_models(false);
  ASSERT_GE(models.size(), 11u) << "the matrix was not written";
  for (const auto& entry : models) {
    const std::string name = entry["name"];
    expect_generation_matches(matrix().dir + "/models/" + name,
                              model_load_refs(matrix().dir + "/refs/" + name + ".safetensors"), name);
  }
}

// `verl model forward` (ragged rows in, one left-padded batch inside) on a sharded bf16 folder and a tied one.
TEST(ModelOracle, CliForwardMatchesTransformers) {
  for (const std::string name : {"qwen3_bf16_sharded", "llama_mqa_tied_linear_rope"}) {
    const Refs refs = model_load_refs(matrix().dir + "/refs/" + name + ".safetensors");
    const auto& mask = refs.at("attention_mask");
    const std::string dir = make_temp_dir("model_oracle_cli_" + name);
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t b = 0; b < mask.size(0); ++b) {
      const int64_t n = mask[b].sum().item<int64_t>();
      const auto ids = refs.at("input_ids")[b].narrow(0, mask.size(1) - n, n).contiguous();
      rows.push_back(std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n));
    }
    write_file(dir + "/ids.json", nlohmann::json{{"input_ids", rows}}.dump());
    CommandResult r = run_command(verl_binary() + " model forward --model '" + matrix().dir + "/models/" + name +
                                  "' --input '" + dir + "/ids.json' --output '" + dir + "/out.safetensors'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const Refs out = model_load_refs(dir + "/out.safetensors");
    for (int64_t b = 0; b < mask.size(0); ++b) {
      const int64_t n = mask[b].sum().item<int64_t>();
      const auto ref = refs.at("logits")[b].narrow(0, mask.size(1) - n, n);
      expect_close(out.at("logits_" + std::to_string(b)), ref, torch::ones({n}), kLogits,
                   name + " cli row " + std::to_string(b));
    }
  }
}

// Folders transformers writes and runs, with a setting verl.cpp does not implement: loading them is one line
// naming the setting, never a silently different model.
TEST(ModelOracle, UnsupportedConfigsFailWithOneLineNamingTheKey) {
  ASSERT_TRUE(matrix().manifest.contains("unsupported")) << "the matrix was not written";
  const auto& cases = matrix().manifest["unsupported"];
  ASSERT_GE(cases.size(), 6u);
  const std::string dir = make_temp_dir("model_oracle_unsupported");
  write_file(dir + "/ids.json", R"({"input_ids": [[1, 2, 3]]})");
  for (const auto& c : cases) {
    const std::string name = c["name"];
    CommandResult r = run_command(verl_binary() + " model forward --model '" + matrix().dir + "/unsupported/" + name +
                                  "' --input '" + dir + "/ids.json' --output '" + dir + "/out.safetensors'");
    EXPECT_NE(r.exit_code, 0) << name << ": verl.cpp ran a model it does not implement";
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << name << ": not one line: " << r.err;
    for (const std::string key : c["keys"])
      EXPECT_NE(r.err.find(key), std::string::npos) << name << ": the error does not name '" << key << "': " << r.err;
  }
}

// `verl model init` folders: transformers loads each with no missing / unexpected / mismatched key and no warning
// (the oracle exits 1 naming them), and its numbers are verl.cpp's.
TEST(ModelOracle, ModelInitFoldersLoadInTransformersWithoutWarnings) {
  const std::string dir = make_temp_dir("model_oracle_init");
  const std::string common = " --seed 5 --perturb-norms-biases --initializer-range 0.2 --hidden-size 32 "
                             "--num-layers 2 --vocab-size 300 --intermediate-size 64 --num-heads 4";
  const std::vector<std::pair<std::string, std::string>> folders = {
      {"llama_llama3_rope_biases_bf16",
       "--arch llama --num-kv-heads 2 --rope-theta 500000 "
       "--rope-scaling llama3:8:1:4:16 --attention-bias --mlp-bias --dtype bfloat16"},
      {"llama_tied_linear_rope", "--arch llama --num-kv-heads 1 --tie-word-embeddings --rope-scaling linear:2"},
      {"qwen2_tied", "--arch qwen2 --num-kv-heads 2 --tie-word-embeddings --rope-theta 1000000"},
      {"qwen3_head_dim_bias", "--arch qwen3 --num-kv-heads 4 --head-dim 16 --attention-bias"},
      {"qwen3_yarn_rope", "--arch qwen3 --num-kv-heads 2 --rope-scaling yarn:4:1024"},  // 4096 / 1024: no warning
      {"mistral_gqa", "--arch mistral --num-kv-heads 2 --rope-theta 1000000"},
      {"mistral_sliding_window", "--arch mistral --num-kv-heads 2 --sliding-window 5"},
      {"qwen2_sliding_window", "--arch qwen2 --num-kv-heads 2 --sliding-window 3 --max-window-layers 1"},
      {"qwen3_moe_norm_topk",
       "--arch qwen3_moe --num-kv-heads 2 --num-experts 4 --experts-per-token 2 "
       "--moe-intermediate-size 24 --norm-topk-prob"},
      {"qwen2_moe_sparse_step",
       "--arch qwen2_moe --num-kv-heads 2 --num-experts 5 --experts-per-token 2 "
       "--shared-expert-intermediate-size 40 --decoder-sparse-step 2"},
  };
  std::string paths;
  for (const auto& [name, flags] : folders) {
    CommandResult init = run_command(verl_binary() + " model init --out '" + dir + "/" + name + "'" + common + " " + flags);
    ASSERT_EQ(init.exit_code, 0) << name << ": " << init.err;
    paths += " '" + dir + "/" + name + "'";
  }
  CommandResult ref = model_oracle("reference '" + dir + "/refs'" + paths);
  ASSERT_EQ(ref.exit_code, 0) << "transformers: " << ref.err;
  for (const auto& [name, flags] : folders) {
    const Refs refs = model_load_refs(dir + "/refs/" + name + ".safetensors");
    expect_lm_matches(dir + "/" + name, refs, "init " + name);
    expect_generation_matches(dir + "/" + name, refs, "init " + name);
  }
}

// `verl model export` of a one-step PPO run's actor (LlamaForCausalLM) and critic (LlamaForTokenClassification):
// transformers loads both without a warning and their numbers are verl.cpp's.
TEST(ModelOracle, ExportedCheckpointsLoadInTransformersWithoutWarnings) {
  const DigitCompletionSetup setup = make_digit_completion_setup(make_temp_dir("model_oracle_export_setup"), 8);
  const std::string run = make_temp_dir("model_oracle_export_run");
  std::vector<std::string> o = setup.base_overrides(run);
  for (const char* extra : {"algorithm.adv_estimator=gae", "trainer.total_training_steps=1", "trainer.save_freq=1",
                            "trainer.test_freq=-1", "trainer.num_cpu_threads=1"}) {
    o.push_back(extra);
  }
  CommandResult train = run_command(verl_train_command(o));
  ASSERT_EQ(train.exit_code, 0) << train.err;
  const std::string out = make_temp_dir("model_oracle_export");
  for (const std::string role : {"actor", "critic"}) {
    CommandResult ex = run_command(verl_binary() + " model export --checkpoint '" + run + "/global_step_1/" + role +
                                   "' --out '" + out + "/" + role + "'");
    ASSERT_EQ(ex.exit_code, 0) << role << ": " << ex.err;
  }
  CommandResult ref = model_oracle("reference '" + out + "/refs' '" + out + "/actor' '" + out + "/critic'");
  ASSERT_EQ(ref.exit_code, 0) << "transformers: " << ref.err;
  expect_lm_matches(out + "/actor", model_load_refs(out + "/refs/actor.safetensors"), "exported actor");
  expect_values_match(out + "/critic", model_load_refs(out + "/refs/critic.safetensors"), "exported critic");
}

}  // namespace
}  // namespace verl::test
