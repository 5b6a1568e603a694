// verl's SFT trainers on LibTorch, in one process or under mpirun (see the end): fsdp_sft_trainer.py
// (config::SFTLayout::FsdpSFTTrainer, described below) and verl 0.9.1's sft_trainer.py (SFTLayout::SFTTrainer,
// `--config-name sft_trainer_engine`), which differs in:
//   - rows are conversations (data/multiturn_sft.h);
//   - the loss of a batch is the masked sum of its tokens' NLL over the batch's loss-token count (verl's sft_loss),
//     summed over micro-batches of micro_batch_size_per_gpu rows or, with use_dynamic_bsz, of at most
//     max_token_len_per_gpu tokens; validation batches hold train_batch_size rows; val_files may be null;
//   - the data order is seeded by the epoch alone; the optimizer and schedule are verl's optim section (any class);
//   - train/global_tokens and train/total_tokens(B) are logged; save_freq / test_freq may be after_each_epoch.
// fsdp_sft_trainer:
//   - datasets: data.train_files / data.val_files through data::SFTDataset
//   - order: each epoch a seeded permutation (torch.randperm with seed trainer.shuffle_seed + epoch, as
//     DistributedSampler(shuffle=True).set_epoch does with its seed), drop_last batches of
//     data.train_batch_size; validation in order, batches of data.micro_batch_size_per_gpu, drop_last
//   - a step: zero_grad; per micro batch (micro_batch_size_per_gpu rows) the loss
//       sum(CE(logits[:, :-1], input_ids[:, 1:]) * loss_mask[:, 1:]) / (sum(loss_mask[:, 1:]) + 1e-8) / n_micro
//     backward and summed into train/loss; clip_grad_norm(optim.clip_grad) (a non-finite norm skips the
//     update); AdamW step; LR scheduler step (cosine or constant with int(warmup_steps_ratio * total) warmup)
//   - total steps: trainer.total_training_steps, else len(dataloader) * total_epochs (also the LR schedule's length)
//   - metrics per step: train/loss, train/lr, train/grad_norm; val/loss (mean over validation batches) every
//     test_freq steps and at the last step; logged through trainer::Tracking to trainer.logger
//   - checkpoints every save_freq steps and at the last step: default_local_dir/global_step_N, published whole
//     (sft_trainer_checkpoint.cpp): huggingface/ (config.json, model.safetensors or the PEFT adapter,
//     generation_config.json, tokenizer files), the training state in verl's per-rank names, and data.json with
//     the step's metrics line; then latest_checkpointed_iteration.txt; max_ckpt_to_keep rotates old ones.
//     The step's line is logged after its checkpoint, and logged at resume when a kill came in between.
//   - resume (trainer.resume_mode auto / disable / resume_path, trainer.resume_from_path): weights, AdamW and LR
//     schedule state, and the data position; the resumed run continues exactly. Stale temporaries of
//     interrupted writes are removed at start.
// Under mpirun (a world communicator of N ranks; sp = ulysses_sequence_parallel_size, dp = N / sp), as verl's
// trainers under torchrun:
//   - data: each dp rank reads its data::distributed_sampler_indices rows, train_batch_size / dp per step (the global
//     batch is the one process's), validation likewise (fsdp_sft_trainer: micro_batch_size_per_gpu rows per rank);
//   - Ulysses (sp > 1): the sp ranks of a group share rows, each runs 1/sp of the sequence (parallel/ulysses.h);
//   - every rank holds the whole model; after the backward passes the gradients are averaged over all N ranks
//     (deterministic);
//   - sft_trainer's loss: the batch's loss-token count is summed over the dp ranks and each rank's loss scaled by dp
//     (verl's sft_loss), so N ranks give the one process's gradients; fsdp_sft_trainer's: the mean over the dp ranks
//     of their micro-batch means (with data.balance_dp_token, token counts summed over the ranks per micro-batch);
//   - train/loss, val/loss: averaged over the dp ranks; train/global_tokens summed;
//   - each parameter's AdamW state lives on one rank of its shard group (engine.fsdp_size ranks, all by default:
//     ZeRO-2, the gradients reduce-scattered to their owners; smaller groups: ZeRO-1 after an all-reduce), which
//     alone steps it and broadcasts it, so the replicas stay bitwise the same;
//   - world rank 0 logs and writes checkpoints (the whole model once, each shard group rank its optimizer shard;
//     the other ranks wait), every rank resumes from them.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "verl/config/sft_config.h"
#include "verl/data/sft_dataset.h"
#include "verl/model/transformer.h"
#include "verl/parallel/comm.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::trainer {

class Tracking;

struct SFTFitResult {
  int64_t global_steps = 0;
  double last_train_loss = 0;
  std::optional<double> last_val_loss;
  std::string last_checkpoint;  // the last global_step_N/huggingface folder written ("" when none)
  double train_seconds = 0;     // time in training steps (verl's "Total time for train steps")
  bool stopped_early = false;   // a step callback asked to stop
};

class SFTTrainer {
 public:
  // Loads the tokenizer and model from model.partial_pretrain and both datasets. `resolved` is saved as the run
  // folder's config.yaml (pass an empty string to skip). console: where the console logger prints. world: the ranks
  // training together (nullptr: this process alone); collective, every rank constructs its trainer.
  SFTTrainer(config::SFTConfig config, std::string resolved_yaml, std::ostream* console = nullptr,
             std::shared_ptr<parallel::Comm> world = nullptr);

  // Called after every training step (after validation and checkpointing of that step). Return false to stop:
  // the trainer then validates and saves at that step as it does at the last step.
  using StepCallback = std::function<bool(int64_t global_step, const std::map<std::string, double>& metrics)>;
  SFTFitResult fit(const StepCallback& callback = {});

  // One optimizer step on `batch` (train_batch_size rows); returns its metrics.
  std::map<std::string, double> training_step(const data::SFTBatch& batch);
  // The masked mean CE of one micro batch divided by n_micro (fsdp_sft_trainer), or with batch_tokens > 0 its masked
  // sum over batch_tokens (sft_trainer), times dp where verl scales it so; backward when asked. Returns the loss
  // tensor (this rank's).
  torch::Tensor micro_batch_loss(const data::SFTBatch& micro, int64_t n_micro, bool backward, double batch_tokens = 0);
  // The loss of a batch (this rank's rows): its micro-batches' (rows, or token budgets with use_dynamic_bsz) losses
  // summed, averaged over the dp ranks. Collective.
  double batch_loss(const data::SFTBatch& batch, bool backward);
  // Mean validation loss over the validation batches, averaged over the dp ranks (an error without a validation
  // set). Collective.
  double validate();
  // default_local_dir/global_step_{step}; `step_metrics` (the step's line) goes into its data.json. Collective:
  // world rank 0 writes it.
  void save_checkpoint(int64_t step, const std::map<std::string, double>& step_metrics = {});
  // The checkpoint trainer.resume_mode picks, loaded; returns its step (0: from scratch). Logs the checkpoint's
  // kept metrics line to `tracking` (world rank 0's; nullptr on the others) when metrics.jsonl lacks it.
  int64_t load_checkpoint(Tracking* tracking);

  int64_t total_training_steps() const { return total_steps_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  model::CausalLM& model() { return model_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }
  const data::SFTDataset& train_dataset() const { return *train_; }
  bool has_validation() const { return val_ != nullptr; }
  const data::SFTDataset& val_dataset() const { return *val_; }  // when has_validation()
  const config::SFTConfig& config() const { return config_; }
  int64_t dp_rank() const { return dp_rank_; }
  int64_t dp_size() const { return dp_size_; }

 private:
  struct Impl;
  // World rank 0's part of a checkpoint (the model, its HF folder, the schedule and data.json) into `staging`.
  void write_checkpoint(const std::string& staging, int64_t step, const std::map<std::string, double>& step_metrics);
  // `value` summed over the dp ranks (collective; `value` itself in one process).
  double dp_sum(double value) const;
  config::SFTConfig config_;
  std::string resolved_yaml_;
  std::ostream* console_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<data::SFTDataset> train_, val_;
  model::CausalLM model_{nullptr};
  std::shared_ptr<Impl> impl_;
  std::shared_ptr<parallel::Comm> world_;  // every rank: gradients are averaged over it
  std::shared_ptr<parallel::Comm> dp_;     // the ranks holding other rows (one per sequence-parallel group)
  int64_t dp_rank_ = 0, dp_size_ = 1;
  int64_t rows_per_rank_ = 0;      // train_batch_size / dp
  int64_t val_rows_per_rank_ = 0;  // a validation batch's rows on each rank
  int64_t steps_per_epoch_ = 0;
  int64_t total_steps_ = 0;
  double total_tokens_ = 0;  // train/total_tokens(B)'s count (sft_trainer layout)
};

// The ranks' layout checks, which depend only on the config and the number of ranks (so every rank fails alike):
// the sequence-parallel size divides the ranks, the batch the data-parallel ranks (and, for fsdp_sft_trainer, each
// rank's rows the micro-batches). An error names the key.
void check_rank_layout(const config::SFTConfig& config, int world_size);

// Drops trailing columns that are padding in every row (right padding), so short rows do not pay for
// max_length; exact for causal models.
data::SFTBatch trim_right_padding(const data::SFTBatch& batch);

}  // namespace verl::trainer
