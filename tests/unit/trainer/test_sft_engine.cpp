// verl sft --config-name sft_trainer_engine (verl 0.9.1's sft_trainer keys): the config's defaults and errors, a
// loss that does not depend on how the batch is split into micro-batches, model.custom_chat_template, training that
// lowers the loss with verl's metrics, and an exact resume. The rows' tokens are checked against verl's own dataset
// in tests/golden/data/test_multiturn_sft_golden.cpp, the loss against verl's sft_loss in
// tests/golden/trainer/test_sft_engine_loss_golden.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "support/tiny_sft_setup.h"
#include "verl/common/error.h"
#include "verl/config/sft_config.h"
#include "verl/data/sft_dataset.h"
#include "verl/io/safetensors.h"
#include "verl/model/weights.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

struct EngineSetup {
  TinySFTSetup tiny;
  std::string train, val;
};

EngineSetup make_engine_setup(const std::string& name) {
  EngineSetup e{make_tiny_sft_setup(make_temp_dir(name), 2, 2, /*hidden=*/32, /*layers=*/2, /*seed=*/3), "", ""};
  e.train = write_addition_conversations(e.tiny.dir + "/train.parquet", 32);
  e.val = write_addition_conversations(e.tiny.dir + "/val.parquet", 8, 5);
  return e;
}

config::ConfigArgs engine_args(const EngineSetup& e, std::vector<std::string> extra = {}) {
  config::ConfigArgs args;
  args.config_name = "sft_trainer_engine";
  args.overrides = {"trainer.device=cpu",
                    "data.train_files=" + e.train,
                    "data.val_files=" + e.val,
                    "data.train_batch_size=8",
                    "data.max_length=64",
                    "data.max_token_len_per_gpu=96",
                    "model.path=" + e.tiny.model_dir,
                    "trainer.default_local_dir=" + e.tiny.dir + "/run",
                    "trainer.logger=[]",
                    "trainer.total_epochs=1",
                    "optim.lr=3e-3"};
  args.overrides.insert(args.overrides.end(), extra.begin(), extra.end());
  return args;
}

std::string engine_error(const config::ConfigArgs& args) {
  try {
    config::load_sft_config(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SFTEngineConfig, VerlDefaultsAndTheirMeaning) {
  EngineSetup e = make_engine_setup("sft_engine_defaults");
  const config::SFTConfig c = config::load_sft_config(engine_args(e)).sft;
  EXPECT_EQ(c.layout, config::SFTLayout::SFTTrainer);
  EXPECT_TRUE(c.data.multiturn);
  EXPECT_EQ(c.data.pad_mode, "no_padding");
  EXPECT_TRUE(c.data.use_dynamic_bsz);
  // verl's default is the string 'none', which bool() makes true.
  ASSERT_TRUE(c.data.enable_thinking_default.has_value());
  EXPECT_TRUE(*c.data.enable_thinking_default);
  EXPECT_TRUE(c.use_remove_padding);
  EXPECT_EQ(c.optimizer.optimizer, "AdamW");
  EXPECT_EQ(c.optimizer.lr_scheduler_type, "constant");
  EXPECT_EQ(c.optimizer.betas, (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(c.loss_normalization, config::SFTLossNormalization::BatchTokenMean);
  EXPECT_EQ(c.val_batch_size, 8);
  EXPECT_EQ(c.trainer.shuffle_seed, 0);

  const config::SFTConfig off =
      config::load_sft_config(engine_args(e, {"data.enable_thinking_default=null", "trainer.save_freq=after_each_epoch",
                                              "data.val_files=null"}))
          .sft;
  EXPECT_FALSE(off.data.enable_thinking_default.has_value());
  // verl's SFT scripts choose the engine and optimizer config groups (engine=fsdp optim=fsdp): the built-in ones.
  const config::SFTConfig groups =
      config::load_sft_config(engine_args(e, {"engine=fsdp", "optim=fsdp", "optim.lr_scheduler_type=cosine"})).sft;
  EXPECT_EQ(groups.optimizer.lr_scheduler_type, "cosine");
  EXPECT_EQ(off.trainer.save_freq, config::SFTTrainerSection::kAfterEachEpoch);
  EXPECT_TRUE(off.data.val_files.empty());
}

TEST(SFTEngineConfig, ErrorsNameTheKey) {
  EngineSetup e = make_engine_setup("sft_engine_errors");
  config::ConfigArgs cuda = engine_args(e);
  cuda.overrides.erase(cuda.overrides.begin());  // verl's default trainer.device=cuda: refused when training starts
  try {
    trainer::SFTTrainer t(config::load_sft_config(cuda).sft, "");
    ADD_FAILURE() << "trainer.device=cuda was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("trainer.device=cuda"), std::string::npos) << error.what();
  }
  for (const auto& [override_arg, expected] : std::vector<std::pair<std::string, std::string>>{
           {"data.custom_cls.path=my_dataset.py", "data.custom_cls.path"},
           {"engine.ulysses_sequence_parallel_size=0", "engine.ulysses_sequence_parallel_size"},
           {"engine.strategy=megatron", "engine.strategy"},
           {"data.pad_mode=left", "data.pad_mode"},
           {"trainer.default_hdfs_dir=hdfs://x", "trainer.default_hdfs_dir"},
           {"trainer.test_freq=sometimes", "trainer.test_freq"},
           {"+data.prompt_key=question", "data.prompt_key"},
           {"engine=megatron", "engine=megatron"},
       }) {
    const std::string message = engine_error(engine_args(e, {override_arg}));
    EXPECT_NE(message.find(expected), std::string::npos) << override_arg << " -> " << message;
  }
  // verl 0.9.1's sft_trainer keys given to the default (fsdp_sft_trainer) layout say which layout takes them.
  config::ConfigArgs legacy;
  legacy.overrides = {"model.path=/tmp/model"};
  const std::string message = engine_error(legacy);
  EXPECT_NE(message.find("--config-name sft_trainer_engine"), std::string::npos) << message;
  config::ConfigArgs unknown_name;
  unknown_name.config_name = "ppo_trainer";
  EXPECT_NE(engine_error(unknown_name).find("--config-name"), std::string::npos);
}

TEST(SFTEngineConfig, FsdpSftTrainersMultiturnRowsAreTheSameConversations) {
  // verl's fsdp_sft_trainer with data.multiturn.enable=true uses the same dataset class (right padding, no
  // enable_thinking default).
  EngineSetup e = make_engine_setup("sft_engine_legacy_multiturn");
  config::ConfigArgs legacy;
  legacy.overrides = {"data.train_files=" + e.train, "data.val_files=" + e.val,
                      "data.multiturn.enable=true",  "data.max_length=64",
                      "data.train_batch_size=8",     "model.partial_pretrain=" + e.tiny.model_dir};
  const config::SFTConfig old_layout = config::load_sft_config(legacy).sft;
  const config::SFTConfig new_layout =
      config::load_sft_config(engine_args(e, {"data.pad_mode=right", "data.enable_thinking_default=null"})).sft;
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_folder(e.tiny.model_dir);
  const data::SFTBatch a = data::SFTDataset(old_layout.data.train_files, tok, old_layout.data).all();
  const data::SFTBatch b = data::SFTDataset(new_layout.data.train_files, tok, new_layout.data).all();
  EXPECT_TRUE(torch::equal(a.input_ids, b.input_ids));
  EXPECT_TRUE(torch::equal(a.loss_mask, b.loss_mask));
  EXPECT_GT(a.loss_mask.sum().item<int64_t>(), 32);
}

TEST(SFTEngineConfig, ConfigShowPrintsTheSftLayoutsAndTheLaterFsdpSftTrainerNames) {
  // `verl config show --config-name sft_trainer_engine` resolves verl sft's config (the example-script check uses it).
  const CommandResult shown = run_command(verl_binary() +
                                          " config show --config-name sft_trainer_engine engine=fsdp optim.lr=2e-5 "
                                          "trainer.test_freq=after_each_epoch");
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("messages_key: messages"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("test_freq: after_each_epoch"), std::string::npos) << shown.out;
  const CommandResult legacy = run_command(verl_binary() + " config show --config-name sft_trainer model.path=x");
  EXPECT_NE(legacy.exit_code, 0);
  EXPECT_NE(legacy.err.find("--config-name sft_trainer_engine"), std::string::npos) << legacy.err;
  // fsdp_sft_trainer's later optim.lr_warmup_steps_ratio wins over the earlier warmup_steps_ratio.
  config::ConfigArgs args;
  args.overrides = {"optim.lr_warmup_steps_ratio=0.3", "optim.warmup_steps_ratio=0.1", "data.micro_batch_size=4"};
  EXPECT_DOUBLE_EQ(config::load_sft_config(args).sft.optimizer.lr_warmup_steps_ratio, 0.3);
}

TEST(SFTEngineTrainer, TheBatchLossDoesNotDependOnTheMicroBatches) {
  EngineSetup e = make_engine_setup("sft_engine_micro");
  double reference = 0;
  int runs = 0;
  for (const std::vector<std::string>& split : std::vector<std::vector<std::string>>{
           {"data.use_dynamic_bsz=false", "data.micro_batch_size_per_gpu=8"},
           {"data.use_dynamic_bsz=false", "data.micro_batch_size_per_gpu=1"},
           {"data.use_dynamic_bsz=false", "data.micro_batch_size_per_gpu=3", "model.use_remove_padding=false"},
           {"data.use_dynamic_bsz=true", "data.max_token_len_per_gpu=64"},
       }) {
    trainer::SFTTrainer t(config::load_sft_config(engine_args(e, split)).sft, "");
    torch::NoGradGuard no_grad;
    const double loss = t.batch_loss(t.train_dataset().get({0, 1, 2, 3, 4, 5, 6, 7}), false);
    if (runs++ == 0) reference = loss;
    EXPECT_NEAR(loss, reference, 1e-5 * reference) << split.back();
  }
  EXPECT_GT(reference, 1.0);
  // A token budget below a row's length is an error naming the key (verl's budget counts real tokens: max_length
  // itself may exceed it).
  trainer::SFTTrainer tight(config::load_sft_config(engine_args(e, {"data.max_token_len_per_gpu=8"})).sft, "");
  try {
    tight.batch_loss(tight.train_dataset().get({0, 1}), false);
    ADD_FAILURE() << "a row longer than the budget was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("data.max_token_len_per_gpu=8"), std::string::npos) << error.what();
  }
}

TEST(SFTEngineTrainer, CustomChatTemplateRendersTheConversations) {
  EngineSetup e = make_engine_setup("sft_engine_template");
  const std::string tmpl =
      "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + ' says\\n' + m['content'] + '<|im_end|>\\n' }}"
      "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant says\\n' }}{%- endif %}";
  const std::vector<std::string> longer = {"data.max_length=128", "data.max_token_len_per_gpu=256"};
  trainer::SFTTrainer plain(config::load_sft_config(engine_args(e, longer)).sft, "");
  std::vector<std::string> with_template = longer;
  with_template.push_back("model.custom_chat_template=\"" + tmpl + "\"");
  trainer::SFTTrainer custom(config::load_sft_config(engine_args(e, with_template)).sft, "");
  const std::string text = custom.tokenizer().decode(custom.train_dataset().prompt_ids(0));
  EXPECT_EQ(text.rfind("<|im_start|>user says\n", 0), 0u) << text;
  EXPECT_NE(plain.tokenizer().decode(plain.train_dataset().prompt_ids(0)).find("user\n"), std::string::npos);
}

// model.tokenizer_path / hf_config_path (verl's HFModelConfig): a folder with only the weights trains as the whole
// model folder when the tokenizer and config.json come from their own folders; without them, one error naming the key.
TEST(SFTEngineTrainer, TokenizerAndConfigFromTheirOwnFolders) {
  EngineSetup e = make_engine_setup("sft_engine_paths");
  const std::string weights = e.tiny.dir + "/weights_only";
  std::filesystem::create_directories(weights);
  for (const auto& entry : std::filesystem::directory_iterator(e.tiny.model_dir)) {
    if (entry.path().extension() == ".safetensors") {
      std::filesystem::copy_file(entry.path(), std::filesystem::path(weights) / entry.path().filename());
    }
  }
  trainer::SFTTrainer whole(config::load_sft_config(engine_args(e)).sft, "");
  trainer::SFTTrainer apart(
      config::load_sft_config(engine_args(e, {"model.path=" + weights, "model.tokenizer_path=" + e.tiny.tokenizer_dir,
                                              "model.hf_config_path=" + e.tiny.model_dir}))
          .sft,
      "");
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> rows = {0, 1, 2, 3};
  EXPECT_EQ(apart.batch_loss(apart.train_dataset().get(rows), false),
            whole.batch_loss(whole.train_dataset().get(rows), false));
  const auto error_of = [&](const std::vector<std::string>& extra) {
    try {
      trainer::SFTTrainer t(config::load_sft_config(engine_args(e, extra)).sft, "");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string();
  };
  std::string message = error_of({"model.path=" + weights, "model.hf_config_path=" + e.tiny.model_dir});
  EXPECT_NE(message.find("model.path='" + weights +
                         "' has no tokenizer.json (set model.tokenizer_path to the tokenizer's folder)"),
            std::string::npos)
      << message;
  message = error_of({"model.path=" + weights, "model.tokenizer_path=" + e.tiny.tokenizer_dir});
  EXPECT_NE(message.find("model.path='" + weights + "' has no config.json (set model.hf_config_path"),
            std::string::npos)
      << message;
}

TEST(SFTEngineTrainer, LearnsLogsVerlsMetricsAndResumesExactly) {
  EngineSetup e = make_engine_setup("sft_engine_fit");
  // Straight through: 8 steps (two epochs of 4).
  config::ConfigArgs straight =
      engine_args(e, {"trainer.total_epochs=2", "trainer.logger=[jsonl]", "trainer.test_freq=after_each_epoch"});
  trainer::SFTTrainer full(config::load_sft_config(straight).sft, "");
  std::vector<std::map<std::string, double>> lines;
  const trainer::SFTFitResult result = full.fit([&](int64_t, const std::map<std::string, double>& m) {
    lines.push_back(m);
    return true;
  });
  ASSERT_EQ(result.global_steps, 8);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_LT(lines.back().at("train/loss"), 0.85 * lines.front().at("train/loss"));  // measured: 4.97 -> 3.82
  ASSERT_TRUE(result.last_val_loss.has_value());
  for (const auto& key : {"train/global_tokens", "train/total_tokens(B)", "train/grad_norm", "train/lr"}) {
    EXPECT_TRUE(lines.front().count(key)) << key;
  }
  EXPECT_EQ(lines[1].at("train/total_tokens(B)") * 1e9,
            lines[0].at("train/global_tokens") + lines[1].at("train/global_tokens"));
  const std::string metrics = read_file(e.tiny.dir + "/run/metrics.jsonl");
  EXPECT_NE(metrics.find("\"val/loss\""), std::string::npos);  // after each epoch (steps 4 and 8)

  // Stopped after 3 steps (saved at 3), then resumed to the end: the same final weights.
  const std::string dir2 = e.tiny.dir + "/run2";
  config::ConfigArgs first =
      engine_args(e, {"trainer.total_epochs=2", "trainer.default_local_dir=" + dir2, "trainer.save_freq=3"});
  {
    trainer::SFTTrainer t(config::load_sft_config(first).sft, "");
    t.fit([](int64_t step, const std::map<std::string, double>&) { return step < 3; });
  }
  trainer::SFTTrainer resumed(config::load_sft_config(first).sft, "");
  ASSERT_EQ(resumed.fit().global_steps, 8);
  const auto a = full.model()->named_parameters(), b = resumed.model()->named_parameters();
  for (const auto& item : a) {
    EXPECT_TRUE(torch::equal(item.value(), b[item.key()])) << item.key();
  }
}

TEST(SFTEngineTrainer, LoraAdaptersSaveAndStartAnotherRunFromLoraAdapterPath) {
  EngineSetup e = make_engine_setup("sft_engine_lora");
  const std::string first_dir = e.tiny.dir + "/lora_run";
  trainer::SFTTrainer first(config::load_sft_config(engine_args(e, {"model.lora_rank=4", "model.lora_alpha=8",
                                                                    "trainer.total_training_steps=2",
                                                                    "trainer.default_local_dir=" + first_dir}))
                                .sft,
                            "");
  const trainer::SFTFitResult result = first.fit();
  ASSERT_EQ(result.global_steps, 2);
  const std::string adapter = first_dir + "/global_step_2/huggingface";
  ASSERT_TRUE(std::filesystem::exists(adapter + "/adapter_model.safetensors")) << adapter;
  // lora_rank 0 with an adapter path: the adapter's own rank and alpha, its trained values.
  trainer::SFTTrainer second(
      config::load_sft_config(engine_args(e, {"model.lora_adapter_path=" + adapter,
                                              "trainer.default_local_dir=" + e.tiny.dir + "/lora_run2"}))
          .sft,
      "");
  auto want = first.model()->named_parameters();
  int adapters = 0;
  for (const auto& item : second.model()->named_parameters()) {
    ASSERT_TRUE(want.contains(item.key())) << item.key();
    EXPECT_TRUE(torch::equal(item.value(), want[item.key()])) << item.key();
    adapters += item.key().find("lora_") != std::string::npos;
    EXPECT_EQ(item.value().requires_grad(), item.key().find("lora_") != std::string::npos) << item.key();
  }
  EXPECT_GT(adapters, 0);
}

}  // namespace
}  // namespace verl::test
