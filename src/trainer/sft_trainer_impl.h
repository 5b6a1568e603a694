// SFTTrainer's training state, shared by its step (sft_trainer.cpp) and its checkpoints
// (sft_trainer_checkpoint.cpp). Private to src/trainer.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/trainer/sft_trainer.h"
#include "verl/workers/checkpoint_rank_files.h"
#include "verl/workers/gradient_sync.h"
#include "verl/workers/optimizer.h"

namespace verl::trainer {

struct SFTTrainer::Impl {
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<workers::LRScheduler> lr_scheduler;
  std::vector<torch::Tensor> parameters;  // the trained ones (LoRA: the adapters)
  config::OptimConfig optim;
  workers::GradientAverager average_gradients;  // over every rank (nullptr: one process)
  // ZeRO-2 over every rank (engine.fsdp_size=-1), or ZeRO-1 within groups of fsdp_size ranks; nullptr: each rank's
  // optimizer holds all of the state (one rank, or fsdp_size=1).
  std::shared_ptr<workers::OptimizerShard> shard;

  // The ranks of this rank's shard group (1: the whole state), and its optimizer-state file in a checkpoint.
  int shard_ranks() const { return shard ? shard->comm().size() : 1; }
  std::string optim_file_name() const {
    return workers::optim_file_name(shard_ranks(), shard ? shard->comm().rank() : 0);
  }
};

}  // namespace verl::trainer
