// The optim section against verl's own code (tests/golden/workers/optimizer_reference.py runs verl 0.9.1's
// build_optimizer and LR schedules under .venv/test):
// - optim.optimizer and override_optimizer_config: each case sets verl's keys, builds the optimizer through the
//   config and workers::build_optimizer, and runs six steps on float64 parameters with a changing LR and a step
//   where one parameter has no gradient; verl builds torch.optim's optimizer from the same keys. Both sides are
//   float64, so the bound is 1e-12 relative. Each case also saves its state after three steps and resumes in a
//   fresh optimizer: the resumed parameters equal the straight run's bit for bit.
// - lr_scheduler_type, warmup, min_lr_ratio, num_cycles and zero_indexed_step: the LR of each update.
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
  return (torch::arange(n, torch::kFloat64) * 0.61 + 0.9 * step + static_cast<double>(j))
      .cos()
      .mul(0.5 + step % 3)
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

// optimizer_reference.py's output for `spec` (an empty object when it fails; the assertion shows why).
Json run_reference(const Json& spec, const std::string& dir) {
  test::write_file(dir + "/spec.json", spec.dump());
  auto ref =
      test::run_command(test::test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                        "/tests/golden/workers/optimizer_reference.py " + dir + "/spec.json " + dir + "/ref.json");
  EXPECT_EQ(ref.exit_code, 0) << ref.err;
  return ref.exit_code == 0 ? Json::parse(test::read_file(dir + "/ref.json")) : Json::object();
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
    spec["cases"].push_back({{"name", c.name},
                             {"optimizer", c.optimizer},
                             {"lr", 0.05},
                             {"weight_decay", defaults.weight_decay},
                             {"betas", defaults.betas},
                             {"kwargs", c.kwargs}});
  }
  const Json reference = run_reference(spec, dir);
  ASSERT_TRUE(reference.contains("cases")) << reference.dump();
  const Json& expected = reference.at("cases");

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

TEST(OptimizerGolden, LrSchedulesMatchVerls) {
  if (!test::test_python_imports("torch")) FAIL() << test::test_python_missing_hint();
  struct Schedule {
    std::string name, type;
    int64_t warmup, total;
    double min_lr_ratio, num_cycles;
    bool zero_indexed_step;
  };
  const std::vector<Schedule> schedules = {
      {"cosine_zero_indexed", "cosine", 3, 10, 0.1, 0.5, true},
      {"cosine_one_indexed", "cosine", 3, 10, 0.1, 0.5, false},
      {"cosine_one_indexed_no_warmup_full_cycle", "cosine", 0, 8, 0.0, 1.0, false},
      {"constant_ignores_the_flag", "constant", 2, 10, 0.0, 0.5, false},
  };
  const int steps = 12;  // past the total: the schedule's tail too
  Json spec = {{"cases", Json::array()}, {"params", Json::array()}, {"steps", 0}, {"grads", Json::array()}};
  for (const auto& s : schedules) {
    spec["schedules"].push_back({{"name", s.name},
                                 {"type", s.type},
                                 {"warmup", s.warmup},
                                 {"total", s.total},
                                 {"min_lr_ratio", s.min_lr_ratio},
                                 {"num_cycles", s.num_cycles},
                                 {"zero_indexed_step", s.zero_indexed_step},
                                 {"steps", steps}});
  }
  const Json reference = run_reference(spec, test::make_temp_dir("lr_schedule_golden"));
  ASSERT_TRUE(reference.contains("schedules")) << reference.dump();
  for (const auto& s : schedules) {
    SCOPED_TRACE(s.name);
    const auto optim = test::ppo_config({"actor_rollout_ref.actor.optim.lr=1.0",
                                         "actor_rollout_ref.actor.optim.lr_scheduler_type=" + s.type,
                                         "actor_rollout_ref.actor.optim.lr_warmup_steps=" + std::to_string(s.warmup),
                                         "actor_rollout_ref.actor.optim.min_lr_ratio=" + std::to_string(s.min_lr_ratio),
                                         "actor_rollout_ref.actor.optim.num_cycles=" + std::to_string(s.num_cycles),
                                         std::string("actor_rollout_ref.actor.optim.zero_indexed_step=") +
                                             (s.zero_indexed_step ? "true" : "false")})
                           ->actor_rollout_ref.actor.optim;
    std::vector<torch::Tensor> params = fresh_params();
    auto optimizer = build_optimizer(params, optim);
    LRScheduler scheduler(*optimizer, optim, s.total);
    const Json& want = reference.at("schedules").at(s.name);
    ASSERT_EQ(want.size(), static_cast<size_t>(steps));
    for (int k = 0; k < steps; ++k) {
      EXPECT_NEAR(scheduler.last_lr(), want[static_cast<size_t>(k)].get<double>(), 1e-12) << "update " << k;
      scheduler.step();
    }
  }
  // The flag moves the cosine schedule by one update.
  const Json& zero = reference.at("schedules").at("cosine_zero_indexed");
  const Json& one = reference.at("schedules").at("cosine_one_indexed");
  EXPECT_DOUBLE_EQ(one[0].get<double>(), zero[1].get<double>());
  EXPECT_NE(one[0].get<double>(), zero[0].get<double>());
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
