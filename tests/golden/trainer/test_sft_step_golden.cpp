// One verl SFT training step (3 micro batches with gradient accumulation, right truncation, clip_grad_norm,
// AdamW; padded, with gradient checkpointing, and packed) against tests/golden/trainer/sft_step_reference.py: an
// independent float64 PyTorch implementation written from verl's fsdp_sft_trainer.py / sft_dataset.py (verl's own
// shifted loss mask), over the reference forward of tests/golden/model/gen_model_golden.py. Runs under the test-only
// Python (.venv/test).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "support/run_command.h"
#include "support/test_python.h"
#include "support/tiny_sft_setup.h"
#include "verl/config/sft_config.h"
#include "verl/data/sft_dataset.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

TEST(SFTStepGolden, OneStepMatchesTorchReference) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_step_golden"), 12, 4, /*hidden=*/32, /*layers=*/2,
                                       /*seed=*/5);
  config::ConfigArgs args;
  args.overrides = {"data.train_files=" + s.data_dir + "/sft_train.parquet",
                    "data.val_files=" + s.data_dir + "/sft_val.parquet",
                    "data.prompt_key=prompt",
                    "data.response_key=response",
                    "data.max_length=22",
                    "data.truncation=right",
                    "data.train_batch_size=12",
                    "data.micro_batch_size_per_gpu=4",
                    "model.partial_pretrain=" + s.model_dir,
                    "trainer.default_local_dir=" + s.dir + "/run",
                    "trainer.logger=[]",
                    "trainer.total_training_steps=1",
                    "optim.lr=0.01",
                    "optim.betas=[0.9,0.95]",
                    "optim.weight_decay=0.05",
                    "optim.warmup_steps_ratio=0.0",
                    "optim.clip_grad=0.5",
                    "optim.lr_scheduler=constant"};
  config::SFTConfig cfg = config::load_sft_config(args).sft;
  trainer::SFTTrainer t(cfg, "");

  nlohmann::json rows = nlohmann::json::array();
  int truncated = 0;
  for (const auto& row : t.train_dataset().rows()) {
    std::vector<int32_t> p = data::sft_prompt_ids(t.tokenizer(), *row.find("prompt"));
    std::vector<int32_t> r = data::sft_response_ids(t.tokenizer(), row.find("response")->as_string());
    truncated += p.size() + r.size() > 22;
    rows.push_back({{"prompt_ids", p}, {"response_ids", r}});
  }
  EXPECT_GT(truncated, 0) << "the case should exercise right truncation";
  nlohmann::json case_json = {{"model_dir", s.model_dir},      {"rows", rows},   {"max_length", 22},
                              {"truncation", "right"},         {"pad_id", *t.tokenizer().pad_token_id()},
                              {"micro_batch_size", 4},         {"lr", 0.01},     {"betas", {0.9, 0.95}},
                              {"weight_decay", 0.05},          {"clip_grad", 0.5}};
  write_file(s.dir + "/case.json", case_json.dump());
  CommandResult ref = run_command(test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                                  "/tests/golden/trainer/sft_step_reference.py " + s.dir + "/case.json " + s.dir +
                                  "/ref.json");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  nlohmann::json want = nlohmann::json::parse(read_file(s.dir + "/ref.json"));

  const double before_ref = want["loss_before"], norm_ref = want["grad_norm"], after_ref = want["loss_after"];
  EXPECT_GT(norm_ref, 0.5) << "clipping should be active";
  EXPECT_LT(after_ref, before_ref);
  // The same step padded, with gradient checkpointing (the default), and packed (use_remove_padding=true).
  for (const auto& [remove_padding, checkpointing] :
       {std::pair{"false", "false"}, std::pair{"false", "true"}, std::pair{"true", "true"}}) {
    SCOPED_TRACE(std::string("use_remove_padding=") + remove_padding + " gradient checkpointing " + checkpointing);
    config::ConfigArgs run = args;
    run.overrides.push_back(std::string("use_remove_padding=") + remove_padding);
    run.overrides.push_back(std::string("model.enable_gradient_checkpointing=") + checkpointing);
    trainer::SFTTrainer step(config::load_sft_config(run).sft, "");
    std::map<std::string, double> metrics = step.training_step(step.train_dataset().all());
    double after = step.micro_batch_loss(step.train_dataset().all(), 1, false).item<double>();
    EXPECT_NEAR(metrics["train/loss"], before_ref, 1e-5 * before_ref);
    EXPECT_NEAR(metrics["train/grad_norm"], norm_ref, 1e-4 * norm_ref);
    EXPECT_NEAR(after, after_ref, 1e-4 * after_ref);
    EXPECT_DOUBLE_EQ(metrics["train/lr"], 0.01);
  }
}

}  // namespace
}  // namespace verl::test
