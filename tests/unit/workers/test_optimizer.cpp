// Optimizer and LR schedule against hand-computed values (spec §4.6).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "verl/common/error.h"
#include "verl/workers/optimizer.h"

namespace verl::workers {
namespace {

config::OptimConfig make_optim(const std::string& type, int64_t warmup = -1, double ratio = 0.0) {
  config::OptimConfig optim;
  optim.lr = 0.1;
  optim.weight_decay = 0.01;
  optim.betas = {0.9, 0.999};
  optim.lr_warmup_steps = warmup;
  optim.lr_warmup_steps_ratio = ratio;
  optim.lr_scheduler_type = type;
  optim.min_lr_ratio = 0.0;
  optim.num_cycles = 0.5;
  return optim;
}

TEST(Optimizer, WarmupStepsFromCountOrRatio) {
  EXPECT_EQ(num_warmup_steps(make_optim("constant", 5), 100), 5);
  EXPECT_EQ(num_warmup_steps(make_optim("constant", -1, 0.25), 10), 2);  // int(2.5)
  EXPECT_EQ(num_warmup_steps(make_optim("constant", -1, 0.0), 10), 0);
}

TEST(Optimizer, ConstantScheduleWithWarmup) {
  auto optim = make_optim("constant", 4);
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 0), 0.0);
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 1), 0.25);
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 3), 0.75);
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 4), 1.0);
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 9), 1.0);
}

TEST(Optimizer, CosineScheduleHandValues) {
  auto optim = make_optim("cosine", 2);
  optim.min_lr_ratio = 0.1;
  // total 10, warmup 2: p = (s - 2) / 8; factor = max(0.1, 0.5 * (1 + cos(pi * p)) * 0.9 + 0.1)
  EXPECT_DOUBLE_EQ(lr_factor(optim, 10, 1), 0.5);
  EXPECT_NEAR(lr_factor(optim, 10, 2), 1.0, 1e-15);
  EXPECT_NEAR(lr_factor(optim, 10, 6), 0.55, 1e-12);  // p = 0.5: cos = 0 -> 0.45 + 0.1
  EXPECT_NEAR(lr_factor(optim, 10, 10), 0.1, 1e-12);
}

TEST(Optimizer, UnknownScheduleIsAnError) {
  EXPECT_THROW(lr_factor(make_optim("linear"), 10, 3), Error);
}

TEST(Optimizer, AdamWFirstStepIsSignedLrPlusDecay) {
  // Step 1 with bias correction: m_hat = g, v_hat = g^2, so p <- p * (1 - lr * wd) - lr * g / (|g| + eps).
  torch::Tensor p = torch::tensor({1.0f, -2.0f, 0.5f}).requires_grad_(true);
  auto optimizer = build_optimizer({p}, make_optim("constant"));
  p.mutable_grad() = torch::tensor({0.3f, -0.2f, 0.0f});
  optimizer->step();
  const double lr = 0.1, wd = 0.01;
  EXPECT_NEAR(p[0].item<double>(), 1.0 * (1 - lr * wd) - lr * 0.3 / (0.3 + 1e-8), 1e-6);
  EXPECT_NEAR(p[1].item<double>(), -2.0 * (1 - lr * wd) + lr * 0.2 / (0.2 + 1e-8), 1e-6);
  EXPECT_NEAR(p[2].item<double>(), 0.5 * (1 - lr * wd), 1e-6);
}

TEST(Optimizer, SchedulerSetsLrOnEveryStep) {
  torch::Tensor p = torch::zeros({2}).requires_grad_(true);
  auto optim = make_optim("constant", 2);
  auto optimizer = build_optimizer({p}, optim);
  LRScheduler scheduler(*optimizer, optim, 10);
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 0.0);
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), 0.0);
  scheduler.step();
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 0.05);
  scheduler.step();
  EXPECT_DOUBLE_EQ(optimizer->param_groups()[0].options().get_lr(), 0.1);
  LRScheduler restored(*optimizer, optim, 10);
  restored.load_state_dict(nlohmann::json{{"step", 1}, {"base_lr", 0.1}});
  EXPECT_DOUBLE_EQ(restored.last_lr(), 0.05);
  EXPECT_THROW(restored.load_state_dict(nlohmann::json::object()), Error);
}

TEST(Optimizer, ClipGradNormScalesToMaxNorm) {
  torch::Tensor a = torch::zeros({1}).requires_grad_(true);
  torch::Tensor b = torch::zeros({1}).requires_grad_(true);
  a.mutable_grad() = torch::tensor({3.0f});
  b.mutable_grad() = torch::tensor({4.0f});
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().item<double>(), 3.0 / (5.0 + 1e-6), 1e-6);
  EXPECT_NEAR(b.grad().item<double>(), 4.0 / (5.0 + 1e-6), 1e-6);
  // Below the limit nothing changes; a non-finite norm leaves gradients alone.
  EXPECT_NEAR(clip_grad_norm({a, b}, 10.0), 1.0, 1e-5);
  EXPECT_NEAR(b.grad().item<double>(), 4.0 / (5.0 + 1e-6), 1e-6);
  b.mutable_grad() = torch::tensor({std::nanf("")});
  EXPECT_FALSE(std::isfinite(clip_grad_norm({a, b}, 1.0)));
  EXPECT_NEAR(a.grad().item<double>(), 3.0 / (5.0 + 1e-6), 1e-6);
}

TEST(Optimizer, StateRoundTripContinuesExactly) {
  const auto dir = std::filesystem::temp_directory_path() / "verl_optimizer_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "optim.pt").string();
  auto optim = make_optim("constant");
  torch::manual_seed(0);
  torch::Tensor p = torch::randn({4}).requires_grad_(true);
  auto optimizer = build_optimizer({p}, optim);
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = torch::full({4}, 0.1f * (i + 1));
    optimizer->step();
  }
  save_optimizer_state(*optimizer, path);
  torch::Tensor q = p.detach().clone().requires_grad_(true);
  auto reloaded = build_optimizer({q}, optim);
  load_optimizer_state(*reloaded, path);
  p.mutable_grad() = torch::full({4}, -0.3f);
  q.mutable_grad() = torch::full({4}, -0.3f);
  optimizer->step();
  reloaded->step();
  EXPECT_TRUE(torch::equal(p.detach(), q.detach()));
  std::filesystem::remove_all(dir);
}

// A flipped byte in a saved optimizer state: LibTorch's archive reader loads it silently; the CRC32C written
// beside it (common/file_digest.h) makes the load fail with one line naming the file.
TEST(Optimizer, AFlippedByteIsDetectedAtLoad) {
  const auto dir = std::filesystem::temp_directory_path() / "verl_optimizer_flipped";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "optim_world_size_1_rank_0.pt").string();
  torch::Tensor p = torch::linspace(-1, 1, 4096).requires_grad_(true);
  auto optimizer = build_optimizer({p}, make_optim("constant"));
  p.mutable_grad() = torch::full({4096}, 0.25f);
  optimizer->step();
  save_optimizer_state(*optimizer, path);
  // Flip one bit in the middle of the file: inside the exp_avg / exp_avg_sq data.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  auto reloaded = build_optimizer({p}, make_optim("constant"));
  try {
    load_optimizer_state(*reloaded, path);
    FAIL() << "a damaged optimizer state loaded without an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("[optim] '" + path + "' is damaged: ", 0), 0u) << message;
    EXPECT_NE(message.find(path + ".crc32c"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(Optimizer, LoadingGarbageNamesTheFile) {
  const auto path = (std::filesystem::temp_directory_path() / "verl_optimizer_garbage.pt").string();
  { std::FILE* f = std::fopen(path.c_str(), "wb"); std::fputs("not an archive", f); std::fclose(f); }
  torch::Tensor p = torch::zeros({2}).requires_grad_(true);
  auto optimizer = build_optimizer({p}, make_optim("constant"));
  try {
    load_optimizer_state(*optimizer, path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace verl::workers
