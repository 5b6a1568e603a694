// optim.optimizer and optim.override_optimizer_config against torch.optim itself: each case sets verl's keys,
// builds the optimizer through the config and workers::build_optimizer, and runs six steps on float64 parameters
// with a changing LR and a step where one parameter has no gradient; tests/golden/workers/optimizer_reference.py
// runs torch.optim built as verl's build_optimizer builds it (under .venv/test) on the same numbers. Both sides are
// float64, so the bound is 1e-12 relative. Each case also saves its state after three steps and resumes in a
// fresh optimizer: the resumed parameters equal the straight run's bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "support/run_command.h"
#include "support/test_python.h"
#include "unit/workers/worker_test_util.h"
#include "verl/common/error.h"
#include "verl/workers/optimizer.h"

namespace verl::workers {
namespace {

using protocol::Json;

struct OptimizerCase {
  std::string name;
  std::string optimizer;
  Json kwargs;  // override_optimizer_config
};

const std::vector<OptimizerCase>& cases() {
  static const std::vector<OptimizerCase> all = {
      {"adamw", "AdamW", Json::object()},
      {"adamw_amsgrad_eps", "AdamW", {{"amsgrad", true}, {"eps", 1e-3}, {"betas", {0.8, 0.9}}}},
      {"adam_coupled_decay", "Adam", {{"weight_decay", 0.1}}},
      {"adam_decoupled", "Adam", {{"decoupled_weight_decay", true}, {"foreach", false}}},
      {"sgd", "SGD", Json::object()},
      {"sgd_momentum_dampening", "SGD", {{"momentum", 0.9}, {"dampening", 0.1}}},
      {"sgd_nesterov_lr", "SGD", {{"momentum", 0.8}, {"nesterov", true}, {"lr", 0.3}}},
      {"rmsprop", "RMSprop", Json::object()},
      {"rmsprop_centered_momentum", "RMSprop", {{"alpha", 0.9}, {"momentum", 0.5}, {"centered", true}}},
      {"adagrad", "Adagrad", Json::object()},
      {"adagrad_decay_accumulator", "Adagrad", {{"lr_decay", 0.05}, {"initial_accumulator_value", 0.1}}},
  };
  return all;
}

constexpr int kSteps = 6;
const std::vector<double> kLrFactors = {1.0, 0.8, 0.6, 1.0, 0.5, 0.3};
const std::vector<std::vector<int64_t>> kShapes = {{4, 3}, {5}, {2, 2}};

torch::Tensor initial_param(size_t j) {
  const auto n = static_cast<double>(j + 1);
  return (torch::arange(c10::multiply_integers(kShapes[j]), torch::kFloat64) * 0.37 * n).sin().reshape(kShapes[j]);
}

// The gradient of parameter j at a step; parameter 1 has none at step 1 (the optimizer skips it).
std::optional<torch::Tensor> gradient(int step, size_t j) {
  if (step == 1 && j == 1) return std::nullopt;
  const int64_t n = c10::multiply_integers(kShapes[j]);
  return (torch::arange(n, torch::kFloat64) * 0.61 + 0.9 * step + static_cast<double>(j)).cos().mul(0.5 + step % 3)
      .reshape(kShapes[j]);
}

config::OptimConfig optim_of(const OptimizerCase& c) {
  return test::ppo_config({"actor_rollout_ref.actor.optim.lr=0.05",
                           "actor_rollout_ref.actor.optim.optimizer=" + c.optimizer,
                           "actor_rollout_ref.actor.optim.override_optimizer_config=" + c.kwargs.dump()})
      ->actor_rollout_ref.actor.optim;
}

// Steps [from, to) on `params`, setting the group's LR as the schedule would.
void run_steps(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params, double base_lr, int from,
               int to) {
  for (int step = from; step < to; ++step) {
    optimizer.param_groups()[0].options().set_lr(base_lr * kLrFactors[static_cast<size_t>(step)]);
    for (size_t j = 0; j < params.size(); ++j) {
      auto g = gradient(step, j);
      params[j].mutable_grad() = g ? *g : torch::Tensor();
    }
    optimizer.step();
  }
}

std::vector<torch::Tensor> fresh_params() {
  std::vector<torch::Tensor> params;
  for (size_t j = 0; j < kShapes.size(); ++j) params.push_back(initial_param(j).requires_grad_(true));
  return params;
}

TEST(OptimizerGolden, VerlKeysBuildTorchOptimAndResumeExactly) {
  if (!test::test_python_imports("torch")) FAIL() << test::test_python_missing_hint();
  const std::string dir = test::make_temp_dir("optimizer_golden");
  Json spec;
  spec["steps"] = kSteps;
  spec["lr_factors"] = kLrFactors;
  for (size_t j = 0; j < kShapes.size(); ++j) {
    torch::Tensor p = initial_param(j).reshape(-1);
    spec["params"].push_back({kShapes[j], std::vector<double>(p.data_ptr<double>(), p.data_ptr<double>() + p.numel())});
  }
  for (int step = 0; step < kSteps; ++step) {
    Json row = Json::array();
    for (size_t j = 0; j < kShapes.size(); ++j) {
      auto g = gradient(step, j);
      if (!g) {
        row.push_back(nullptr);
        continue;
      }
      torch::Tensor flat = g->reshape(-1).contiguous();
      row.push_back(std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel()));
    }
    spec["grads"].push_back(row);
  }
  for (const auto& c : cases()) {
    const config::OptimConfig defaults = test::ppo_config({})->actor_rollout_ref.actor.optim;
    // The reference gets verl's arguments from the section's defaults and lr 0.05, plus the overrides.
    spec["cases"].push_back({{"name", c.name}, {"optimizer", c.optimizer}, {"lr", 0.05},
                             {"weight_decay", defaults.weight_decay}, {"betas", defaults.betas}, {"kwargs", c.kwargs}});
  }
  test::write_file(dir + "/spec.json", spec.dump());
  auto ref = test::run_command(test::test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                               "/tests/golden/workers/optimizer_reference.py " + dir + "/spec.json " + dir + "/ref.json");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const Json expected = Json::parse(test::read_file(dir + "/ref.json"));

  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    const config::OptimConfig optim = optim_of(c);
    std::vector<torch::Tensor> straight = fresh_params();
    auto optimizer = build_optimizer(straight, optim);
    const std::string expected_class =
        c.kwargs.contains("decoupled_weight_decay") ? std::string("AdamW") : c.optimizer;  // Adam(decoupled) is AdamW
    EXPECT_EQ(optimizer_class_name(*optimizer), expected_class);
    const double base_lr = optimizer->param_groups()[0].options().get_lr();
    run_steps(*optimizer, straight, base_lr, 0, kSteps);

    double worst = 0, moved = 0;
    for (size_t j = 0; j < straight.size(); ++j) {
      const auto& want = expected.at(c.name).at(j);
      torch::Tensor got = straight[j].detach().reshape(-1);
      torch::Tensor start = initial_param(j).reshape(-1);
      ASSERT_EQ(static_cast<int64_t>(want.size()), got.numel());
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double w = want[static_cast<size_t>(i)].get<double>(), g = got[i].item<double>();
        worst = std::max(worst, std::abs(g - w) / (1e-300 + std::max(1.0, std::abs(w))));
        moved = std::max(moved, std::abs(w - start[i].item<double>()));
      }
    }
    EXPECT_LE(worst, 1e-12);
    EXPECT_GT(moved, 1e-2) << "the steps should move the parameters";
    std::cout << "[optimizer golden " << c.name << "] max relative diff " << worst << ", max move " << moved << "\n";

    // Resume: three steps, save, a fresh optimizer on the parameters as they are, load, three more steps.
    std::vector<torch::Tensor> first = fresh_params();
    auto before = build_optimizer(first, optim);
    run_steps(*before, first, base_lr, 0, 3);
    save_optimizer_state(*before, dir + "/" + c.name + ".pt");
    std::vector<torch::Tensor> resumed;
    for (const auto& p : first) resumed.push_back(p.detach().clone().requires_grad_(true));
    auto after = build_optimizer(resumed, optim);
    load_optimizer_state(*after, dir + "/" + c.name + ".pt");
    run_steps(*after, resumed, base_lr, 3, kSteps);
    for (size_t j = 0; j < resumed.size(); ++j) EXPECT_TRUE(torch::equal(resumed[j], straight[j])) << "param " << j;
  }
}

TEST(OptimizerGolden, ResumingWithAnotherOptimizerNamesTheFileAndBoth) {
  const std::string dir = test::make_temp_dir("optimizer_mismatch");
  std::vector<torch::Tensor> params = fresh_params();
  auto sgd = build_optimizer(params, optim_of({"", "SGD", {{"momentum", 0.9}}}));
  run_steps(*sgd, params, 0.05, 0, 2);
  save_optimizer_state(*sgd, dir + "/optim.pt");
  auto adamw = build_optimizer(params, optim_of({"", "AdamW", Json::object()}));
  try {
    load_optimizer_state(*adamw, dir + "/optim.pt");
    FAIL() << "loading SGD's state into AdamW should fail";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir + "/optim.pt"), std::string::npos) << what;
    EXPECT_NE(what.find("torch.optim.SGD"), std::string::npos) << what;
    EXPECT_NE(what.find("torch.optim.AdamW"), std::string::npos) << what;
  }
  // The same class loads.
  auto again = build_optimizer(params, optim_of({"", "SGD", {{"momentum", 0.9}}}));
  EXPECT_NO_THROW(load_optimizer_state(*again, dir + "/optim.pt"));
}

}  // namespace
}  // namespace verl::workers
