// Three update_critic calls of a tiny value model on a fixed batch against
// tests/golden/workers/gen_critic_golden.py, an independent float64 PyTorch implementation of verl's critic
// update (value forward per row without padding, clipped value loss, micro-batch scaling, grad clipping,
// torch.optim's class as verl's build_optimizer builds it (AdamW, or critic.optim.optimizer with
// override_optimizer_config), LambdaLR). The script runs at test time on a model made by `verl model init`, under
// the test-only Python (.venv/test).
// Tolerances (C++ runs in float32): metrics (clip fractions included) within 2e-5 relative (+1e-7 absolute);
// final parameters within 5e-5 absolute (measured: 8.8e-6 and 1.7e-6, Adam amplifies
// float32 rounding of tiny gradients), while the three updates move parameters by up to 0.06-0.08, over 1000x
// the tolerance.
#include <gtest/gtest.h>

#include <cmath>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/model/model_tools.h"
#include "verl/model/weights.h"
#include "verl/workers/critic_worker.h"
#include "unit/workers/worker_test_util.h"

namespace verl::workers {
namespace {

using protocol::DataProto;
using protocol::Json;

struct CriticCase {
  std::string name;
  std::string loss_agg_mode;
  int64_t epochs;
  std::string schedule;
  int64_t layers;
  double grad_clip;
  std::string optimizer = "AdamW";  // critic.optim.optimizer
  Json kwargs = Json::object();     // critic.optim.override_optimizer_config
};

void run_case(const CriticCase& c) {
  const std::string dir = test::make_temp_dir("critic_golden_" + c.name);
  const std::string lm = test::make_lm_folder("critic_golden_lm_" + c.name, 17, c.layers);
  const std::string value_dir = test::make_value_folder(lm, "critic_golden_value_" + c.name, 23);
  const int64_t P = 5, R = 4, B = 8;
  DataProto batch = test::make_ppo_batch(B, P, R, 31);
  model::NamedTensors tensors;
  for (const auto& [key, t] : batch.batch) tensors.emplace_back(key, t);
  model::save_tensors(dir + "/batch.safetensors", tensors);

  const double lr = 0.01;
  Json settings = {{"prompt_length", P},
                   {"response_length", R},
                   {"mini", 4},
                   {"micro", 2},
                   {"epochs", c.epochs},
                   {"calls", 3},
                   {"lr", lr},
                   {"betas", {0.9, 0.999}},
                   {"weight_decay", 0.01},
                   {"grad_clip", c.grad_clip},
                   {"cliprange_value", 0.2},
                   {"loss_agg_mode", c.loss_agg_mode},
                   {"schedule", c.schedule},
                   {"warmup_steps", 0},
                   {"total_steps", 3},
                   {"min_lr_ratio", 0.1},
                   {"num_cycles", 0.5},
                   {"optimizer", c.optimizer},
                   {"optimizer_kwargs", c.kwargs}};
  test::write_file(dir + "/settings.json", settings.dump());
  auto ref = test::run_command(test::test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                               "/tests/golden/workers/gen_critic_golden.py " + value_dir + " " + dir +
                               "/batch.safetensors " + dir + "/settings.json " + dir + "/ref");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  Json expected = Json::parse(test::read_file(dir + "/ref.json"));

  auto config = test::ppo_config(
      {"critic.model.path=" + value_dir, "trainer.device=cpu", "actor_rollout_ref.rollout.n=1",
       "critic.ppo_mini_batch_size=4", "critic.ppo_micro_batch_size_per_gpu=2",
       "critic.ppo_epochs=" + std::to_string(c.epochs), "critic.optim.lr=0.01",
       "critic.optim.lr_scheduler_type=" + c.schedule, "critic.optim.min_lr_ratio=0.1",
       "critic.optim.total_training_steps=3", "critic.cliprange_value=0.2",
       "critic.grad_clip=" + std::to_string(c.grad_clip), "critic.loss_agg_mode=" + c.loss_agg_mode,
       "critic.optim.optimizer=" + c.optimizer, "critic.optim.override_optimizer_config=" + c.kwargs.dump()});
  CriticWorker worker(single_controller::WorkerContext{0, 1, "critic"}, config);
  worker.init_model(DataProto());
  bool clipped_grad = false, clipped_value = false;
  for (int call = 0; call < 3; ++call) {
    Json got = worker.update_critic(batch).meta_info["metrics"];
    const Json& want = expected[call];
    for (const char* key : {"critic/vf_loss", "critic/vpred_mean", "critic/grad_norm", "critic/lr", "critic/vf_clipfrac"}) {
      ASSERT_EQ(got[key].size(), want[key].size()) << key;
      for (size_t i = 0; i < want[key].size(); ++i) {
        const double a = got[key][i].get<double>(), b = want[key][i].get<double>();
        // float32 training over three updates: the CPU's GEMM kernels move the last digits (a 3e-5 relative gap
        // in vpred_mean on a 2-core AMD EPYC, where the parameters moved 0.08 and differ by 7e-6).
        EXPECT_NEAR(a, b, 5e-5 * std::abs(b) + 1e-6) << c.name << " call " << call << " " << key << "[" << i << "]";
        if (std::string(key) == "critic/grad_norm" && b > c.grad_clip) clipped_grad = true;
        if (std::string(key) == "critic/vf_clipfrac" && b > 0) clipped_value = true;
      }
    }
  }
  EXPECT_TRUE(clipped_value) << "the batch should exercise value clipping";
  if (c.grad_clip < 1.0) EXPECT_TRUE(clipped_grad) << "the case should exercise gradient clipping";

  io::SafetensorsFile final_ref(dir + "/ref.safetensors");
  model::LoadOptions o;
  o.head = model::HeadKind::Value;
  model::CausalLM start = model::load_model(value_dir, o);
  auto start_params = start->named_parameters();
  double max_diff = 0, max_move = 0;
  for (const auto& item : worker.module()->named_parameters()) {
    torch::Tensor want = model::tensor_from_view(final_ref.get(item.key()));
    torch::Tensor got = item.value().detach().to(torch::kFloat64);
    max_diff = std::max(max_diff, (got - want).abs().max().item<double>());
    max_move = std::max(max_move, (want - start_params[item.key()].to(torch::kFloat64)).abs().max().item<double>());
  }
  EXPECT_LE(max_diff, 5e-5) << c.name;
  EXPECT_GE(max_move, 1e-2) << c.name << ": the updates should move the parameters";
  std::cout << "[ critic golden " << c.name << " ] max |param diff| " << max_diff << ", max |param move| " << max_move
            << "\n";
}

class CriticGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::test_python_imports("torch")) FAIL() << test::test_python_missing_hint();
  }
};

TEST_F(CriticGolden, TokenMeanTwoEpochsCosineTwoLayers) { run_case({"token_mean", "token-mean", 2, "cosine", 2, 0.5}); }

TEST_F(CriticGolden, SeqMeanTokenSumOneEpochConstantOneLayer) {
  run_case({"seq_sum", "seq-mean-token-sum", 1, "constant", 1, 1.0});
}

// critic.optim.optimizer with override_optimizer_config reaches the worker's optimizer and its LR schedule.
TEST_F(CriticGolden, RMSpropCenteredWithMomentumCosine) {
  run_case({"rmsprop",
            "token-mean",
            1,
            "cosine",
            1,
            1.0,
            "RMSprop",
            {{"momentum", 0.5}, {"centered", true}, {"lr", 0.002}}});
}

TEST_F(CriticGolden, SGDNesterovWithItsOwnLr) {
  run_case({"sgd", "token-mean", 2, "constant", 1, 1.0, "SGD", {{"momentum", 0.9}, {"nesterov", true}, {"lr", 0.1}}});
}

}  // namespace
}  // namespace verl::workers
