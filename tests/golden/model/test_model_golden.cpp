// Logits of `verl model forward` (one left-padded fp32 batch of ragged rows) against
// tests/golden/model/gen_model_golden.py, an independent plain-PyTorch float64 implementation of the HF
// forward run per row without padding. The script runs at test time on models made by `verl model init`
// (so no model files are committed), under the test-only Python (.venv/test, torch from PyPI); the test
// fails when that is missing. Tolerance: max |C++ - ref| <= 1e-5 * max |ref| per row.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/io/safetensors.h"

namespace verl::test {
namespace {

std::vector<double> floats(const io::TensorView& v) {
  std::vector<double> out(v.numel());
  if (v.dtype == io::DType::F64) {
    std::memcpy(out.data(), v.data, v.nbytes);
  } else {
    std::vector<float> f(v.numel());
    std::memcpy(f.data(), v.data, v.nbytes);
    out.assign(f.begin(), f.end());
  }
  return out;
}

void check_family(const std::string& name, const std::string& init_flags) {
  const std::string dir = make_temp_dir("golden_" + name);
  const std::string model = dir + "/model";
  auto init = run_command(verl_binary() + " model init --out " + model + " --seed 3 --perturb-norms-biases " +
                          "--initializer-range 0.2 --hidden-size 32 --num-layers 2 --vocab-size 64 " +
                          "--intermediate-size 48 " + init_flags);
  ASSERT_EQ(init.exit_code, 0) << init.err;
  // Ragged rows: run as one left-padded batch by C++.
  write_file(dir + "/ids.json",
             R"({"input_ids": [[5, 9, 2, 33, 17, 60, 1, 8, 8, 40, 12], [3], [7, 7, 21, 50], [63, 0, 11, 45, 2, 9]]})");
  auto ref = run_command(test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                         "/tests/golden/model/gen_model_golden.py " + model + " " + dir + "/ids.json " + dir +
                         "/ref.safetensors");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  auto fwd = run_command(verl_binary() + " model forward --model " + model + " --input " + dir +
                         "/ids.json --output " + dir + "/out.safetensors");
  ASSERT_EQ(fwd.exit_code, 0) << fwd.err;
  io::SafetensorsFile r(dir + "/ref.safetensors"), o(dir + "/out.safetensors");
  const std::vector<int64_t> lens = {11, 1, 4, 6};
  for (size_t i = 0; i < lens.size(); ++i) {
    const std::string key = "logits_" + std::to_string(i);
    ASSERT_EQ(o.get(key).shape, (std::vector<int64_t>{lens[i], 64})) << name;
    ASSERT_EQ(o.get(key).dtype, io::DType::F32);
    ASSERT_EQ(r.get(key).shape, o.get(key).shape);
    auto a = floats(o.get(key)), b = floats(r.get(key));
    double max_ref = 0, max_diff = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      max_ref = std::max(max_ref, std::abs(b[k]));
      max_diff = std::max(max_diff, std::abs(a[k] - b[k]));
    }
    EXPECT_GT(max_ref, 0.05) << name << ": logits should not be trivially small";
    EXPECT_LE(max_diff, 1e-5 * max_ref) << name << " row " << i << ": max diff " << max_diff << " max |ref| " << max_ref;
  }
}

class ModelGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_python_imports("torch")) FAIL() << test_python_missing_hint();
  }
};

TEST_F(ModelGolden, LlamaGqaLlama3RopeWithBiases) {
  check_family("llama", "--arch llama --num-heads 4 --num-kv-heads 2 --rope-theta 500000 "
                        "--rope-scaling llama3:8:1:4:16 --attention-bias --mlp-bias");
}

TEST_F(ModelGolden, LlamaTiedLinearRopeMultiQuery) {
  check_family("llama_tied", "--arch llama --num-heads 4 --num-kv-heads 1 --tie-word-embeddings "
                             "--rope-scaling linear:2");
}

TEST_F(ModelGolden, Qwen2) { check_family("qwen2", "--arch qwen2 --num-heads 4 --num-kv-heads 2 --rope-theta 1000000"); }

TEST_F(ModelGolden, Qwen3HeadDimDiffersFromHiddenOverHeads) {
  check_family("qwen3", "--arch qwen3 --num-heads 4 --num-kv-heads 2 --head-dim 16");
}

}  // namespace
}  // namespace verl::test
