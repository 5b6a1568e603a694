// The critic's lora_adapter_path against Hugging Face PEFT: an adapter PEFT makes for verl's critic (TOKEN_CLS on a
// Qwen2ForTokenClassification value model, random non-zero A, B and value head; tests/oracle/critic_lora_oracle.py)
// loads into verl.cpp's CriticWorker and gives PeftModel's values (with lora_linear's scale halved: off by 4.6).
#include <gtest/gtest.h>

#include <map>

#include "support/run_command.h"
#include "support/test_python.h"
#include "verl/config/config_loader.h"
#include "verl/model/value_lora.h"
#include "verl/model/weights.h"
#include "verl/workers/critic_worker.h"

namespace verl::test {
namespace {

const std::string kCriticLoraOracle = VERL_SOURCE_DIR_FOR_TESTS "/tests/oracle/critic_lora_oracle.py";
// Both sides fp32 on the same weights (the LoRA oracle's tolerance). A value head left at the base model's, or a
// scale of alpha / (r + 1), moves the values by > 0.1.
constexpr double kValuesAtol = 1e-4;

TEST(CriticLoraOracle, PeftTokenClassificationAdapterGivesPeftsValues) {
  const std::string dir = make_temp_dir("critic_lora_oracle");
  CommandResult r = run_command(test_python() + "'" + kCriticLoraOracle + "' make '" + dir + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << test_python_missing_hint();
  config::ConfigArgs args;
  args.overrides = {"critic.model.path=" + dir + "/model", "critic.model.lora_rank=4", "critic.model.lora_alpha=8",
                    "critic.model.lora_adapter_path=" + dir + "/adapter", "trainer.device=cpu",
                    "actor_rollout_ref.rollout.n=1", "critic.ppo_mini_batch_size=4",
                    "critic.ppo_micro_batch_size_per_gpu=2", "critic.forward_micro_batch_size_per_gpu=4"};
  auto cfg = std::make_shared<const config::PPOConfig>(config::load_config(args).ppo);
  workers::CriticWorker worker(single_controller::WorkerContext{0, 1, "critic"}, cfg);
  worker.init_model(protocol::DataProto());
  EXPECT_EQ(model::value_lora_parameters(worker.module()).size(), 2u * 7 * 2 + 2);

  std::map<std::string, torch::Tensor> refs;
  for (auto& [name, t] : model::load_tensors(dir + "/refs.safetensors")) refs[name] = t;
  torch::NoGradGuard no_grad;
  model::CausalLM& m = worker.module();
  const torch::Tensor ours =
      m->values(m->hidden_states(refs.at("input_ids"), refs.at("attention_mask"), refs.at("position_ids")));
  const torch::Tensor mask = refs.at("attention_mask").to(torch::kBool);
  const torch::Tensor a = ours.masked_select(mask).to(torch::kFloat64);
  const torch::Tensor b = refs.at("values").masked_select(mask).to(torch::kFloat64);
  const double diff = (a - b).abs().max().item<double>();
  EXPECT_LE(diff, kValuesAtol) << "first values verl.cpp/peft: " << a[0].item<double>() << "/" << b[0].item<double>()
                               << " " << a[1].item<double>() << "/" << b[1].item<double>();
  EXPECT_GT(b.abs().max().item<double>(), 0.1) << "reference trivially small";
}

}  // namespace
}  // namespace verl::test
