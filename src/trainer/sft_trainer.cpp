#include "verl/trainer/sft_trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "sft_trainer_impl.h"
#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/model/fused_log_probs.h"
#include "verl/model/lora.h"
#include "verl/model/packed_tokens.h"
#include "verl/model/weights.h"
#include "verl/runtime/cpu_threads.h"
#include "verl/trainer/checkpoint_paths.h"
#include "verl/trainer/tracking.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/optimizer.h"
#include "verl/workers/seqlen_balancing.h"

namespace verl::trainer {

namespace {

data::SFTBatch select_rows(const data::SFTBatch& batch, const std::vector<int64_t>& rows) {
  const torch::Tensor index = torch::tensor(rows, torch::kInt64);
  return data::SFTBatch{batch.input_ids.index_select(0, index), batch.attention_mask.index_select(0, index),
                        batch.position_ids.index_select(0, index), batch.loss_mask.index_select(0, index)};
}

}  // namespace

data::SFTBatch trim_right_padding(const data::SFTBatch& batch) {
  if (batch.size() == 0) return batch;
  int64_t longest = batch.attention_mask.sum(1).max().item<int64_t>();
  longest = std::max<int64_t>(longest, 2);
  if (longest >= batch.input_ids.size(1)) return batch;
  return data::SFTBatch{batch.input_ids.slice(1, 0, longest), batch.attention_mask.slice(1, 0, longest),
                        batch.position_ids.slice(1, 0, longest), batch.loss_mask.slice(1, 0, longest)};
}

SFTTrainer::SFTTrainer(config::SFTConfig config, std::string resolved_yaml, std::ostream* console)
    : config_(std::move(config)), resolved_yaml_(std::move(resolved_yaml)), console_(console) {
  VERL_CHECK(config_.trainer.device == "cpu", "sft", "trainer.device=", config_.trainer.device,
             ": verl sft trains on the CPU only (SFT on a GPU is not implemented); set trainer.device=cpu");
  runtime::configure_cpu_threads(config_.trainer.num_cpu_threads);
  const std::string& model_dir = config_.partial_pretrain;
  const char* model_key = config_.layout == config::SFTLayout::SFTTrainer ? "model.path" : "model.partial_pretrain";
  VERL_CHECK(std::filesystem::is_directory(model_dir), "sft", model_key, " '", model_dir,
             "' is not a folder (expected a Hugging Face model folder)");
  for (const auto& files : {config_.data.train_files, config_.data.val_files}) {
    for (const auto& file : files) {
      VERL_CHECK(std::filesystem::is_regular_file(file), "sft", "data file '", file, "' does not exist");
    }
  }
  tokenizer_ = std::make_shared<tokenizer::Tokenizer>(
      tokenizer::load_model_tokenizer(model_dir, config_.custom_chat_template, "model.custom_chat_template"));
  train_ = std::make_unique<data::SFTDataset>(config_.data.train_files, *tokenizer_, config_.data,
                                              config_.data.train_max_samples);
  if (!config_.data.val_files.empty()) {  // the sft_trainer layout's val_files may be null: no validation
    val_ = std::make_unique<data::SFTDataset>(config_.data.val_files, *tokenizer_, config_.data,
                                              config_.data.val_max_samples);
    const bool rows_key = config_.layout == config::SFTLayout::FsdpSFTTrainer;
    VERL_CHECK(val_->size() >= config_.val_batch_size, "sft", "the validation set has ", val_->size(),
               " rows, fewer than one validation batch (data.",
               rows_key ? "micro_batch_size_per_gpu" : "train_batch_size", "=", config_.val_batch_size, ")");
  }
  steps_per_epoch_ = train_->size() / config_.data.train_batch_size;
  VERL_CHECK(steps_per_epoch_ > 0, "sft", "the training set has ", train_->size(),
             " rows, fewer than data.train_batch_size=", config_.data.train_batch_size);
  total_steps_ = config_.trainer.total_training_steps.value_or(steps_per_epoch_ * config_.trainer.total_epochs);
  for (int64_t* freq : {&config_.trainer.save_freq, &config_.trainer.test_freq}) {
    if (*freq == config::SFTTrainerSection::kAfterEachEpoch) *freq = steps_per_epoch_;
  }

  torch::manual_seed(static_cast<uint64_t>(config_.trainer.seed));
  model::LoadOptions load_options;
  load_options.config_overrides = config_.override_config;
  model_ = model::load_model(model_dir, load_options);
  VERL_CHECK(static_cast<int64_t>(tokenizer_->vocab_size()) <= model_->config.vocab_size, "sft", "the tokenizer in '",
             model_dir, "' has ", tokenizer_->vocab_size(), " tokens, more than the model's vocab_size ",
             model_->config.vocab_size);
  // LoRA: the base frozen, only the adapters (seeded by trainer.seed) train.
  if (config_.lora.lora_adapter_path) {
    // A saved PEFT adapter to start from (lora_rank > 0 must agree with it; 0 takes the adapter's).
    const model::LoraSpec spec = model::lora_spec(config_.lora);
    model::load_peft_adapter(model_, *config_.lora.lora_adapter_path, config_.lora.enabled() ? &spec : nullptr);
  } else if (config_.lora.enabled()) {
    model::add_lora(model_, model::lora_spec(config_.lora), static_cast<uint64_t>(config_.trainer.seed));
  }
  model_->model->gradient_checkpointing = config_.enable_gradient_checkpointing;
  impl_ = std::make_shared<Impl>();
  for (auto& p : model_->parameters()) {
    if (p.requires_grad()) impl_->parameters.push_back(p);
  }
  impl_->optim = config_.optimizer;
  impl_->optim.total_training_steps = total_steps_;
  impl_->optimizer = workers::build_optimizer(impl_->parameters, impl_->optim);
  impl_->lr_scheduler = std::make_unique<workers::LRScheduler>(*impl_->optimizer, impl_->optim, total_steps_);
}

torch::Tensor SFTTrainer::micro_batch_loss(const data::SFTBatch& micro, int64_t n_micro, bool backward,
                                           double batch_tokens) {
  data::SFTBatch b = trim_right_padding(micro);
  // verl's shifted mask: the loss at position t is of token t + 1.
  const torch::Tensor mask = b.loss_mask.slice(1, 1).to(torch::kFloat32);
  const torch::Tensor at = mask.nonzero();  // [M, 2]: row, position
  torch::Tensor loss;
  if (!config_.use_remove_padding || at.size(0) == 0) {
    // verl's padded forward: logits at every position (a micro-batch without a loss token gives loss 0 and every
    // parameter a zero gradient, as verl's).
    torch::Tensor logits = model_->forward(b.input_ids, b.attention_mask, b.position_ids);  // [n, L, V]
    torch::Tensor log_probs = torch::log_softmax(logits.slice(1, 0, -1).to(torch::kFloat32), -1);
    torch::Tensor nll = -log_probs.gather(-1, b.input_ids.slice(1, 1).unsqueeze(-1)).squeeze(-1);
    loss = batch_tokens > 0 ? (nll * mask).sum() / batch_tokens
                            : (nll * mask).sum() / (mask.sum() + 1e-8) / static_cast<double>(n_micro);
  } else {
    // Packed: the trunk over the real tokens, the LM head only at the positions the loss weighs (the others'
    // weight is 0: the same loss, without vocabulary-wide logits over prompts and padding).
    const torch::Tensor rows = at.select(1, 0), positions = at.select(1, 1);
    const torch::Tensor predictors = rows * b.input_ids.size(1) + positions;  // flat index into [n, L]
    const torch::Tensor labels = b.input_ids.reshape({-1}).index_select(0, predictors + 1);
    const auto device = model_->model->embed_tokens->weight.device();
    const model::PackedTokens packing = model::pack_tokens(b.attention_mask, device);
    const torch::Tensor hidden = model_->model->forward_packed(b.input_ids, b.attention_mask, b.position_ids, packing)
                                     .index_select(0, packing.index_of(predictors).to(device));  // [M, hidden]
    const torch::Tensor logits = model_->logits(hidden.unsqueeze(0));                            // [1, M, V]
    const torch::Tensor log_probs = model::fused_log_probs(logits, labels.unsqueeze(0).to(device), 1.0,
                                                           /*with_entropy=*/false)
                                        .log_probs.squeeze(0);
    const torch::Tensor weights = mask.index({rows, positions}).to(log_probs.device());
    loss = batch_tokens > 0 ? -(log_probs * weights).sum() / batch_tokens
                            : -(log_probs * weights).sum() / (mask.sum().to(log_probs.device()) + 1e-8) /
                                  static_cast<double>(n_micro);
  }
  if (backward) loss.backward();
  return loss;
}

double SFTTrainer::batch_loss(const data::SFTBatch& padded, bool backward) {
  const data::SFTBatch batch = trim_right_padding(padded);
  std::vector<std::vector<int64_t>> parts;
  if (config_.data.use_dynamic_bsz) {
    // verl's dynamic batch: micro-batches of at most max_token_len_per_gpu real tokens, balanced.
    const int64_t budget = config_.data.max_token_len_per_gpu;
    VERL_CHECK(batch.input_ids.size(1) <= budget, "sft", "a row of ", batch.input_ids.size(1),
               " tokens does not fit data.max_token_len_per_gpu=", budget,
               " (with data.use_dynamic_bsz=true a micro-batch holds at least one whole row)");
    parts = workers::rearrange_micro_batches(batch.attention_mask, budget).micro_batches;
  } else {
    const int64_t micro = config_.data.micro_batch_size_per_gpu;
    for (int64_t begin = 0; begin < batch.size(); begin += micro) {
      std::vector<int64_t>& rows = parts.emplace_back();
      for (int64_t r = begin; r < std::min(batch.size(), begin + micro); ++r) rows.push_back(r);
    }
  }
  // sft_trainer: every token's loss over the batch's loss-token count (verl's batch_num_tokens, the unshifted mask's
  // sum); a batch without one gives 0 where verl would divide by 0.
  const double batch_tokens = config_.loss_normalization == config::SFTLossNormalization::BatchTokenMean
                                  ? std::max(1.0, batch.loss_mask.sum().item<double>())
                                  : 0.0;
  const int64_t n_micro = static_cast<int64_t>(parts.size());
  double total = 0;
  for (const auto& rows : parts) {
    total += micro_batch_loss(select_rows(batch, rows), n_micro, backward, batch_tokens).item<double>();
  }
  return total;
}

std::map<std::string, double> SFTTrainer::training_step(const data::SFTBatch& batch) {
  model_->train();
  impl_->optimizer->zero_grad();
  const double step_loss = batch_loss(batch, /*backward=*/true);
  double grad_norm = workers::clip_grad_norm(impl_->parameters, config_.clip_grad);
  if (!std::isfinite(grad_norm)) {
    VERL_LOG(Warn, "sft") << "grad_norm is not finite: " << grad_norm << "; skipping the update";
    impl_->optimizer->zero_grad();
  } else {
    impl_->optimizer->step();
  }
  impl_->lr_scheduler->step();
  std::map<std::string, double> metrics = {
      {"train/loss", step_loss}, {"train/lr", impl_->lr_scheduler->last_lr()}, {"train/grad_norm", grad_norm}};
  if (config_.layout == config::SFTLayout::SFTTrainer) {
    // verl's sft_trainer: the batch's tokens, and their running total since this process started (in billions).
    const double tokens = batch.attention_mask.sum().item<double>();
    total_tokens_ += tokens;
    metrics["train/global_tokens"] = tokens;
    metrics["train/total_tokens(B)"] = total_tokens_ / 1e9;
  }
  return metrics;
}

double SFTTrainer::validate() {
  VERL_CHECK(val_ != nullptr, "sft", "no validation set (data.val_files is null)");
  torch::NoGradGuard no_grad;
  model_->eval();
  const int64_t rows = config_.val_batch_size;
  const int64_t batches = val_->size() / rows;  // drop_last, as verl's val dataloader
  data::SFTBatch all = val_->all();
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) total += batch_loss(all.slice(i * rows, (i + 1) * rows), /*backward=*/false);
  model_->train();
  return total / static_cast<double>(batches);
}

SFTFitResult SFTTrainer::fit(const StepCallback& callback) {
  const auto& t = config_.trainer;
  // What writes a killed run interrupted left behind (`*.tmp.<pid>`, `*.old.<pid>`): checkpoint folders, the
  // tracker and the reports beside them.
  for (const std::string& path : remove_stale_temp_files(t.default_local_dir, /*depth=*/2)) {
    VERL_LOG(Info, "sft") << "removed " << path << " (left by an interrupted write)";
  }
  Tracking tracking(t.project_name, t.experiment_name, t.logger, t.default_local_dir, resolved_yaml_, console_);
  SFTFitResult result;
  int64_t global_step = load_checkpoint(tracking);
  const int64_t batch_size = config_.data.train_batch_size;
  // The order of an epoch depends only on trainer.seed + epoch, so a resumed run continues at batch
  // global_step % steps_per_epoch of epoch global_step / steps_per_epoch.
  for (int64_t epoch = global_step / steps_per_epoch_; global_step < total_steps_; ++epoch) {
    torch::Generator generator = at::detail::createCPUGenerator(static_cast<uint64_t>(t.shuffle_seed + epoch));
    torch::Tensor order = torch::randperm(train_->size(), generator, torch::kInt64);
    for (int64_t b = global_step - epoch * steps_per_epoch_; b < steps_per_epoch_ && global_step < total_steps_;
         ++b) {
      torch::Tensor index = order.slice(0, b * batch_size, (b + 1) * batch_size);
      std::vector<int64_t> rows(index.data_ptr<int64_t>(), index.data_ptr<int64_t>() + index.numel());
      auto start = std::chrono::steady_clock::now();
      std::map<std::string, double> metrics = training_step(train_->get(rows));
      result.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++global_step;
      result.last_train_loss = metrics["train/loss"];
      bool stop = false;
      bool last = global_step >= total_steps_;
      if (callback && !callback(global_step, metrics)) {
        stop = true;
        last = true;
        result.stopped_early = true;
      }
      if (val_ && (last || (t.test_freq > 0 && global_step % t.test_freq == 0))) {
        double val_loss = validate();
        metrics["val/loss"] = val_loss;
        result.last_val_loss = val_loss;
      }
      // The checkpoint before the step's line, and the line in it: a kill between the two loses no line.
      if (last || (t.save_freq > 0 && global_step % t.save_freq == 0)) {
        save_checkpoint(global_step, metrics);
        result.last_checkpoint = global_step_dir(t.default_local_dir, global_step) + "/huggingface";
      }
      tracking.log(metrics, global_step);
      if (stop) break;
    }
    if (result.stopped_early) break;
  }
  result.global_steps = global_step;
  tracking.finish();
  return result;
}

}  // namespace verl::trainer
