// The device a worker's models, optimizer state and batches live on: trainer.device=cpu keeps everything in
// host memory; trainer.device=cuda puts slot s on cuda:(s mod trainer.n_gpus_per_node) of its node
// (CUDA_VISIBLE_DEVICES respected, as LibTorch numbers the visible devices). Under mpirun slot s is world rank
// 1 + s (rank 0 is the controller); in one process it is the worker's rank in its group.
#pragma once

#include <torch/types.h>

#include <optional>
#include <string>

#include "verl/config/ppo_config.h"

namespace verl::workers {

torch::Device worker_device(const config::TrainerConfig& trainer, int worker_rank);

// Before any weights load: trainer.device=cuda on a machine where LibTorch sees no CUDA device, or fewer than
// trainer.n_gpus_per_node devices in one process, is a one-line error naming the key.
void check_trainer_device(const config::TrainerConfig& trainer);

// A precision key's value (fsdp_config.mixed_precision.param_dtype, rollout.dtype: "bf16" / "fp16" / "fp32", as
// the config normalises them) or, unset, verl's GPU default bf16 on a CUDA device and fp32 on the CPU.
torch::ScalarType resolved_precision(const std::optional<std::string>& configured, const torch::Device& device);

}  // namespace verl::workers
