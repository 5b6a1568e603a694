#include "verl/trainer/sft_trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "sft_trainer_impl.h"
#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/data/distributed_sampler.h"
#include "verl/model/fused_log_probs.h"
#include "verl/model/lora.h"
#include "verl/model/model_folder.h"
#include "verl/model/packed_tokens.h"
#include "verl/model/weights.h"
#include "verl/parallel/ulysses.h"
#include "verl/runtime/cpu_threads.h"
#include "verl/trainer/checkpoint_paths.h"
#include "verl/trainer/tracking.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/optimizer.h"
#include "verl/workers/seqlen_balancing.h"

namespace verl::trainer {

namespace {

data::SFTBatch select_rows(const data::SFTBatch& batch, const std::vector<int64_t>& rows) {
  const torch::Tensor index = torch::tensor(rows, torch::kInt64);
  return data::SFTBatch{batch.input_ids.index_select(0, index), batch.attention_mask.index_select(0, index),
                        batch.position_ids.index_select(0, index), batch.loss_mask.index_select(0, index)};
}

// Ulysses: this rank's 1/sp of the sequence (right-padded to a multiple of sp: the padding comes after every real
// token, so none sees it) through the model, the NLL of the next token at each of its positions, gathered from the
// group: [n, L - 1], as the padded forward's. gather_sequence's backward hands each rank its slice times sp.
torch::Tensor sequence_parallel_nll(model::CausalLM& model, const data::SFTBatch& b) {
  const auto& group = model->model->sequence_parallel;
  const int64_t L = b.input_ids.size(1);
  const int64_t pad = (group.size() - L % group.size()) % group.size();
  auto padded = [&](const torch::Tensor& t) { return torch::constant_pad_nd(t, {0, pad}, 0); };
  const torch::Tensor ids = padded(b.input_ids);
  const torch::Tensor hidden = model->hidden_states(ids, padded(b.attention_mask), padded(b.position_ids));
  const torch::Tensor logits = model->logits(hidden);  // [n, (L + pad) / sp, V]
  const torch::Tensor next = parallel::slice_sequence(ids.roll(-1, 1), 1, *group.comm).to(logits.device());
  const torch::Tensor log_probs = model::fused_log_probs(logits, next, 1.0, /*with_entropy=*/false).log_probs;
  return -parallel::gather_sequence(log_probs, 1, group.comm).slice(1, 0, L - 1);
}

// The key of the sequence-parallel size in the config's layout.
std::string sequence_parallel_key(const config::SFTConfig& config) {
  return config.layout == config::SFTLayout::SFTTrainer ? "engine.ulysses_sequence_parallel_size"
                                                        : "ulysses_sequence_parallel_size";
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

void check_rank_layout(const config::SFTConfig& config, int world_size) {
  const std::string sp_key = sequence_parallel_key(config);
  const int64_t sp = config.ulysses_sequence_parallel_size;
  VERL_CHECK(world_size % sp == 0, "sft", sp_key, "=", sp, " must divide the number of ranks (", world_size,
             world_size == 1 ? ": this process alone; run verl sft under mpirun -np N" : "", ")");
  const int64_t dp = world_size / sp;
  const int64_t batch_size = config.data.train_batch_size;
  VERL_CHECK(batch_size % dp == 0, "sft", "data.train_batch_size=", batch_size,
             " must be divisible by the data-parallel size ", dp, " (", world_size, " ranks / ", sp_key, "=", sp, ")");
  VERL_CHECK(config.fsdp_size == -1 || world_size % config.fsdp_size == 0, "sft", "engine.fsdp_size=", config.fsdp_size,
             " must divide the number of ranks (", world_size, ")");
  if (config.layout == config::SFTLayout::FsdpSFTTrainer) {
    VERL_CHECK(batch_size / dp % config.data.micro_batch_size_per_gpu == 0, "sft", "data.train_batch_size=", batch_size,
               " over ", dp, " data-parallel ranks gives ", batch_size / dp,
               " rows per rank, not divisible by data.micro_batch_size_per_gpu=", config.data.micro_batch_size_per_gpu);
  }
}

SFTTrainer::SFTTrainer(config::SFTConfig config, std::string resolved_yaml, std::ostream* console,
                       std::shared_ptr<parallel::Comm> world)
    : config_(std::move(config)),
      resolved_yaml_(std::move(resolved_yaml)),
      console_(console),
      world_(world ? std::move(world) : parallel::single_process_comm()) {
  VERL_CHECK(config_.trainer.device == "cpu", "sft", "trainer.device=", config_.trainer.device,
             ": verl sft trains on the CPU only (SFT on a GPU is not implemented); set trainer.device=cpu");
  runtime::configure_cpu_threads(config_.trainer.num_cpu_threads);
  check_rank_layout(config_, world_->size());
  // verl's ("dp", "sp") mesh: sp consecutive ranks share rows.
  const bool engine_layout = config_.layout == config::SFTLayout::SFTTrainer;
  const std::string sp_key = sequence_parallel_key(config_);
  const int64_t sp = config_.ulysses_sequence_parallel_size;
  const parallel::UlyssesMesh mesh = parallel::ulysses_mesh(world_, sp, sp_key);
  dp_ = sp == 1 ? world_ : world_->split(mesh.sp_rank, mesh.dp_rank);
  dp_rank_ = dp_->rank();
  dp_size_ = dp_->size();
  rows_per_rank_ = config_.data.train_batch_size / dp_size_;
  // A validation batch: fsdp_sft_trainer's micro_batch_size_per_gpu rows per rank, sft_trainer's train batch.
  val_rows_per_rank_ = engine_layout ? rows_per_rank_ : config_.val_batch_size;
  const std::string& model_dir = config_.partial_pretrain;
  const char* model_key = engine_layout ? "model.path" : "model.partial_pretrain";
  VERL_CHECK(std::filesystem::is_directory(model_dir), "sft", model_key, " '", model_dir,
             "' is not a folder (expected a Hugging Face model folder)");
  model::require_model_file(
      "sft", config_.hf_config_path.empty() ? model_key : "model.hf_config_path", config_.hf_config_dir(),
      config_.hf_config_dir(), "config.json",
      engine_layout && config_.hf_config_path.empty() ? "set model.hf_config_path to the config's folder" : "");
  for (const auto& files : {config_.data.train_files, config_.data.val_files}) {
    for (const auto& file : files) {
      VERL_CHECK(std::filesystem::is_regular_file(file), "sft", "data file '", file, "' does not exist");
    }
  }
  const std::string& tokenizer_dir = config_.tokenizer_dir();
  const char* tokenizer_key = config_.tokenizer_path.empty() ? model_key : "model.tokenizer_path";
  model::require_model_file(
      "sft", tokenizer_key, tokenizer_dir, tokenizer_dir, "tokenizer.json",
      engine_layout && config_.tokenizer_path.empty() ? "set model.tokenizer_path to the tokenizer's folder" : "");
  tokenizer_ = std::make_shared<tokenizer::Tokenizer>(
      tokenizer::load_model_tokenizer(tokenizer_dir, config_.custom_chat_template, "model.custom_chat_template"));
  train_ = std::make_unique<data::SFTDataset>(config_.data.train_files, *tokenizer_, config_.data,
                                              config_.data.train_max_samples);
  if (!config_.data.val_files.empty()) {  // the sft_trainer layout's val_files may be null: no validation
    val_ = std::make_unique<data::SFTDataset>(config_.data.val_files, *tokenizer_, config_.data,
                                              config_.data.val_max_samples);
    VERL_CHECK(val_->size() / dp_size_ >= val_rows_per_rank_, "sft", "the validation set has ", val_->size(),
               " rows, fewer than one validation batch (data.",
               engine_layout ? "train_batch_size" : "micro_batch_size_per_gpu", "=", config_.val_batch_size,
               dp_size_ > 1 && !engine_layout ? " rows on each of " + std::to_string(dp_size_) + " ranks" : "", ")");
  }
  steps_per_epoch_ = train_->size() / dp_size_ / rows_per_rank_;  // DistributedSampler's and the loader's drop_last
  VERL_CHECK(steps_per_epoch_ > 0, "sft", "the training set has ", train_->size(),
             " rows, fewer than data.train_batch_size=", config_.data.train_batch_size);
  total_steps_ = config_.trainer.total_training_steps.value_or(steps_per_epoch_ * config_.trainer.total_epochs);
  for (int64_t* freq : {&config_.trainer.save_freq, &config_.trainer.test_freq}) {
    if (*freq == config::SFTTrainerSection::kAfterEachEpoch) *freq = steps_per_epoch_;
  }

  torch::manual_seed(static_cast<uint64_t>(config_.trainer.seed));
  model::LoadOptions load_options;
  load_options.config_overrides = config_.override_config;
  load_options.config_dir = config_.hf_config_path;
  model_ = model::load_model(model_dir, load_options);
  VERL_CHECK(static_cast<int64_t>(tokenizer_->vocab_size()) <= model_->config.vocab_size, "sft", "the tokenizer in '",
             tokenizer_dir, "' has ", tokenizer_->vocab_size(), " tokens, more than the model's vocab_size ",
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
  if (sp > 1) model::set_sequence_parallel(model_, mesh.sp, sp_key);
  impl_ = std::make_shared<Impl>();
  impl_->average_gradients = workers::gradient_averager(world_);
  for (auto& p : model_->parameters()) {
    if (p.requires_grad()) impl_->parameters.push_back(p);
  }
  // verl's FSDP shards the optimizer state over the ranks: here each parameter's AdamW state lives on one rank of its
  // group, which alone steps it and broadcasts it (workers/gradient_sync.h; the same bits as whole replicas).
  impl_->shard = workers::optimizer_shard(workers::sharding_group(world_, config_.fsdp_size, "engine.fsdp_size"),
                                          impl_->parameters, "sft", world_);
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
  const bool ulysses = model_->model->sequence_parallel.active();
  // [M, 2]: row, position of each loss token (the packed forward's; the other forwards need none)
  const torch::Tensor at =
      config_.use_remove_padding && !ulysses ? mask.nonzero() : torch::empty({0, 2}, torch::kInt64);
  torch::Tensor nll_sum;  // the NLL of the loss tokens, summed
  if (ulysses) {
    nll_sum = (sequence_parallel_nll(model_, b) * mask.to(model_->model->embed_tokens->weight.device())).sum();
  } else if (!config_.use_remove_padding || at.size(0) == 0) {
    // verl's padded forward: logits at every position (a micro-batch without a loss token gives loss 0 and every
    // parameter a zero gradient, as verl's).
    torch::Tensor logits = model_->forward(b.input_ids, b.attention_mask, b.position_ids);  // [n, L, V]
    torch::Tensor log_probs = torch::log_softmax(logits.slice(1, 0, -1).to(torch::kFloat32), -1);
    torch::Tensor nll = -log_probs.gather(-1, b.input_ids.slice(1, 1).unsqueeze(-1)).squeeze(-1);
    nll_sum = (nll * mask).sum();
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
    nll_sum = -(log_probs * weights).sum();
  }
  // verl scales by the dp size where the token count is summed over the dp ranks: the gradients' mean over the ranks
  // is then the gradient of the whole batch's loss.
  torch::Tensor loss;
  if (batch_tokens > 0) {
    loss = nll_sum / batch_tokens * static_cast<double>(dp_size_);
  } else {
    torch::Tensor tokens = mask.sum();
    const bool balanced = config_.balance_dp_token && dp_size_ > 1;
    if (balanced) dp_->all_reduce(tokens);
    loss = nll_sum / (tokens.to(nll_sum.device()) + 1e-8) * static_cast<double>(balanced ? dp_size_ : 1) /
           static_cast<double>(n_micro);
  }
  if (backward) loss.backward();
  return loss;
}

double SFTTrainer::dp_sum(double value) const {
  if (dp_size_ == 1) return value;
  torch::Tensor t = torch::tensor({value}, torch::kFloat64);
  dp_->all_reduce(t);
  return t.item<double>();
}

double SFTTrainer::batch_loss(const data::SFTBatch& padded, bool backward) {
  const data::SFTBatch batch = trim_right_padding(padded);
  std::vector<std::vector<int64_t>> parts;
  if (config_.data.use_dynamic_bsz) {
    // verl's dynamic batch: micro-batches of at most max_token_len_per_gpu real tokens, balanced (under Ulysses a
    // rank holds 1/sp of each row, so a micro-batch holds sp times the tokens, as verl's).
    const int64_t sp = model_->model->sequence_parallel.size();
    const int64_t budget = config_.data.max_token_len_per_gpu * sp;
    VERL_CHECK(batch.input_ids.size(1) <= budget, "sft", "a row of ", batch.input_ids.size(1),
               " tokens does not fit data.max_token_len_per_gpu=", config_.data.max_token_len_per_gpu,
               sp > 1 ? " times the sequence-parallel size " + std::to_string(sp) : std::string(),
               " (with data.use_dynamic_bsz=true a micro-batch holds at least one whole row)");
    parts = workers::rearrange_micro_batches(batch.attention_mask, budget).micro_batches;
  } else {
    const int64_t micro = config_.data.micro_batch_size_per_gpu;
    for (int64_t begin = 0; begin < batch.size(); begin += micro) {
      std::vector<int64_t>& rows = parts.emplace_back();
      for (int64_t r = begin; r < std::min(batch.size(), begin + micro); ++r) rows.push_back(r);
    }
  }
  // sft_trainer: every token's loss over the batch's loss-token count on every dp rank (verl's batch_num_tokens, the
  // unshifted mask's sum); a batch without one gives 0 where verl would divide by 0.
  const double batch_tokens = config_.loss_normalization == config::SFTLossNormalization::BatchTokenMean
                                  ? std::max(1.0, dp_sum(batch.loss_mask.sum().item<double>()))
                                  : 0.0;
  const int64_t n_micro = static_cast<int64_t>(parts.size());
  double total = 0;
  for (const auto& rows : parts) {
    total += micro_batch_loss(select_rows(batch, rows), n_micro, backward, batch_tokens).item<double>();
  }
  return dp_sum(total) / static_cast<double>(dp_size_);  // verl's all_reduce(AVG) over the dp group
}

std::map<std::string, double> SFTTrainer::training_step(const data::SFTBatch& batch) {
  model_->train();
  impl_->optimizer->zero_grad();
  const double step_loss = batch_loss(batch, /*backward=*/true);
  // FSDP's reduction over every rank: reduce-scattered to the state's owners (ZeRO-2) or all-reduced; the norm is the
  // whole gradient's either way.
  const workers::GradientPlacement placement = workers::average_gradients(
      impl_->parameters, impl_->shard.get(), impl_->average_gradients, /*tensor_parallel=*/nullptr, {});
  double grad_norm = workers::clip_grad_norm(impl_->parameters, config_.clip_grad, placement);
  if (!std::isfinite(grad_norm)) {
    VERL_LOG(Warn, "sft") << "grad_norm is not finite: " << grad_norm << "; skipping the update";
    impl_->optimizer->zero_grad();
  } else if (impl_->shard) {
    impl_->shard->step(*impl_->optimizer);
  } else {
    impl_->optimizer->step();
  }
  impl_->lr_scheduler->step();
  std::map<std::string, double> metrics = {
      {"train/loss", step_loss}, {"train/lr", impl_->lr_scheduler->last_lr()}, {"train/grad_norm", grad_norm}};
  if (config_.layout == config::SFTLayout::SFTTrainer) {
    // verl's sft_trainer: the batch's tokens, and their running total since this process started (in billions).
    const double tokens = dp_sum(batch.attention_mask.sum().item<double>());
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
  // In order (DistributedSampler(shuffle=False)), drop_last, as verl's val dataloader.
  const std::vector<int64_t> mine = data::distributed_sampler_indices(val_->size(), dp_size_, dp_rank_,
                                                                      /*shuffle=*/false, 0, 0);
  const int64_t rows = val_rows_per_rank_;
  const int64_t batches = static_cast<int64_t>(mine.size()) / rows;
  double total = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const std::vector<int64_t> part(mine.begin() + i * rows, mine.begin() + (i + 1) * rows);
    total += batch_loss(val_->get(part), /*backward=*/false);
  }
  model_->train();
  return total / static_cast<double>(batches);
}

SFTFitResult SFTTrainer::fit(const StepCallback& callback) {
  const auto& t = config_.trainer;
  // World rank 0 writes the run folder: it logs, and removes what writes a killed run interrupted left behind
  // (`*.tmp.<pid>`, `*.old.<pid>`: checkpoint folders, the tracker and the reports beside them) before any rank
  // reads a checkpoint.
  std::optional<Tracking> tracking;
  if (world_->rank() == 0) {
    for (const std::string& path : remove_stale_temp_files(t.default_local_dir, /*depth=*/2)) {
      VERL_LOG(Info, "sft") << "removed " << path << " (left by an interrupted write)";
    }
    tracking.emplace(t.project_name, t.experiment_name, t.logger, t.default_local_dir, resolved_yaml_, console_);
  }
  world_->barrier();
  SFTFitResult result;
  int64_t global_step = load_checkpoint(tracking ? &*tracking : nullptr);
  // The order of an epoch depends only on trainer.seed + epoch, so a resumed run continues at batch
  // global_step % steps_per_epoch of epoch global_step / steps_per_epoch.
  for (int64_t epoch = global_step / steps_per_epoch_; global_step < total_steps_; ++epoch) {
    const std::vector<int64_t> mine = data::distributed_sampler_indices(train_->size(), dp_size_, dp_rank_,
                                                                        /*shuffle=*/true, t.shuffle_seed, epoch);
    for (int64_t b = global_step - epoch * steps_per_epoch_; b < steps_per_epoch_ && global_step < total_steps_;
         ++b) {
      const std::vector<int64_t> rows(mine.begin() + b * rows_per_rank_, mine.begin() + (b + 1) * rows_per_rank_);
      auto start = std::chrono::steady_clock::now();
      std::map<std::string, double> metrics = training_step(train_->get(rows));
      result.train_seconds += seconds_since(start);
      ++global_step;
      result.last_train_loss = metrics["train/loss"];
      bool stop = false;
      bool last = global_step >= total_steps_;
      if (callback && !callback(global_step, metrics)) stop = true;
      if (world_->size() > 1) {  // every rank stops when one rank's callback asks to
        torch::Tensor any = torch::tensor({stop ? 1.0 : 0.0}, torch::kFloat64);
        world_->all_reduce(any, parallel::ReduceOp::Max);
        stop = any.item<double>() > 0;
      }
      if (stop) {
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
      if (tracking) tracking->log(metrics, global_step);
      if (stop) break;
    }
    if (result.stopped_early) break;
  }
  result.global_steps = global_step;
  if (tracking) tracking->finish();
  return result;
}

}  // namespace verl::trainer
