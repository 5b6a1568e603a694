// verl sft with LoRA (model.lora_rank / lora_alpha / target_modules): the loss goes down while only the adapters
// train (the base stays bitwise as loaded), and the checkpoint's huggingface/ folder is PEFT's adapter folder that
// loads back onto the base with the trained model's logits.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/config/sft_config.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

TEST(SFTLora, AdaptersLearnBaseStaysAndCheckpointIsAPeftFolder) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_lora"), 64, 16);
  config::ConfigArgs args;
  args.overrides = {"data.train_files=" + s.data_dir + "/sft_train.parquet",
                    "data.val_files=" + s.data_dir + "/sft_val.parquet",
                    "data.prompt_key=prompt",
                    "data.response_key=response",
                    "data.max_length=40",
                    "data.train_batch_size=16",
                    "data.micro_batch_size_per_gpu=8",
                    "model.partial_pretrain=" + s.model_dir,
                    "model.lora_rank=8",
                    "model.lora_alpha=16",
                    "model.target_modules=[q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj]",
                    "trainer.default_local_dir=" + s.dir + "/run",
                    "trainer.logger=[]",
                    "trainer.total_epochs=3",
                    "trainer.save_freq=12",
                    "optim.lr=1e-2"};
  const config::SFTConfig cfg = config::load_sft_config(args).sft;
  ASSERT_EQ(cfg.lora.lora_rank, 8);
  trainer::SFTTrainer t(cfg, "");
  std::vector<double> losses;
  t.fit([&](int64_t, const std::map<std::string, double>& m) {
    losses.push_back(m.at("train/loss"));
    return true;
  });
  ASSERT_EQ(losses.size(), 12u);
  // Measured on the 2-core Xeon VM: 4.81 -> 4.54 (x0.94) in these 12 steps: rank-8 adapters on a random-init base
  // whose frozen embeddings bound what they can fit (the full fine-tune of test_sft_trainer.cpp drops further).
  EXPECT_LT(losses.back(), 0.97 * losses.front()) << losses.front() << " -> " << losses.back();

  const auto base = model::load_model(s.model_dir);
  auto trained = t.model()->named_parameters();
  for (const auto& item : base->named_parameters()) {
    EXPECT_TRUE(torch::equal(trained[item.key()], item.value())) << item.key() << " changed";
  }
  const std::string hf = s.dir + "/run/global_step_12/huggingface";
  EXPECT_TRUE(std::filesystem::exists(hf + "/adapter_model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(hf + "/tokenizer.json"));
  EXPECT_FALSE(std::filesystem::exists(hf + "/model.safetensors"));
  model::CausalLM reloaded = model::load_model(s.model_dir);
  model::load_peft_adapter(reloaded, hf);
  const auto batch = t.train_dataset().all().slice(0, 4);
  torch::NoGradGuard no_grad;
  const auto want = t.model()->forward(batch.input_ids, batch.attention_mask, batch.position_ids);
  const auto got = reloaded->forward(batch.input_ids, batch.attention_mask, batch.position_ids);
  const auto mask = batch.attention_mask.unsqueeze(-1).to(torch::kFloat32);
  EXPECT_LT(((got - want).abs() * mask).max().item<double>(), 1e-5);
}

}  // namespace
}  // namespace verl::test
