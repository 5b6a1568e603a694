// The optimizer and learning-rate schedule of verl's workers (spec §4.6): the torch.optim class of optim.optimizer
// (AdamW by default, with verl's betas (0.9, 0.999), weight_decay 0.01, eps 1e-8; Adam, SGD, RMSprop, Adagrad with
// override_optimizer_config's arguments) and a per-step LR schedule, `constant` or `cosine`, each with linear
// warmup. Both actor and critic use them; state saves and loads for exact resume.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "verl/config/ppo_config.h"

namespace verl::parallel {
class Comm;
}

namespace verl::workers {

// torch.optim.<optim.optimizer>(params, lr, weight_decay, betas (Adam family), **override_optimizer_config), as
// verl's build_optimizer, from an `optim` config section (LibTorch's classes: the same updates as torch.optim's).
std::unique_ptr<torch::optim::Optimizer> build_optimizer(const std::vector<torch::Tensor>& parameters,
                                                         const config::OptimConfig& optim);

// The torch.optim class name of an optimizer build_optimizer made ("AdamW", "SGD", ...).
std::string optimizer_class_name(const torch::optim::Optimizer& optimizer);

// Replaces every state tensor of the optimizer (moments, momentum buffers, sums; not the step counts) with
// place(tensor), e.g. to move it between the host and a device.
void replace_state_tensors(torch::optim::Optimizer& optimizer,
                           const std::function<torch::Tensor(const torch::Tensor&)>& place);

// Warmup steps as verl computes them: lr_warmup_steps when > 0, else int(lr_warmup_steps_ratio * total).
int64_t num_warmup_steps(const config::OptimConfig& optim, int64_t total_training_steps);

// The multiplier of the base LR after `step` scheduler steps (transformers' schedules):
//   constant: step / max(1, warmup) during warmup, then 1
//   cosine:   the same warmup, then max(min_lr_ratio, 0.5 * (1 + cos(2*pi*num_cycles*p)) * (1 - min) + min)
//             with p = (step - warmup) / max(1, total - warmup); optim.zero_indexed_step=false shifts the cosine
//             schedule by one step (it is evaluated at step + 1), as verl's
double lr_factor(const config::OptimConfig& optim, int64_t total_training_steps, int64_t step);

// Megatron's OptimizerParamScheduler (strategy=megatron) as verl's get_megatron_optimizer_param_scheduler sets it
// up: decay over optim.lr_decay_steps (null: the training steps), warmup of lr_warmup_steps when > 0, else
// int(lr_warmup_steps_ratio * decay steps); errors as Megatron's asserts (warmup < decay steps, WSD's steps).
struct MegatronSchedule {
  int64_t decay_steps = 0;
  int64_t warmup_steps = 0;
  int64_t wsd_decay_steps = 0;
};
MegatronSchedule megatron_schedule(const config::OptimConfig& optim, int64_t total_training_steps);

// Megatron's get_lr after `step` steps, with max_lr the base LR: linear warmup from lr_warmup_init (step <= warmup),
// then lr_decay_style from max_lr to min_lr (constant: max_lr; past the decay steps: min_lr).
double megatron_lr(const config::OptimConfig& optim, const MegatronSchedule& schedule, double max_lr, int64_t step);

// The LR after `step` scheduler steps: base_lr * lr_factor, or Megatron's schedule when optim.megatron_schedule.
double scheduled_lr(const config::OptimConfig& optim, double base_lr, int64_t total_training_steps, int64_t step);

// torch.optim.lr_scheduler.LambdaLR over lr_factor (or Megatron's scheduler, whose LR on resume is the config's):
// construction sets lr = scheduled_lr(0); step() advances one training step. The workers log `actor/lr` /
// `critic/lr` as last_lr() before step(), the LR the update used (verl's workers read it before stepping).
class LRScheduler {
 public:
  LRScheduler(torch::optim::Optimizer& optimizer, config::OptimConfig optim, int64_t total_training_steps);
  void step();
  double last_lr() const { return last_lr_; }
  int64_t step_count() const { return step_; }
  nlohmann::json state_dict() const;               // {"step": N, "base_lr": x}
  void load_state_dict(const nlohmann::json& state);  // error naming the missing field

 private:
  void apply();
  torch::optim::Optimizer& optimizer_;
  config::OptimConfig optim_;
  int64_t total_;
  double base_lr_;
  int64_t step_ = 0;
  double last_lr_ = 0;
};

// Total 2-norm of the gradients (parameters without a gradient are skipped); when finite, scales the
// gradients so the norm is at most max_norm (torch.nn.utils.clip_grad_norm_). Returns the norm before
// clipping; a non-finite norm leaves the gradients untouched (verl then skips the optimizer step).
double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm);
// Where the parts of the gradient live when the model is spread over ranks.
struct GradientPlacement {
  // ZeRO-2: each parameter's averaged gradient is held by one rank of this group; the others' are undefined.
  parallel::Comm* owners = nullptr;
  // Tensor parallelism: is_slice[i] marks parameters[i] as this rank's slice of a split tensor; the slices' norms
  // combine over this group, whole parameters (the same on every TP rank) count once.
  parallel::Comm* tensor_parallel = nullptr;
  std::vector<bool> is_slice;
  // ZeRO-3: every parameter is this rank's shard of a flat vector split over this group (model/
  // fully_sharded_model.h); the squares of the shards' gradients sum over the group.
  parallel::Comm* sharded = nullptr;
  // Pipeline parallelism: each stage holds its own layers; the squares of the stages' norms sum over this group,
  // a parameter with counts_in_norm[i] false (the last stage's copy of a tied embedding) left out.
  parallel::Comm* pipeline = nullptr;
  std::vector<bool> counts_in_norm;
};
// clip_grad_norm by the norm of the whole model's gradient, the same on every rank: per-tensor norms (each from
// the rank holding it; a slice's from all TP ranks), the norm of those, one coefficient for the gradients held
// here. With no groups it is the function above. Collective over the groups.
double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm,
                      const GradientPlacement& placement);

// Optimizer state (moments and step counts) to and from a file (LibTorch archive, tagged with the class name).
// The write is atomic; loading a file made for other parameters or another optimizer class is an error naming
// the file (an untagged file, from before optim.optimizer was honoured, holds AdamW's state).
void save_optimizer_state(const torch::optim::Optimizer& optimizer, const std::string& path);
void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& path);

}  // namespace verl::workers
