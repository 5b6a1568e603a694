#include "verl/workers/optimizer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/file_digest.h"
#include "verl/common/strings.h"
#include "verl/parallel/comm.h"

namespace verl::workers {

std::unique_ptr<torch::optim::Optimizer> build_optimizer(const std::vector<torch::Tensor>& parameters,
                                                         const config::OptimConfig& optim) {
  VERL_CHECK(optim.lr >= 0, "optim", "optim.lr must be >= 0, got ", optim.lr);
  const std::string& name = optim.optimizer;
  if (name == "AdamW" || name == "Adam") {
    VERL_CHECK(optim.betas.size() == 2, "optim", "optim.betas must hold two numbers (beta1, beta2), got ",
               optim.betas.size());
    const auto betas = std::make_tuple(optim.betas[0], optim.betas[1]);
    if (name == "AdamW") {
      return std::make_unique<torch::optim::AdamW>(parameters, torch::optim::AdamWOptions(optim.lr)
                                                                   .betas(betas)
                                                                   .eps(optim.eps)
                                                                   .weight_decay(optim.weight_decay)
                                                                   .amsgrad(optim.amsgrad));
    }
    // torch.optim.Adam: weight decay as an L2 term added to the gradient (coupled), not AdamW's decay.
    return std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(optim.lr)
                                                                .betas(betas)
                                                                .eps(optim.eps)
                                                                .weight_decay(optim.weight_decay)
                                                                .amsgrad(optim.amsgrad));
  }
  if (name == "SGD") {
    return std::make_unique<torch::optim::SGD>(parameters, torch::optim::SGDOptions(optim.lr)
                                                               .momentum(optim.momentum)
                                                               .dampening(optim.dampening)
                                                               .weight_decay(optim.weight_decay)
                                                               .nesterov(optim.nesterov));
  }
  if (name == "RMSprop") {
    return std::make_unique<torch::optim::RMSprop>(parameters, torch::optim::RMSpropOptions(optim.lr)
                                                                   .alpha(optim.alpha)
                                                                   .eps(optim.eps)
                                                                   .weight_decay(optim.weight_decay)
                                                                   .momentum(optim.momentum)
                                                                   .centered(optim.centered));
  }
  VERL_CHECK(name == "Adagrad", "optim", "optim.optimizer '", name, "' is not a torch.optim class verl.cpp builds (",
             join(config::supported_optimizers(), ", "), ")");
  return std::make_unique<torch::optim::Adagrad>(parameters,
                                                 torch::optim::AdagradOptions(optim.lr)
                                                     .lr_decay(optim.lr_decay)
                                                     .weight_decay(optim.weight_decay)
                                                     .initial_accumulator_value(optim.initial_accumulator_value)
                                                     .eps(optim.eps));
}

std::string optimizer_class_name(const torch::optim::Optimizer& optimizer) {
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer) != nullptr) return "AdamW";
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer) != nullptr) return "Adam";
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer) != nullptr) return "SGD";
  if (dynamic_cast<const torch::optim::RMSprop*>(&optimizer) != nullptr) return "RMSprop";
  if (dynamic_cast<const torch::optim::Adagrad*>(&optimizer) != nullptr) return "Adagrad";
  VERL_FAIL("optim", "an optimizer that build_optimizer does not make");
}

void replace_state_tensors(torch::optim::Optimizer& optimizer,
                           const std::function<torch::Tensor(const torch::Tensor&)>& place) {
  // LibTorch keeps one state object per stepped parameter, of the class's own type.
  const auto placed = [&](const torch::Tensor& t) { return t.defined() ? place(t) : t; };
  for (auto& [key, state] : optimizer.state()) {
    if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
      s->exp_avg(placed(s->exp_avg()));
      s->exp_avg_sq(placed(s->exp_avg_sq()));
      s->max_exp_avg_sq(placed(s->max_exp_avg_sq()));
    } else if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(state.get())) {
      s->exp_avg(placed(s->exp_avg()));
      s->exp_avg_sq(placed(s->exp_avg_sq()));
      s->max_exp_avg_sq(placed(s->max_exp_avg_sq()));
    } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(state.get())) {
      s->momentum_buffer(placed(s->momentum_buffer()));
    } else if (auto* s = dynamic_cast<torch::optim::RMSpropParamState*>(state.get())) {
      s->square_avg(placed(s->square_avg()));
      s->momentum_buffer(placed(s->momentum_buffer()));
      s->grad_avg(placed(s->grad_avg()));
    } else if (auto* s = dynamic_cast<torch::optim::AdagradParamState*>(state.get())) {
      s->sum(placed(s->sum()));
    } else {
      VERL_FAIL("optim", "optimizer state of a class build_optimizer does not make");
    }
  }
}

int64_t num_warmup_steps(const config::OptimConfig& optim, int64_t total_training_steps) {
  if (optim.lr_warmup_steps > 0) return optim.lr_warmup_steps;
  return static_cast<int64_t>(optim.lr_warmup_steps_ratio * static_cast<double>(total_training_steps));
}

double lr_factor(const config::OptimConfig& optim, int64_t total_training_steps, int64_t step) {
  // verl's get_cosine_schedule_with_warmup(zero_indexed_step=False) evaluates its lambda at step + 1; its constant
  // schedule has no such flag.
  if (!optim.zero_indexed_step && optim.lr_scheduler_type == "cosine") ++step;
  const int64_t warmup = num_warmup_steps(optim, total_training_steps);
  if (step < warmup) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup));
  if (optim.lr_scheduler_type == "constant") return 1.0;
  VERL_CHECK(optim.lr_scheduler_type == "cosine", "optim",
             "optim.lr_scheduler_type must be 'constant' or 'cosine', got '", optim.lr_scheduler_type, "'");
  const double progress = static_cast<double>(step - warmup) /
                          static_cast<double>(std::max<int64_t>(1, total_training_steps - warmup));
  const double min_ratio = optim.min_lr_ratio;
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * optim.num_cycles * 2.0 * progress));
  return std::max(min_ratio, cosine * (1.0 - min_ratio) + min_ratio);
}

MegatronSchedule megatron_schedule(const config::OptimConfig& optim, int64_t total_training_steps) {
  MegatronSchedule s;
  s.decay_steps = optim.lr_decay_steps.value_or(total_training_steps);
  // verl: lr_warmup_steps when > 0, else int(lr_warmup_steps_ratio * decay steps) (not the training steps).
  s.warmup_steps = optim.lr_warmup_steps > 0
                       ? optim.lr_warmup_steps
                       : static_cast<int64_t>(optim.lr_warmup_steps_ratio * static_cast<double>(s.decay_steps));
  // Megatron's constructor asserts these.
  VERL_CHECK(s.decay_steps > 0, "optim", "optim.lr_decay_steps (null: the training steps, ", total_training_steps,
             ") must be positive for Megatron's schedule");
  VERL_CHECK(s.warmup_steps < s.decay_steps, "optim", "optim.lr_warmup_steps (", s.warmup_steps,
             ") must be below the decay steps (", s.decay_steps, ") for Megatron's schedule");
  if (optim.lr_decay_style == "WSD") {
    VERL_CHECK(optim.lr_wsd_decay_steps && *optim.lr_wsd_decay_steps > 0, "optim",
               "optim.lr_wsd_decay_steps must be positive with lr_decay_style=WSD");
    s.wsd_decay_steps = *optim.lr_wsd_decay_steps;
  }
  return s;
}

double megatron_lr(const config::OptimConfig& optim, const MegatronSchedule& s, double max_lr, int64_t step) {
  const double min_lr = optim.min_lr, init_lr = optim.lr_warmup_init;
  const auto d = [](int64_t v) { return static_cast<double>(v); };
  if (s.warmup_steps > 0 && step <= s.warmup_steps) return init_lr + (max_lr - init_lr) * d(step) / d(s.warmup_steps);
  if (optim.lr_decay_style == "constant") return max_lr;
  if (step > s.decay_steps) return min_lr;
  if (optim.lr_decay_style == "inverse-square-root") {
    const double lr =
        max_lr * std::sqrt(d(std::max<int64_t>(s.warmup_steps, 1))) / std::sqrt(d(std::max<int64_t>(step, 1)));
    return std::max(min_lr, lr);
  }
  const double ratio = d(step - s.warmup_steps) / d(s.decay_steps - s.warmup_steps);
  double coeff = 1.0;
  if (optim.lr_decay_style == "linear") {
    coeff = 1.0 - ratio;
  } else if (optim.lr_decay_style == "cosine") {
    coeff = 0.5 * (std::cos(M_PI * ratio) + 1.0);
  } else {
    VERL_CHECK(optim.lr_decay_style == "WSD", "optim", "optim.lr_decay_style must be constant, linear, cosine, ",
               "inverse-square-root or WSD, got '", optim.lr_decay_style, "'");
    const int64_t anneal_start = s.decay_steps - s.wsd_decay_steps;
    if (step > anneal_start) {
      const double wsd_ratio = d(step - anneal_start) / d(s.wsd_decay_steps);
      const std::string& style = optim.lr_wsd_decay_style;
      if (style == "linear") {
        coeff = 1.0 - wsd_ratio;
      } else if (style == "cosine") {
        coeff = 0.5 * (std::cos(M_PI * wsd_ratio) + 1.0);
      } else if (style == "exponential") {
        coeff = 2.0 * std::pow(0.5, wsd_ratio) - 1.0;
      } else {
        VERL_CHECK(style == "minus_sqrt", "optim", "optim.lr_wsd_decay_style must be exponential, linear, cosine or ",
                   "minus_sqrt, got '", style, "'");
        coeff = 1.0 - std::sqrt(wsd_ratio);
      }
    }
  }
  return min_lr + coeff * (max_lr - min_lr);
}

double scheduled_lr(const config::OptimConfig& optim, double base_lr, int64_t total_training_steps, int64_t step) {
  if (optim.megatron_schedule) return megatron_lr(optim, megatron_schedule(optim, total_training_steps), base_lr, step);
  return base_lr * lr_factor(optim, total_training_steps, step);
}

LRScheduler::LRScheduler(torch::optim::Optimizer& optimizer, config::OptimConfig optim, int64_t total_training_steps)
    : optimizer_(optimizer), optim_(std::move(optim)), total_(total_training_steps), base_lr_(optim_.lr) {
  apply();  // step 0's LR, which also checks the schedule up front
}

void LRScheduler::apply() {
  last_lr_ = scheduled_lr(optim_, base_lr_, total_, step_);
  for (auto& group : optimizer_.param_groups()) group.options().set_lr(last_lr_);
}

void LRScheduler::step() {
  ++step_;
  apply();
}

nlohmann::json LRScheduler::state_dict() const { return {{"step", step_}, {"base_lr", base_lr_}}; }

void LRScheduler::load_state_dict(const nlohmann::json& state) {
  VERL_CHECK(state.is_object() && state.contains("step") && state["step"].is_number_integer(), "optim",
             "lr_scheduler state needs an integer 'step'");
  VERL_CHECK(state.contains("base_lr") && state["base_lr"].is_number(), "optim",
             "lr_scheduler state needs a number 'base_lr'");
  step_ = state["step"].get<int64_t>();
  // Megatron's scheduler (verl: override_opt_param_scheduler) keeps the config's LR over the checkpoint's; LambdaLR
  // restores its base_lrs.
  if (!optim_.megatron_schedule) base_lr_ = state["base_lr"].get<double>();
  apply();
}

double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  // As torch.nn.utils.clip_grad_norm_: per-tensor norms in the gradients' dtype, the norm of those, and one
  // clip coefficient max_norm / (norm + 1e-6) clamped to 1.
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  norms.reserve(grads.size());
  for (const auto& g : grads) norms.push_back(g.norm(2));
  const torch::Tensor total = torch::stack(norms).norm(2);
  const double total_value = total.item<double>();
  if (!std::isfinite(total_value)) return total_value;
  const torch::Tensor coef = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (auto& g : grads) g.mul_(coef);
  return total_value;
}

double clip_grad_norm(const std::vector<torch::Tensor>& parameters, double max_norm,
                      const GradientPlacement& placement) {
  if (placement.owners == nullptr && placement.tensor_parallel == nullptr && placement.sharded == nullptr &&
      placement.pipeline == nullptr) {
    return clip_grad_norm(parameters, max_norm);
  }
  VERL_ASSERT(placement.tensor_parallel == nullptr || placement.is_slice.size() == parameters.size(), "optim",
              "clip_grad_norm: ", placement.is_slice.size(), " slice flags for ", parameters.size(), " parameters");
  VERL_ASSERT(placement.pipeline == nullptr || placement.counts_in_norm.size() == parameters.size(), "optim",
              "clip_grad_norm: ", placement.counts_in_norm.size(), " norm flags for ", parameters.size(),
              " parameters");
  torch::NoGradGuard no_grad;
  // Per-tensor norms as torch computes them; a gradient held elsewhere counts 0 here.
  std::vector<torch::Tensor> norms;
  norms.reserve(parameters.size());
  for (const auto& p : parameters) {
    const auto& g = p.grad();
    norms.push_back(g.defined() ? g.norm(2).to(torch::kFloat32) : torch::zeros({}, torch::kFloat32));
  }
  torch::Tensor per_tensor = torch::stack(norms);
  if (placement.sharded != nullptr) {
    // The shards of one flat vector: its norm is the root of the summed squares.
    torch::Tensor squares = per_tensor.pow(2);
    placement.sharded->all_reduce(squares, parallel::ReduceOp::Sum);
    per_tensor = squares.sqrt();
  }
  // One rank contributes each entry, so the sum is that rank's norm exactly.
  if (placement.owners != nullptr) placement.owners->all_reduce(per_tensor, parallel::ReduceOp::Sum);
  if (placement.tensor_parallel != nullptr) {
    auto slice = torch::tensor(std::vector<uint8_t>(placement.is_slice.begin(), placement.is_slice.end()))
                     .to(torch::kBool);
    torch::Tensor squares = per_tensor.pow(2) * slice;
    placement.tensor_parallel->all_reduce(squares, parallel::ReduceOp::Sum);
    per_tensor = torch::where(slice, squares.sqrt(), per_tensor);
  }
  torch::Tensor total = per_tensor.norm(2);
  if (placement.pipeline != nullptr) {
    // The stages hold different parameters: their sums of squares add up (in stage order, so every stage agrees).
    auto counted = torch::tensor(std::vector<uint8_t>(placement.counts_in_norm.begin(), placement.counts_in_norm.end()))
                       .to(torch::kBool);
    torch::Tensor squares = (per_tensor.pow(2) * counted).sum();
    placement.pipeline->all_reduce(squares, parallel::ReduceOp::Sum);
    total = squares.sqrt();
  }
  const double total_value = total.item<double>();
  if (!std::isfinite(total_value)) return total_value;
  const torch::Tensor coef = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (const auto& p : parameters) {
    if (p.grad().defined()) p.grad().mul_(coef);
  }
  return total_value;
}

namespace {
constexpr const char* kClassKey = "verl_optimizer_class";
}  // namespace

void save_optimizer_state(const torch::optim::Optimizer& optimizer, const std::string& path) {
  std::ostringstream out;
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.write(kClassKey, c10::IValue(optimizer_class_name(optimizer)));
  archive.save_to(out);
  write_file_atomic(path, out.str());
  write_file_digest(path);
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& path) {
  verify_file_digest(path, "optim");  // LibTorch's archive reader does not check its zip CRCs
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
    c10::IValue tag;
    // Files from before optim.optimizer was honoured carry no tag: they hold AdamW's state.
    const std::string saved = archive.try_read(kClassKey, tag) && tag.isString() ? tag.toStringRef() : "AdamW";
    const std::string expected = optimizer_class_name(optimizer);
    VERL_CHECK(saved == expected, "optim", path, ": the optimizer state of torch.optim.", saved,
               ", but this run builds torch.optim.", expected,
               " (optim.optimizer): resume with the optimizer it was saved with");
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    VERL_FAIL("optim", path, ": not an optimizer state for these parameters (", e.what_without_backtrace(), ")");
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const Error*>(&e) != nullptr) throw;
    VERL_FAIL("optim", path, ": not an optimizer state for these parameters (", e.what(), ")");
  }
}

}  // namespace verl::workers
