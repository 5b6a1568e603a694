// verl sft: the dataset's tokens, masks, padding and truncation; the loss on a hand-built batch against a
// direct computation from the logits; loss going down on a tiny model through the CLI with metrics and a
// loadable checkpoint; config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/config/sft_config.h"
#include "verl/data/sft_dataset.h"
#include "verl/model/weights.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

config::SFTConfig sft_trainer_tiny_config(const TinySFTSetup& s, std::vector<std::string> extra = {}) {
  config::ConfigArgs args;
  args.overrides = {"data.train_files=" + s.data_dir + "/sft_train.parquet",
                    "data.val_files=" + s.data_dir + "/sft_val.parquet",
                    "data.prompt_key=prompt",
                    "data.response_key=response",
                    "data.max_length=40",
                    "data.train_batch_size=8",
                    "data.micro_batch_size_per_gpu=4",
                    "model.partial_pretrain=" + s.model_dir,
                    "trainer.default_local_dir=" + s.dir + "/run",
                    "trainer.logger=[]",
                    "trainer.total_epochs=1",
                    "optim.lr=1e-3"};
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  return config::load_sft_config(args).sft;
}

TEST(SFTDataset, PromptThenResponseWithEosMaskedAndRightPadded) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_dataset"), 6, 4);
  config::SFTConfig cfg = sft_trainer_tiny_config(s);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(s.model_dir);
  data::SFTDataset ds(cfg.data.train_files, tok, cfg.data);
  ASSERT_EQ(ds.size(), 6);
  ASSERT_EQ(ds.max_length(), 40);
  const int64_t pad = *tok.pad_token_id(), eos = *tok.eos_token_id();
  for (int64_t i = 0; i < ds.size(); ++i) {
    const io::Value& row = ds.rows()[static_cast<size_t>(i)];
    const std::string prompt = row.find("prompt")->as_string(), response = row.find("response")->as_string();
    // Independent tokenization: the rendered ChatML text and the response + eos.
    std::vector<int32_t> p = tok.encode("<|im_start|>user\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n", false);
    std::vector<int32_t> r = tok.encode(response, false);
    r.push_back(static_cast<int32_t>(eos));
    EXPECT_EQ(ds.prompt_ids(i), p);
    data::SFTBatch b = ds.get({i});
    const size_t n = p.size() + r.size();
    for (size_t j = 0; j < 40; ++j) {
      int64_t want = j < p.size() ? p[j] : j < n ? r[j - p.size()] : pad;
      EXPECT_EQ(b.input_ids[0][static_cast<int64_t>(j)].item<int64_t>(), want) << i << " " << j;
      EXPECT_EQ(b.attention_mask[0][static_cast<int64_t>(j)].item<int64_t>(), j < n ? 1 : 0);
      EXPECT_EQ(b.loss_mask[0][static_cast<int64_t>(j)].item<int64_t>(), (j >= p.size() && j < n) ? 1 : 0);
      EXPECT_EQ(b.position_ids[0][static_cast<int64_t>(j)].item<int64_t>(),
                static_cast<int64_t>(j < n ? j : n - 1));
    }
  }
}

TEST(SFTDataset, TruncationErrorLeftRight) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_truncation"), 3, 2);
  tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(s.model_dir);
  config::SFTConfig cfg = sft_trainer_tiny_config(s, {"data.max_length=12"});
  try {
    data::SFTDataset ds(cfg.data.train_files, tok, cfg.data);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.max_length=12"), std::string::npos) << e.what();
  }
  config::SFTConfig full_cfg = sft_trainer_tiny_config(s, {"data.max_length=60"});
  data::SFTDataset full(full_cfg.data.train_files, tok, full_cfg.data);
  const int64_t n = full.get({0}).attention_mask.sum().item<int64_t>();
  torch::Tensor whole = full.get({0}).input_ids.slice(1, 0, n);
  torch::Tensor whole_mask = full.get({0}).loss_mask.slice(1, 0, n);
  config::SFTConfig left_cfg = sft_trainer_tiny_config(s, {"data.max_length=12", "data.truncation=left"});
  data::SFTDataset left(left_cfg.data.train_files, tok, left_cfg.data);
  EXPECT_TRUE(torch::equal(left.get({0}).input_ids, whole.slice(1, n - 12)));
  EXPECT_TRUE(torch::equal(left.get({0}).loss_mask, whole_mask.slice(1, n - 12)));
  config::SFTConfig right_cfg = sft_trainer_tiny_config(s, {"data.max_length=12", "data.truncation=right"});
  data::SFTDataset right(right_cfg.data.train_files, tok, right_cfg.data);
  EXPECT_TRUE(torch::equal(right.get({0}).input_ids, whole.slice(1, 0, 12)));
  EXPECT_EQ(right.get({0}).loss_mask.sum().item<int64_t>(), 0);  // the prompt alone fills 12 tokens
}

TEST(SFTTrainer, MicroBatchLossIsMaskedMeanOfResponseTokenCrossEntropy) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_loss"), 8, 4);
  trainer::SFTTrainer t(sft_trainer_tiny_config(s), "");
  trainer::SFTTrainer packed(sft_trainer_tiny_config(s, {"use_remove_padding=true"}), "");
  data::SFTBatch batch = t.train_dataset().all().slice(0, 4);
  torch::Tensor got = t.micro_batch_loss(batch, 2, false);
  torch::Tensor got_packed = packed.micro_batch_loss(batch, 2, false);
  // By hand: logits from the model's own forward over the full padded rows, then a double-precision loop.
  torch::NoGradGuard no_grad;
  torch::Tensor logits =
      t.model()->forward(batch.input_ids, batch.attention_mask, batch.position_ids).to(torch::kFloat64);
  double total = 0, count = 0;
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 1; j < batch.input_ids.size(1); ++j) {
      if (batch.loss_mask[i][j].item<int64_t>() == 0) continue;
      torch::Tensor row = logits[i][j - 1];
      double max = row.max().item<double>();
      double lse = max + std::log((row - max).exp().sum().item<double>());
      total += lse - row[batch.input_ids[i][j].item<int64_t>()].item<double>();
      count += 1;
    }
  }
  ASSERT_GT(count, 10);
  EXPECT_NEAR(got.item<double>(), total / count / 2, 1e-5);
  EXPECT_NEAR(got_packed.item<double>(), total / count / 2, 1e-5);  // the same model (same seed), packed
}

TEST(SFTTrainer, CliLossGoesDownLogsMetricsAndSavesHfFolder) {
  TinySFTSetup s = make_tiny_sft_setup(make_temp_dir("sft_cli"), 320, 32);
  const std::string run = s.dir + "/run";
  CommandResult r = run_command(
      verl_binary() + " sft data.train_files=" + s.data_dir + "/sft_train.parquet data.val_files=" + s.data_dir +
      "/sft_val.parquet data.prompt_key=prompt data.response_key=response data.max_length=40 "
      "data.train_batch_size=16 data.micro_batch_size_per_gpu=8 model.partial_pretrain=" +
      s.model_dir + " trainer.default_local_dir=" + run +
      " 'trainer.logger=[console,jsonl]' trainer.total_epochs=2 trainer.test_freq=10 trainer.save_freq=15 "
      "optim.lr=3e-3 optim.warmup_steps_ratio=0.1 trainer.max_ckpt_to_keep=2");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("step:1 - "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sft: steps=40"), std::string::npos) << r.out;
  std::ifstream jsonl(run + "/metrics.jsonl");
  std::string line;
  std::vector<nlohmann::json> records;
  while (std::getline(jsonl, line)) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 40u);
  const double first = records.front()["train/loss"], last = records.back()["train/loss"];
  EXPECT_LT(last, 0.6 * first) << first << " -> " << last;
  EXPECT_TRUE(records[9].contains("val/loss"));
  EXPECT_FALSE(records[10].contains("val/loss"));
  EXPECT_TRUE(records[39].contains("val/loss"));
  EXPECT_LT(records[39]["val/loss"].get<double>(), records[9]["val/loss"].get<double>());
  // Cosine (the default) with int(0.1 * 40) = 4 warmup steps: lr after step k is 3e-3 * k / 4, then decays to 0.
  EXPECT_NEAR(records[0]["train/lr"].get<double>(), 3e-3 * 1 / 4, 1e-12);
  EXPECT_NEAR(records[3]["train/lr"].get<double>(), 3e-3, 1e-12);
  EXPECT_LT(records[39]["train/lr"].get<double>(), 1e-6);
  // Checkpoints at 15, 30 and 40 with two kept; the last is an HF folder that loads.
  EXPECT_FALSE(std::filesystem::exists(run + "/global_step_15/huggingface"));
  EXPECT_TRUE(std::filesystem::exists(run + "/global_step_30/huggingface/model.safetensors"));
  EXPECT_EQ(read_file(run + "/latest_checkpointed_iteration.txt"), "40");
  const std::string hf = run + "/global_step_40/huggingface";
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                        "tokenizer_config.json"}) {
    EXPECT_TRUE(std::filesystem::exists(hf + "/" + f)) << f;
  }
  model::CausalLM loaded = model::load_model(hf);
  model::CausalLM initial = model::load_model(s.model_dir);
  EXPECT_FALSE(torch::equal(loaded->model->embed_tokens->weight, initial->model->embed_tokens->weight));
  EXPECT_TRUE(std::filesystem::exists(run + "/config.yaml"));
}

TEST(SFTConfig, ErrorsNameTheKey) {
  config::ConfigArgs args;
  args.overrides = {"data.train_batch_size=10", "data.micro_batch_size_per_gpu=4"};
  try {
    config::load_sft_config(args);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("divisible"), std::string::npos) << e.what();
  }
  args.overrides = {"optim.learning_rate=1"};
  EXPECT_THROW(config::load_sft_config(args), Error);
  args.overrides = {"data.truncation=middle"};
  EXPECT_THROW(config::load_sft_config(args), Error);
  // The sequence-parallel size: read (the trainer checks it against the ranks), positive.
  args.overrides = {"ulysses_sequence_parallel_size=2", "data.balance_dp_token=true"};
  EXPECT_EQ(config::load_sft_config(args).sft.ulysses_sequence_parallel_size, 2);
  EXPECT_TRUE(config::load_sft_config(args).sft.balance_dp_token);
  args.overrides = {"ulysses_sequence_parallel_size=0"};
  try {
    config::load_sft_config(args);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ulysses_sequence_parallel_size"), std::string::npos) << e.what();
  }
  args.overrides = {"use_remove_padding=true", "model.enable_gradient_checkpointing=false"};
  const config::SFTConfig keys = config::load_sft_config(args).sft;
  EXPECT_TRUE(keys.use_remove_padding);
  EXPECT_FALSE(keys.enable_gradient_checkpointing);
  CommandResult r = run_command(verl_binary() + " sft data.micro_batch_sise=3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("data.micro_batch_sise"), std::string::npos) << r.err;
  r = run_command(verl_binary() + " sft model.partial_pretrain=/nonexistent/model");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace verl::test
