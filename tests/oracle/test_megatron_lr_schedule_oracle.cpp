// The learning rate of every update under strategy=megatron (workers/optimizer.h's Megatron schedule, read from
// verl's McoreOptimizerConfig keys by the config layer) against verl 0.9.1's own get_megatron_optimizer_param_scheduler
// over megatron-core's OptimizerParamScheduler, run live by tests/oracle/megatron_lr_schedule_oracle.py in .venv/test:
// every decay style, warmup by steps and by ratio, lr_decay_steps set and null, past the decay steps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/config/config_loader.h"
#include "verl/workers/optimizer.h"

namespace verl::test {
namespace {

const std::string kMegatronLrOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/megatron_lr_schedule_oracle.py";

// The LRs of the first `steps` updates of the actor's optimizer, the optim keys given as verl.cpp overrides.
std::vector<double> our_lrs(const nlohmann::json& optim, int64_t total, int64_t steps) {
  config::ConfigArgs args;
  args.overrides = {"model_engine=megatron"};
  for (const auto& [key, value] : optim.items()) {
    args.overrides.push_back("actor_rollout_ref.actor.optim." + key + "=" +
                             (value.is_string() ? value.get<std::string>() : value.dump()));
  }
  const config::OptimConfig o = config::load_config(args).ppo.actor_rollout_ref.actor.optim;
  EXPECT_TRUE(o.megatron_schedule);
  torch::Tensor parameter = torch::zeros({1}, torch::requires_grad());
  auto optimizer = workers::build_optimizer({parameter}, o);
  workers::LRScheduler scheduler(*optimizer, o, total);
  std::vector<double> lrs;
  for (int64_t i = 0; i < steps; ++i) {
    lrs.push_back(scheduler.last_lr());
    EXPECT_EQ(optimizer->param_groups()[0].options().get_lr(), scheduler.last_lr());
    scheduler.step();
  }
  return lrs;
}

TEST(MegatronLrScheduleOracle, EveryUpdatesLrIsVerlsAndMegatronsSchedule) {
  using nlohmann::json;
  struct Case {
    json optim;
    int64_t total, steps;
  };
  const std::vector<Case> cases = {
      {{{"lr", 1e-6}}, 6, 6},  // verl's defaults: constant, no warmup
      {{{"lr", 2e-6}, {"lr_warmup_steps", 3}}, 8, 8},
      {{{"lr", 2e-6}, {"lr_warmup_steps", 3}, {"lr_warmup_init", 5e-7}}, 8, 8},
      {{{"lr", 1e-6}, {"lr_decay_style", "cosine"}, {"lr_warmup_steps", 2}, {"min_lr", 1e-7}}, 10, 13},
      {{{"lr", 1e-5},
        {"lr_decay_style", "linear"},
        {"lr_warmup_steps_ratio", 0.25},
        {"lr_decay_steps", 8},
        {"lr_warmup_init", 1e-7}},
       12,
       12},
      {{{"lr", 1e-5}, {"lr_decay_style", "cosine"}, {"lr_warmup_steps_ratio", 0.3}}, 7, 9},
      {{{"lr", 1e-5}, {"lr_decay_style", "inverse-square-root"}, {"lr_warmup_steps", 3}, {"min_lr", 4e-6}}, 20, 20},
      {{{"lr", 1e-6}, {"lr_decay_style", "WSD"}, {"lr_wsd_decay_steps", 4}, {"min_lr", 1e-8}}, 10, 12},
      {{{"lr", 1e-6},
        {"lr_decay_style", "WSD"},
        {"lr_wsd_decay_steps", 3},
        {"lr_wsd_decay_style", "linear"},
        {"lr_warmup_steps", 2}},
       9,
       10},
      {{{"lr", 1e-6}, {"lr_decay_style", "WSD"}, {"lr_wsd_decay_steps", 5}, {"lr_wsd_decay_style", "cosine"}}, 10, 10},
      {{{"lr", 1e-6}, {"lr_decay_style", "WSD"}, {"lr_wsd_decay_steps", 5}, {"lr_wsd_decay_style", "minus_sqrt"}},
       10,
       10},
  };
  json request = json::array();
  for (const Case& c : cases) {
    json optim = c.optim;
    optim["total_training_steps"] = c.total;
    request.push_back({{"optim", optim}, {"steps", c.steps}});
  }
  const CommandResult r = run_command(test_python() + kMegatronLrOracle + " '" + request.dump() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  const auto verl = json::parse(r.out).get<std::vector<std::vector<double>>>();
  ASSERT_EQ(verl.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<double> ours = our_lrs(cases[i].optim, cases[i].total, cases[i].steps);
    ASSERT_EQ(ours.size(), verl[i].size());
    for (size_t step = 0; step < ours.size(); ++step) {
      EXPECT_NEAR(ours[step], verl[i][step], 1e-15 + 1e-12 * std::abs(verl[i][step]))
          << "case " << i << " (" << cases[i].optim.dump() << ", " << cases[i].total << " training steps), update "
          << step;
    }
  }
}

}  // namespace
}  // namespace verl::test
