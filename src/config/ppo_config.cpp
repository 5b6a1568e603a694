#include "verl/config/ppo_config.h"

#include <algorithm>
#include <map>

#include "verl/agent/tool_parser.h"
#include "verl/algo/algo_names.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/rollout_corr.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/config/config_loader.h"
#include "verl/config/config_reader.h"
#include "verl/config/node_json.h"
#include "verl/config/section_readers.h"
#include "verl/config/verl_key_rules.h"
#include "verl/model/mixed_precision.h"

namespace verl::config {

// The enumerations below come from the algorithm registries (src/algo/core_algos.cpp), so the config
// accepts exactly the names the algorithms implement.
const std::vector<std::string>& supported_adv_estimators() {
  static const std::vector<std::string> names = algo::adv_estimator_names();
  return names;
}

const std::vector<std::string>& supported_loss_agg_modes() {
  static const std::vector<std::string> names = algo::loss_agg_mode_names();
  return names;
}

const std::vector<std::string>& supported_optimizers() {
  static const std::vector<std::string> names = {"AdamW", "Adam", "SGD", "RMSprop", "Adagrad"};
  return names;
}

const std::vector<std::string>& supported_kl_penalties() {
  static const std::vector<std::string> names = algo::kl_penalty_names();
  return names;
}

const std::vector<std::string>& supported_policy_loss_modes() {
  static const std::vector<std::string> names = algo::policy_loss_mode_names();
  return names;
}

const std::vector<std::string>& supported_logger_backends() {
  static const std::vector<std::string> names = {"console", "file", "wandb", "mlflow", "swanlab", "tensorboard", "jsonl",
                                                 "html"};
  return names;
}

namespace {

// verl's fsdp2 is PyTorch's second FSDP API over the same sharding; verl.cpp's fsdp strategy serves both.
const std::vector<std::string> kStrategies = {"fsdp", "fsdp2", "megatron"};

std::string read_strategy(ConfigReader& in, const std::string& path) {
  const std::string strategy = in.get_choice(path, kStrategies);
  return strategy == "fsdp2" ? "fsdp" : strategy;
}
const std::vector<std::string> kCheckpointContents = {"model", "optimizer", "extra", "hf_model"};

void check_positive(int64_t value, const std::string& path) {
  VERL_CHECK(value > 0, "config", "config key '", path, "' must be > 0, got ", value);
}

void check_optional_positive(const std::optional<int64_t>& value, const std::string& path) {
  if (value) check_positive(*value, path);
}

void check_members(const std::vector<std::string>& values, const std::vector<std::string>& allowed,
                   const std::string& path) {
  for (const auto& value : values) {
    bool known = false;
    for (const auto& name : allowed) known = known || name == value;
    VERL_CHECK(known, "config", "config key '", path, "' contains '", value, "'; expected items from: ",
               join(allowed, ", "));
  }
}

// torch.optim's keyword arguments of each class (PyTorch 2.x signatures), which override_optimizer_config may set.
const std::vector<std::string>& optimizer_arguments(const std::string& optimizer) {
  static const std::map<std::string, std::vector<std::string>> arguments = {
      {"AdamW",
       {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable",
        "fused"}},
      {"Adam",
       {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused",
        "decoupled_weight_decay"}},
      {"SGD",
       {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable", "fused"}},
      {"RMSprop",
       {"lr", "alpha", "eps", "weight_decay", "momentum", "centered", "capturable", "foreach", "maximize",
        "differentiable"}},
      {"Adagrad",
       {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "foreach", "maximize", "differentiable",
        "fused"}},
  };
  return arguments.at(optimizer);
}

// verl's build_optimizer: getattr(importlib.import_module(optimizer_impl), optimizer)(params, lr=, weight_decay=,
// betas= (classes named *adam*), **override_optimizer_config). The overrides win over the section's keys, as in
// verl; the checks are torch.optim's constructors'.
void read_optimizer_class(ConfigReader& in, const std::string& p, OptimConfig& o) {
  const std::string impl = in.get_string(p + ".optimizer_impl");
  VERL_CHECK(impl == "torch.optim", "config", "config key '", p, ".optimizer_impl' is '", impl,
             "': only torch.optim's optimizers are built into verl.cpp (", join(supported_optimizers(), ", "),
             "); other optimizer libraries are not implemented");
  o.optimizer = in.get_choice(p + ".optimizer", supported_optimizers());
  if (o.optimizer == "Adagrad") o.eps = 1e-10;
  const std::string key = p + ".override_optimizer_config";
  const Node overrides = in.get_node(key);
  VERL_CHECK(overrides.is_null() || overrides.is_map(), "config", "config key '", key,
             "' expects a map of torch.optim.", o.optimizer, " arguments or null, got ", overrides.to_text());
  bool decoupled = false;
  for (const auto& [name, value] : overrides.fields()) {
    const std::string at = key + "." + name;
    const auto& takes = optimizer_arguments(o.optimizer);
    VERL_CHECK(contains(takes, name), "config", "config key '", at, "': torch.optim.", o.optimizer,
               " takes no argument '", name, "' (it takes: ", join(takes, ", "), ")");
    const auto number = [&] {
      VERL_CHECK(value.kind() == Kind::Int || value.kind() == Kind::Float, "config", "config key '", at,
                 "' expects a number, got ", value.to_text());
      return value.as_double();
    };
    const auto flag = [&] {
      VERL_CHECK(value.kind() == Kind::Bool, "config", "config key '", at, "' expects true or false, got ",
                 value.to_text());
      return value.as_bool();
    };
    // The section's fields each argument sets.
    static const std::map<std::string, double OptimConfig::*> numbers = {
        {"lr", &OptimConfig::lr},
        {"eps", &OptimConfig::eps},
        {"weight_decay", &OptimConfig::weight_decay},
        {"momentum", &OptimConfig::momentum},
        {"dampening", &OptimConfig::dampening},
        {"alpha", &OptimConfig::alpha},
        {"lr_decay", &OptimConfig::lr_decay},
        {"initial_accumulator_value", &OptimConfig::initial_accumulator_value}};
    static const std::map<std::string, bool OptimConfig::*> flags = {
        {"amsgrad", &OptimConfig::amsgrad}, {"nesterov", &OptimConfig::nesterov}, {"centered", &OptimConfig::centered}};
    if (const auto n = numbers.find(name); n != numbers.end()) {
      o.*(n->second) = number();
    } else if (const auto f = flags.find(name); f != flags.end()) {
      o.*(f->second) = flag();
    } else if (name == "decoupled_weight_decay") {
      decoupled = flag();
    } else if (name == "maximize") {
      VERL_CHECK(!flag(), "config", "config key '", at,
                 "' is true: gradient ascent (maximize) is not implemented in verl.cpp (only false is accepted)");
    } else if (name == "betas") {
      VERL_CHECK(value.is_list() && value.items().size() == 2, "config", "config key '", at,
                 "' expects two numbers (beta1, beta2), got ", value.to_text());
      o.betas.clear();
      for (const Node& beta : value.items()) {
        VERL_CHECK(beta.kind() == Kind::Int || beta.kind() == Kind::Float, "config", "config key '", at,
                   "' expects two numbers, got ", value.to_text());
        o.betas.push_back(beta.as_double());
      }
    } else {
      // foreach / fused / capturable / differentiable choose torch's kernels, not the update: no effect here.
      VERL_CHECK(value.is_null() || value.kind() == Kind::Bool, "config", "config key '", at,
                 "' expects true, false or null, got ", value.to_text());
    }
  }
  // torch.optim.Adam(decoupled_weight_decay=True) is AdamW.
  if (decoupled) o.optimizer = "AdamW";
  const auto at_least_zero = [&](double v, const char* name) {
    VERL_CHECK(v >= 0, "config", "config key '", p, ".", name, "' (or override_optimizer_config.", name,
               ") must be >= 0 for torch.optim.", o.optimizer, ", got ", v);
  };
  at_least_zero(o.lr, "lr");
  at_least_zero(o.weight_decay, "weight_decay");
  at_least_zero(o.eps, "eps");
  at_least_zero(o.momentum, "momentum");
  at_least_zero(o.alpha, "alpha");
  at_least_zero(o.lr_decay, "lr_decay");
  at_least_zero(o.initial_accumulator_value, "initial_accumulator_value");
  if (o.optimizer == "AdamW" || o.optimizer == "Adam") {
    VERL_CHECK(o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, "config", "config key '", key,
               ".betas' expects two numbers in [0, 1)");
  }
  VERL_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "config", "config key '", key,
             ".nesterov' is true: torch.optim.SGD's Nesterov momentum requires momentum > 0 and dampening 0");
}

// strategy=megatron with Megatron's own optimizer names (verl's McoreOptimizerConfig, init_megatron_optim_config):
// `adam` is Megatron's Adam with decoupled weight decay (torch's AdamW update), `sgd` its SGD (momentum 0.9 unless
// override_optimizer_config.sgd_momentum says otherwise). override_optimizer_config holds Megatron OptimizerConfig
// fields: the update's (adam_beta1, adam_beta2, adam_eps, sgd_momentum, lr, weight_decay) set the section's; the
// CPU-offload and precision knobs place or store the same update and change nothing here (one warning).
void read_megatron_optimizer_class(ConfigReader& in, const std::string& p, const std::string& name, OptimConfig& o) {
  o.optimizer = name == "adam" ? "AdamW" : "SGD";
  if (name == "sgd") o.momentum = 0.9;  // Megatron's OptimizerConfig.sgd_momentum default
  const std::string key = p + ".override_optimizer_config";
  const Node overrides = in.get_node(key);
  VERL_CHECK(overrides.is_null() || overrides.is_map(), "config", "config key '", key,
             "' expects a map of Megatron OptimizerConfig fields or null, got ", overrides.to_text());
  static const std::map<std::string, double OptimConfig::*> numbers = {{"adam_eps", &OptimConfig::eps},
                                                                       {"sgd_momentum", &OptimConfig::momentum},
                                                                       {"lr", &OptimConfig::lr},
                                                                       {"weight_decay", &OptimConfig::weight_decay}};
  static const std::vector<std::string> placement = {
      "optimizer_cpu_offload", "optimizer_offload_fraction",          "overlap_cpu_optimizer_d2h_h2d", "pin_cpu_grads",
      "pin_cpu_params",        "use_torch_optimizer_for_cpu_offload", "use_precision_aware_optimizer"};
  std::vector<std::string> no_effect;
  for (const auto& [field, value] : overrides.fields()) {
    const std::string at = key + "." + field;
    const bool is_number = value.kind() == Kind::Int || value.kind() == Kind::Float;
    if (const auto n = numbers.find(field); n != numbers.end()) {
      VERL_CHECK(is_number, "config", "config key '", at, "' expects a number, got ", value.to_text());
      o.*(n->second) = value.as_double();
    } else if (field == "adam_beta1" || field == "adam_beta2") {
      VERL_CHECK(is_number, "config", "config key '", at, "' expects a number, got ", value.to_text());
      o.betas[field == "adam_beta1" ? 0 : 1] = value.as_double();
    } else if (contains(placement, field)) {
      no_effect.push_back(str_cat(field, "=", value.to_text()));
    } else {
      VERL_FAIL("config", "config key '", at, "': verl.cpp takes these Megatron OptimizerConfig fields: adam_beta1, ",
                "adam_beta2, adam_eps, sgd_momentum, lr, weight_decay (and, with no effect, ", join(placement, ", "),
                ")");
    }
  }
  if (!no_effect.empty()) {
    VERL_LOG(Warn, "config") << key << ": " << join(no_effect, ", ")
                             << " (Megatron's CPU-offloaded / precision-aware optimizer) change nothing in verl.cpp: "
                                "its optimizer state is fp32, placed as megatron.optimizer_offload says";
  }
  VERL_CHECK(o.lr >= 0 && o.weight_decay >= 0 && o.eps >= 0 && o.momentum >= 0, "config", "config key '", p,
             "': lr, weight_decay, adam_eps and sgd_momentum must be >= 0");
  VERL_CHECK(o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, "config", "config key '", key,
             "': adam_beta1 and adam_beta2 must be in [0, 1)");
}

// The schedule keys of the other strategy must keep their built-in defaults (configs/ppo_trainer.yaml): verl's
// section for that engine has none of them.
void check_schedule_keys_unset(ConfigReader& in, const std::string& p, const std::string& strategy,
                               const std::vector<std::string>& names, const std::string& instead) {
  static const Node defaults = default_config_tree();
  for (const std::string& name : names) {
    const std::string path = p + "." + name;
    const Node* fallback = find_path(defaults, path);
    if (!in.contains(path) || fallback == nullptr) continue;  // a tree without them (verl's sft_trainer optim)
    const Node value = in.get_node(path);
    const bool numbers = (value.kind() == Kind::Int || value.kind() == Kind::Float) &&
                         (fallback->kind() == Kind::Int || fallback->kind() == Kind::Float);
    VERL_CHECK(numbers ? value.as_double() == fallback->as_double() : value == *fallback, "config", "config key '",
               path, "' is ", value.to_text(), ": with strategy=", strategy, " the learning-rate schedule is ", instead,
               " (verl's optimizer config for this engine has no '", name, "')");
  }
}

// Megatron's OptimizerParamScheduler settings (strategy=megatron), checked as its constructor asserts them; the
// checks that need the number of training steps are the scheduler's (workers/optimizer.cpp).
void read_megatron_schedule(ConfigReader& in, const std::string& p, OptimConfig& o) {
  o.megatron_schedule = true;
  o.lr_warmup_init = in.get_double(p + ".lr_warmup_init");
  o.lr_decay_steps = in.get_optional_int(p + ".lr_decay_steps");
  o.lr_decay_style =
      in.get_choice(p + ".lr_decay_style", {"constant", "linear", "cosine", "inverse-square-root", "WSD"});
  o.min_lr = in.get_double(p + ".min_lr");
  o.lr_wsd_decay_style = in.get_choice(p + ".lr_wsd_decay_style", {"exponential", "linear", "cosine", "minus_sqrt"});
  o.lr_wsd_decay_steps = in.get_optional_int(p + ".lr_wsd_decay_steps");
  VERL_CHECK(o.min_lr >= 0 && o.min_lr <= o.lr, "config", "config key '", p, ".min_lr' must be in [0, ", p,
             ".lr = ", o.lr, "], got ", o.min_lr);
  VERL_CHECK(o.lr_warmup_init >= 0 && o.lr_warmup_init <= o.lr, "config", "config key '", p,
             ".lr_warmup_init' must be in [0, ", p, ".lr = ", o.lr, "], got ", o.lr_warmup_init);
  VERL_CHECK(!o.lr_decay_steps || *o.lr_decay_steps > 0, "config", "config key '", p,
             ".lr_decay_steps' must be positive or null (the training steps), got ", o.lr_decay_steps.value_or(0));
  VERL_CHECK(o.lr_decay_style != "WSD" || (o.lr_wsd_decay_steps && *o.lr_wsd_decay_steps > 0), "config", "config key '",
             p, ".lr_wsd_decay_steps' must be a positive number of steps with lr_decay_style=WSD");
  check_schedule_keys_unset(in, p, "megatron",
                            {"lr_scheduler_type", "min_lr_ratio", "num_cycles", "warmup_style", "zero_indexed_step"},
                            "Megatron's: lr_decay_style, min_lr, lr_warmup_init, lr_decay_steps");
}

// An `optim` section. strategy=megatron reads verl's McoreOptimizerConfig keys (Megatron's schedule and optimizer
// names); the others verl's FSDPOptimizerConfig keys. Each refuses the other's schedule keys off their defaults.
OptimConfig read_optim(ConfigReader& in, const std::string& p, const std::string& strategy = "fsdp") {
  OptimConfig o;
  const bool megatron = strategy == "megatron";
  o.lr = in.get_double(p + ".lr");
  VERL_CHECK(o.lr >= 0, "config", "config key '", p, ".lr' must be >= 0, got ", o.lr);
  o.weight_decay = in.get_double(p + ".weight_decay");
  o.betas = in.get_double_list(p + ".betas");
  VERL_CHECK(o.betas.size() == 2 && o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, "config",
             "config key '", p, ".betas' expects two numbers in [0, 1)");
  o.lr_warmup_steps = in.get_int(p + ".lr_warmup_steps");
  o.lr_warmup_steps_ratio = in.get_double(p + ".lr_warmup_steps_ratio");
  VERL_CHECK(o.lr_warmup_steps_ratio >= 0 && o.lr_warmup_steps_ratio <= 1, "config", "config key '", p,
             ".lr_warmup_steps_ratio' must be in [0, 1], got ", o.lr_warmup_steps_ratio);
  if (megatron) {
    read_megatron_schedule(in, p, o);
    const std::string name = in.get_string(p + ".optimizer");
    if (name == "adam" || name == "sgd") {
      VERL_CHECK(in.get_string(p + ".optimizer_impl") == "torch.optim", "config", "config key '", p,
                 ".optimizer_impl' must stay torch.optim with Megatron's optimizer names");
      read_megatron_optimizer_class(in, p, name, o);
    } else {
      read_optimizer_class(in, p, o);
    }
    o.total_training_steps = in.get_int(p + ".total_training_steps");
    return o;
  }
  check_schedule_keys_unset(
      in, p, strategy,
      {"lr_warmup_init", "lr_decay_steps", "lr_decay_style", "min_lr", "lr_wsd_decay_style", "lr_wsd_decay_steps"},
      "lr_scheduler_type, with min_lr_ratio, num_cycles and lr_warmup_steps");
  o.lr_scheduler_type = in.get_choice(p + ".lr_scheduler_type", {"constant", "cosine"});
  // verl's deprecated name of lr_scheduler_type (FSDPOptimizerConfig.__post_init__): it wins when set.
  if (auto style = in.get_optional_string(p + ".warmup_style")) {
    VERL_CHECK(*style == "constant" || *style == "cosine", "config", "config key '", p,
               ".warmup_style' is '", *style, "'; expected one of: constant, cosine");
    VERL_LOG(Warn, "config") << p << ".warmup_style is deprecated, use lr_scheduler_type instead";
    o.lr_scheduler_type = *style;
  }
  o.min_lr_ratio = in.get_double(p + ".min_lr_ratio");
  o.num_cycles = in.get_double(p + ".num_cycles");
  o.total_training_steps = in.get_int(p + ".total_training_steps");
  o.zero_indexed_step = in.get_bool(p + ".zero_indexed_step");
  read_optimizer_class(in, p, o);
  return o;
}

CheckpointContentsConfig read_checkpoint(ConfigReader& in, const std::string& p) {
  CheckpointContentsConfig c;
  c.save_contents = in.get_string_list(p + ".save_contents");
  c.load_contents = in.get_string_list(p + ".load_contents");
  check_members(c.save_contents, kCheckpointContents, p + ".save_contents");
  check_members(c.load_contents, kCheckpointContents, p + ".load_contents");
  return c;
}

SamplingConfig read_sampling(ConfigReader& in, const std::string& p) {
  SamplingConfig s;
  s.temperature = in.get_double(p + ".temperature");
  VERL_CHECK(s.temperature >= 0, "config", "config key '", p, ".temperature' must be >= 0, got ", s.temperature);
  s.top_k = in.get_int(p + ".top_k");
  VERL_CHECK(s.top_k == -1 || s.top_k >= 0, "config", "config key '", p, ".top_k' must be -1 (off) or >= 0, got ",
             s.top_k);
  s.top_p = in.get_double(p + ".top_p");
  VERL_CHECK(s.top_p > 0 && s.top_p <= 1, "config", "config key '", p, ".top_p' must be in (0, 1], got ", s.top_p);
  s.n = in.get_int(p + ".n");
  check_positive(s.n, p + ".n");
  s.do_sample = in.get_bool(p + ".do_sample");
  return s;
}

// verl's data.train_files / val_files: one path or a list of paths.
std::vector<std::string> read_file_list(ConfigReader& in, const std::string& path) {
  const Node node = in.get_node(path);
  if (node.kind() == Kind::String) return {node.as_string()};
  VERL_CHECK(node.is_list() && !node.items().empty(), "config", "config key '", path,
             "' expects a file path or a non-empty list of paths, got ", kind_name(node.kind()));
  std::vector<std::string> files;
  for (const Node& item : node.items()) {
    VERL_CHECK(item.kind() == Kind::String, "config", "config key '", path, "' expects a list of paths, found ",
               kind_name(item.kind()), " '", item.to_text(), "'");
    files.push_back(item.as_string());
  }
  return files;
}

DataConfig read_data(ConfigReader& in) {
  DataConfig d;
  d.train_files = read_file_list(in, "data.train_files");
  d.val_files = read_file_list(in, "data.val_files");
  d.tool_config_path = in.get_optional_string("data.tool_config_path");
  d.function_tool_path = in.get_optional_string("data.function_tool_path");
  d.prompt_key = in.get_string("data.prompt_key");
  d.reward_fn_key = in.get_string("data.reward_fn_key");
  d.max_prompt_length = in.get_int("data.max_prompt_length");
  check_positive(d.max_prompt_length, "data.max_prompt_length");
  d.max_response_length = in.get_int("data.max_response_length");
  check_positive(d.max_response_length, "data.max_response_length");
  d.train_batch_size = in.get_int("data.train_batch_size");
  check_positive(d.train_batch_size, "data.train_batch_size");
  d.gen_batch_size = in.get_optional_int("data.gen_batch_size");
  check_optional_positive(d.gen_batch_size, "data.gen_batch_size");
  d.val_batch_size = in.get_optional_int("data.val_batch_size");
  check_optional_positive(d.val_batch_size, "data.val_batch_size");
  d.return_raw_input_ids = in.get_bool("data.return_raw_input_ids");
  d.return_raw_chat = in.get_bool("data.return_raw_chat");
  d.return_full_prompt = in.get_bool("data.return_full_prompt");
  d.shuffle = in.get_bool("data.shuffle");
  d.seed = in.get_optional_int("data.seed");
  d.validation_shuffle = in.get_bool("data.validation_shuffle");
  d.filter_overlong_prompts = in.get_bool("data.filter_overlong_prompts");
  d.truncation = in.get_choice("data.truncation", {"error", "left", "right", "middle"});
  d.train_max_samples = in.get_int("data.train_max_samples");
  d.val_max_samples = in.get_int("data.val_max_samples");
  d.apply_chat_template_kwargs = in.get_node("data.apply_chat_template_kwargs");
  VERL_CHECK(d.apply_chat_template_kwargs.is_map(), "config",
             "config key 'data.apply_chat_template_kwargs' expects map, got ",
             kind_name(d.apply_chat_template_kwargs.kind()));
  d.custom_cls_path = in.get_optional_string("data.custom_cls.path");
  d.custom_cls_name = in.get_optional_string("data.custom_cls.name");
  VERL_CHECK(!d.custom_cls_path.has_value() || d.custom_cls_name.has_value(), "config", "data.custom_cls.path is '",
             d.custom_cls_path.value_or(""), "' but data.custom_cls.name is null: name the dataset class in that file");
  d.custom_cls_timeout = in.get_double("data.custom_cls.timeout");
  VERL_CHECK(std::isfinite(d.custom_cls_timeout) && d.custom_cls_timeout >= 0, "config",
             "data.custom_cls.timeout must be a number of seconds >= 0 (0: no limit), got ", d.custom_cls_timeout);
  d.trust_remote_code = in.get_bool("data.trust_remote_code");
  d.chat_template_timeout = in.get_double("data.chat_template_timeout");
  VERL_CHECK(std::isfinite(d.chat_template_timeout) && d.chat_template_timeout >= 0, "config",
             "data.chat_template_timeout must be a number of seconds >= 0 (0: no limit), got ",
             d.chat_template_timeout);
  return d;
}

// verl's model.override_config: the fields checked here, their values against config.json when the model loads.
model::HFConfigOverrides read_override_config(ConfigReader& in, const std::string& key) {
  model::HFConfigOverrides o{key, node_to_json(in.get_node(key)).dump()};
  model::check_hf_config_override_fields(o);
  return o;
}

// A dtype key of verl's mixed_precision map, absent or null: nullopt. verl's PrecisionType takes the names
// bf16 / bfloat16, fp16 / float16 / 16, fp32 / float32 / 32 (ints included).
std::optional<torch::ScalarType> read_precision(ConfigReader& in, const std::string& path) {
  if (!in.contains(path)) return std::nullopt;
  const Node node = in.get_node(path);
  if (node.kind() == Kind::Null) return std::nullopt;
  if (node.kind() == Kind::Int) return model::parse_precision(std::to_string(node.as_int()), path);
  VERL_CHECK(node.kind() == Kind::String, "config", "config key '", path, "' expects a dtype name (bf16, fp16, fp32)");
  return model::parse_precision(node.as_string(), path);
}

// verl's fsdp_config under `p`. What verl.cpp does not implement is an error naming the key, never ignored:
// non-fp32 master weights.
FSDPConfig read_fsdp(ConfigReader& in, const std::string& p, bool trains) {
  FSDPConfig f;
  f.param_offload = in.get_bool(p + ".param_offload");
  f.reshard_after_forward = in.get_bool(p + ".reshard_after_forward");
  f.model_dtype = in.get_choice(p + ".model_dtype", {"fp32", "float32"});
  // verl's fsdp_config.seed (the actor's and ref's; critic.model.fsdp_config, honoured through, has none).
  if (in.contains(p + ".seed")) f.seed = in.get_int(p + ".seed");
  // verl's optional mixed_precision map ('+' overrides add it), each dtype as verl's PrecisionType names it:
  // param_dtype the compute dtype, reduce_dtype the gradients' reduction dtype; buffers stay fp32.
  const std::string mp = p + ".mixed_precision";
  if (auto v = read_precision(in, mp + ".param_dtype")) f.param_dtype = model::precision_name(*v);
  if (auto v = read_precision(in, mp + ".reduce_dtype")) f.reduce_dtype = model::precision_name(*v);
  if (auto v = read_precision(in, mp + ".buffer_dtype")) {
    VERL_CHECK(*v == torch::kFloat32, "config", mp, ".buffer_dtype=", model::precision_name(*v),
               ": verl.cpp's models hold no buffers in another dtype (the rotary tables are computed in fp32); only "
               "fp32 is supported");
  }
  if (trains) {
    f.optimizer_offload = in.get_bool(p + ".optimizer_offload");
    f.fsdp_size = in.get_int(p + ".fsdp_size");
    VERL_CHECK(f.fsdp_size == -1 || f.fsdp_size >= 1, "config", p, ".fsdp_size must be -1 (the whole group) or >= 1, got ",
               f.fsdp_size);
  } else {
    VERL_CHECK(in.get_bool(p + ".forward_only"), "config", p,
               ".forward_only=false: the reference policy is never trained");
  }
  return f;
}

// verl's Ulysses size: the engine's fsdp_config key, unless the deprecated role-level key is > 1 (verl's
// FSDPActorConfig.__post_init__ copies it over). With strategy=megatron, only 1.
int64_t read_ulysses_size(ConfigReader& in, const std::string& role_key, const std::string& engine_key,
                          const std::string& strategy) {
  const int64_t role = in.get_int(role_key), engine = in.get_int(engine_key);
  check_positive(role, role_key);
  check_positive(engine, engine_key);
  const int64_t size = role > 1 ? role : engine;
  VERL_CHECK(size == 1 || strategy == "fsdp", "config", role > 1 ? role_key : engine_key, "=", size,
             " with strategy=", strategy, ": Ulysses sequence parallelism is implemented for strategy=fsdp only");
  return size;
}

// verl's megatron config under `p`: tensor, context, pipeline and Megatron's sequence parallelism.
MegatronConfig read_megatron(ConfigReader& in, const std::string& p, bool trains) {
  MegatronConfig m;
  m.tensor_model_parallel_size = in.get_int(p + ".tensor_model_parallel_size");
  check_positive(m.tensor_model_parallel_size, p + ".tensor_model_parallel_size");
  m.pipeline_model_parallel_size = in.get_int(p + ".pipeline_model_parallel_size");
  check_positive(m.pipeline_model_parallel_size, p + ".pipeline_model_parallel_size");
  // Megatron's interleaved layout: each stage holds this many runs of layers (null: one).
  m.virtual_pipeline_model_parallel_size = in.get_optional_int(p + ".virtual_pipeline_model_parallel_size").value_or(1);
  check_positive(m.virtual_pipeline_model_parallel_size, p + ".virtual_pipeline_model_parallel_size");
  m.context_parallel_size = in.get_int(p + ".context_parallel_size");
  check_positive(m.context_parallel_size, p + ".context_parallel_size");
  // verl's McoreEngineConfig turns it off without tensor parallelism (nothing to split over).
  m.sequence_parallel = in.get_bool(p + ".sequence_parallel") && m.tensor_model_parallel_size > 1;
  m.param_offload = in.get_bool(p + ".param_offload");
  if (trains) {
    m.use_distributed_optimizer = in.get_bool(p + ".use_distributed_optimizer");
    m.grad_offload = in.get_bool(p + ".grad_offload");
    m.optimizer_offload = in.get_bool(p + ".optimizer_offload");
  }
  return m;
}

ActorConfig read_actor(ConfigReader& in) {
  const std::string p = "actor_rollout_ref.actor";
  ActorConfig a;
  a.strategy = read_strategy(in, p + ".strategy");
  a.ppo_mini_batch_size = in.get_int(p + ".ppo_mini_batch_size");
  check_positive(a.ppo_mini_batch_size, p + ".ppo_mini_batch_size");
  a.ppo_micro_batch_size_per_gpu = in.get_optional_int(p + ".ppo_micro_batch_size_per_gpu");
  check_optional_positive(a.ppo_micro_batch_size_per_gpu, p + ".ppo_micro_batch_size_per_gpu");
  a.use_dynamic_bsz = in.get_bool(p + ".use_dynamic_bsz");
  a.ppo_max_token_len_per_gpu = in.get_int(p + ".ppo_max_token_len_per_gpu");
  check_positive(a.ppo_max_token_len_per_gpu, p + ".ppo_max_token_len_per_gpu");
  a.clip_ratio = in.get_double(p + ".clip_ratio");
  a.clip_ratio_low = in.get_double(p + ".clip_ratio_low");
  a.clip_ratio_high = in.get_double(p + ".clip_ratio_high");
  a.clip_ratio_c = in.get_double(p + ".clip_ratio_c");
  VERL_CHECK(a.clip_ratio_c > 1.0, "config", "config key '", p, ".clip_ratio_c' must be > 1 (dual-clip bound), got ",
             a.clip_ratio_c);
  a.policy_loss_mode = in.get_choice(p + ".policy_loss.loss_mode", supported_policy_loss_modes());
  a.clip_cov_ratio = in.get_double(p + ".policy_loss.clip_cov_ratio");
  VERL_CHECK(a.clip_cov_ratio > 0, "config", "config key '", p, ".policy_loss.clip_cov_ratio' must be > 0, got ",
             a.clip_cov_ratio);
  a.clip_cov_lb = in.get_double(p + ".policy_loss.clip_cov_lb");
  a.clip_cov_ub = in.get_double(p + ".policy_loss.clip_cov_ub");
  VERL_CHECK(a.clip_cov_lb < a.clip_cov_ub, "config", "config keys '", p, ".policy_loss.clip_cov_lb' (", a.clip_cov_lb,
             ") must be below '", p, ".policy_loss.clip_cov_ub' (", a.clip_cov_ub, ")");
  a.kl_cov_ratio = in.get_double(p + ".policy_loss.kl_cov_ratio");
  VERL_CHECK(a.kl_cov_ratio > 0, "config", "config key '", p, ".policy_loss.kl_cov_ratio' must be > 0, got ",
             a.kl_cov_ratio);
  a.ppo_kl_coef = in.get_double(p + ".policy_loss.ppo_kl_coef");
  a.dro_beta = in.get_optional_double(p + ".policy_loss.dro_beta");
  VERL_CHECK(a.policy_loss_mode != "dro" || (a.dro_beta && *a.dro_beta > 0), "config", "config key '", p,
             ".policy_loss.dro_beta' must be a positive number with policy_loss.loss_mode=dro");
  a.tau_pos = in.get_double(p + ".tau_pos");
  a.tau_neg = in.get_double(p + ".tau_neg");
  VERL_CHECK(a.tau_pos > 0 && a.tau_neg > 0, "config", "config keys '", p, ".tau_pos' and '", p,
             ".tau_neg' (sapo's gate temperatures) must be > 0, got ", a.tau_pos, " and ", a.tau_neg);
  a.loss_agg_mode = in.get_choice(p + ".loss_agg_mode", supported_loss_agg_modes());
  a.loss_scale_factor = in.get_optional_double(p + ".loss_scale_factor");
  a.entropy_coeff = in.get_double(p + ".entropy_coeff");
  a.calculate_entropy = in.get_bool(p + ".calculate_entropy");
  a.calculate_sum_pi_squared = in.get_bool(p + ".calculate_sum_pi_squared");
  a.use_kl_loss = in.get_bool(p + ".use_kl_loss");
  a.kl_loss_coef = in.get_double(p + ".kl_loss_coef");
  a.kl_loss_type = in.get_choice(p + ".kl_loss_type", supported_kl_penalties());
  a.ppo_epochs = in.get_int(p + ".ppo_epochs");
  check_positive(a.ppo_epochs, p + ".ppo_epochs");
  a.shuffle = in.get_bool(p + ".shuffle");
  a.data_loader_seed = in.get_int(p + ".data_loader_seed");
  a.grad_clip = in.get_double(p + ".grad_clip");
  a.optim = read_optim(in, p + ".optim", a.strategy);
  a.fsdp_config = read_fsdp(in, p + ".fsdp_config", /*trains=*/true);
  a.megatron = read_megatron(in, p + ".megatron", /*trains=*/true);
  a.checkpoint = read_checkpoint(in, p + ".checkpoint");
  a.ulysses_sequence_parallel_size = read_ulysses_size(in, p + ".ulysses_sequence_parallel_size",
                                                       p + ".fsdp_config.ulysses_sequence_parallel_size", a.strategy);
  return a;
}

// verl's MultiTurnConfig; the tool agent loop also runs when agent.default_agent_loop=tool_agent, as in verl.
MultiTurnConfig read_multi_turn(ConfigReader& in, const std::string& rollout) {
  const std::string p = rollout + ".multi_turn";
  MultiTurnConfig m;
  m.enable = in.get_bool(p + ".enable");
  const std::string agent_loop = in.get_choice(rollout + ".agent.default_agent_loop", {"single_turn_agent", "tool_agent"});
  m.enable = m.enable || agent_loop == "tool_agent";
  m.max_assistant_turns = in.get_optional_int(p + ".max_assistant_turns");
  check_optional_positive(m.max_assistant_turns, p + ".max_assistant_turns");
  m.max_user_turns = in.get_optional_int(p + ".max_user_turns");
  VERL_CHECK(!m.max_user_turns || *m.max_user_turns >= 0, "config", p, ".max_user_turns must be >= 0 or null, got ",
             m.max_user_turns.value_or(0));
  m.max_parallel_calls = in.get_int(p + ".max_parallel_calls");
  check_positive(m.max_parallel_calls, p + ".max_parallel_calls");
  m.max_tool_response_length = in.get_int(p + ".max_tool_response_length");
  check_positive(m.max_tool_response_length, p + ".max_tool_response_length");
  m.tool_response_truncate_side = in.get_choice(p + ".tool_response_truncate_side", {"left", "middle", "right"});
  m.tool_config_path = in.get_optional_string(p + ".tool_config_path");
  m.function_tool_path = in.get_optional_string(p + ".function_tool_path");
  m.interaction_config_path = in.get_optional_string(p + ".interaction_config_path");
  m.use_inference_chat_template = in.get_bool(p + ".use_inference_chat_template");
  VERL_CHECK(!m.use_inference_chat_template, "config", p, ".use_inference_chat_template=true (re-rendering each turn "
             "with the inference template) is not implemented; verl.cpp trains on the token ids it generated (false)");
  m.tokenization_sanity_check_mode =
      in.get_choice(p + ".tokenization_sanity_check_mode", {"strict", "ignore_strippable", "disable"});
  m.format = in.get_string(p + ".format");
  // verl 0.9.1's ToolParser registry; any other name stops its tool agent loop ("Unknown tool parser").
  const auto& formats = agent::ToolParser::formats();
  if (!contains(formats, m.format)) {
    VERL_FAIL("config", "config key '", p, ".format' is '", m.format,
              "'; expected one of: ", agent::ToolParser::formats_text(),
              " (verl 0.9.1's tool parsers; its tool agent loop stops with 'Unknown tool parser: ", m.format, "')");
  }
  m.tool_timeout = in.get_double(p + ".tool_timeout");
  if (m.enable) {
    VERL_CHECK(in.get_bool("data.return_raw_chat"), "config", "data.return_raw_chat=false: the multi-turn rollout (",
               p, ".enable) starts from the dataset's messages; set data.return_raw_chat=true");
  }
  return m;
}

// verl's trace keys; weave (its package is not available here) and other backends are one-line errors.
RolloutTraceConfig read_rollout_trace(ConfigReader& in, const std::string& p) {
  RolloutTraceConfig t;
  t.backend = in.get_optional_string(p + ".backend");
  VERL_CHECK(!t.backend || *t.backend == "mlflow", "config", "config key '", p, ".backend' is '", *t.backend,
             "': verl.cpp writes rollout traces to mlflow only (weave is not implemented: its package is not "
             "available); use mlflow or null");
  t.project_name = in.get_optional_string(p + ".project_name").value_or("");
  t.experiment_name = in.get_optional_string(p + ".experiment_name").value_or("");
  VERL_CHECK(!t.backend || !t.project_name.empty(), "config", p, ".backend=", t.backend.value_or(""),
             " needs a project name (", p, ".project_name, by default trainer.project_name): the mlflow experiment");
  t.token2text = in.get_bool(p + ".token2text");
  t.max_samples_per_step_per_worker = in.get_optional_int(p + ".max_samples_per_step_per_worker");
  VERL_CHECK(!t.max_samples_per_step_per_worker || *t.max_samples_per_step_per_worker >= 0, "config", p,
             ".max_samples_per_step_per_worker must be a non-negative integer or null, got ",
             t.max_samples_per_step_per_worker.value_or(0));
  return t;
}

RolloutConfig read_rollout(ConfigReader& in) {
  const std::string p = "actor_rollout_ref.rollout";
  RolloutConfig r;
  r.name = in.get_choice(p + ".name", {"hf", "vllm", "sglang", "trtllm"});  // all served by the native engine
  r.gpu_memory_utilization = in.get_double(p + ".gpu_memory_utilization");
  VERL_CHECK(r.gpu_memory_utilization > 0 && r.gpu_memory_utilization <= 1, "config", p,
             ".gpu_memory_utilization must be in (0, 1], got ", r.gpu_memory_utilization);
  r.tensor_model_parallel_size = in.get_int(p + ".tensor_model_parallel_size");
  check_positive(r.tensor_model_parallel_size, p + ".tensor_model_parallel_size");
  r.sampling = read_sampling(in, p);
  r.prompt_length = in.get_int(p + ".prompt_length");
  check_positive(r.prompt_length, p + ".prompt_length");
  r.response_length = in.get_int(p + ".response_length");
  check_positive(r.response_length, p + ".response_length");
  r.ignore_eos = in.get_bool(p + ".ignore_eos");
  r.calculate_log_probs = in.get_bool(p + ".calculate_log_probs");
  r.seed = in.get_int(p + ".seed");
  if (auto v = in.get_optional_string(p + ".dtype")) {
    r.dtype = model::precision_name(model::parse_precision(*v, p + ".dtype"));
  }
  r.log_prob_micro_batch_size_per_gpu = in.get_optional_int(p + ".log_prob_micro_batch_size_per_gpu");
  check_optional_positive(r.log_prob_micro_batch_size_per_gpu, p + ".log_prob_micro_batch_size_per_gpu");
  r.log_prob_use_dynamic_bsz = in.get_bool(p + ".log_prob_use_dynamic_bsz");
  r.log_prob_max_token_len_per_gpu = in.get_int(p + ".log_prob_max_token_len_per_gpu");
  r.val_kwargs = read_sampling(in, p + ".val_kwargs");
  // verl's RolloutConfig.__post_init__: 'sync' was removed, anything else but 'async' is a deprecation warning.
  const std::string mode = in.get_string(p + ".mode");
  VERL_CHECK(mode != "sync", "config", p, ".mode=sync: Rollout mode 'sync' has been removed. Please set ",
             "`actor_rollout_ref.rollout.mode=async` or remove the mode setting entirely.");
  if (mode != "async") {
    VERL_LOG(Warn, "config") << "Unknown rollout mode '" << mode << "'. Only 'async' mode is supported (" << p
                             << ".mode is deprecated in verl)";
  }
  // vLLM engine arguments with a native meaning.
  r.max_num_seqs = in.get_int(p + ".max_num_seqs");
  check_positive(r.max_num_seqs, p + ".max_num_seqs");
  r.max_model_len = in.get_optional_int(p + ".max_model_len");
  check_optional_positive(r.max_model_len, p + ".max_model_len");
  VERL_CHECK(!r.max_model_len || r.prompt_length + r.response_length <= *r.max_model_len, "config", p,
             ".max_model_len=", r.max_model_len.value_or(0), " is below prompt_length + response_length (",
             r.prompt_length, " + ", r.response_length, "); vLLM would refuse these sequences too");
  r.enforce_eager = in.get_bool(p + ".enforce_eager");
  r.free_cache_engine = in.get_bool(p + ".free_cache_engine");
  r.multi_turn = read_multi_turn(in, p);
  r.trace = read_rollout_trace(in, p + ".trace");
  return r;
}

}  // namespace

OptimConfig read_optim_config(ConfigReader& in, const std::string& prefix) { return read_optim(in, prefix); }
model::HFConfigOverrides read_model_override_config(ConfigReader& in, const std::string& key) {
  return read_override_config(in, key);
}

LoraConfig read_lora_config(ConfigReader& in, const std::string& m, bool with_adapter_path) {
  LoraConfig c;
  c.lora_rank = in.get_int(m + ".lora_rank");
  VERL_CHECK(c.lora_rank >= 0, "config", m, ".lora_rank must be >= 0 (0 = no LoRA), got ", c.lora_rank);
  c.lora_alpha = in.get_double(m + ".lora_alpha");
  VERL_CHECK(c.lora_alpha > 0, "config", m, ".lora_alpha must be positive, got ", c.lora_alpha);
  // A string or a list of strings (verl's `all-linear` default is a string).
  auto modules = [&](const std::string& key, std::vector<std::string>& out, bool& regex) {
    const Node node = in.get_node(key);
    out.clear();
    regex = false;
    if (node.is_null()) return;
    if (node.is_list()) {
      for (const auto& item : node.items()) {
        VERL_CHECK(item.kind() == Kind::String, "config", key, " must be all-linear or a list of module names, got ",
                   node.to_text());
        out.push_back(item.as_string());
      }
      return;
    }
    VERL_CHECK(node.kind() == Kind::String, "config", key, " must be all-linear or a list of module names, got ",
               node.to_text());
    out.push_back(node.as_string());
    regex = node.as_string() != "all-linear";
  };
  modules(m + ".target_modules", c.target_modules, c.target_modules_regex);
  VERL_CHECK(!c.target_modules.empty(), "config", m, ".target_modules must be all-linear or a list of module names");
  modules(m + ".exclude_modules", c.exclude_modules, c.exclude_modules_regex);
  if (with_adapter_path) {
    c.lora_adapter_path = in.get_optional_string(m + ".lora_adapter_path");
  }
  return c;
}

namespace {

ActorRolloutRefConfig read_actor_rollout_ref(ConfigReader& in) {
  ActorRolloutRefConfig c;
  c.hybrid_engine = in.get_bool("actor_rollout_ref.hybrid_engine");
  c.model.path = in.get_string("actor_rollout_ref.model.path");
  c.model.tokenizer_path = in.get_optional_string("actor_rollout_ref.model.tokenizer_path").value_or("");
  c.model.hf_config_path = in.get_optional_string("actor_rollout_ref.model.hf_config_path").value_or("");
  c.model.custom_chat_template = in.get_optional_string("actor_rollout_ref.model.custom_chat_template");
  c.model.enable_gradient_checkpointing = in.get_bool("actor_rollout_ref.model.enable_gradient_checkpointing");
  c.model.lora = read_lora_config(in, "actor_rollout_ref.model", /*with_adapter_path=*/true);
  c.model.override_config = read_override_config(in, "actor_rollout_ref.model.override_config");
  c.model.use_remove_padding = in.get_bool("actor_rollout_ref.model.use_remove_padding");
  c.actor = read_actor(in);
  c.ref.log_prob_micro_batch_size_per_gpu = in.get_optional_int("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu");
  check_optional_positive(c.ref.log_prob_micro_batch_size_per_gpu, "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu");
  c.ref.log_prob_use_dynamic_bsz = in.get_bool("actor_rollout_ref.ref.log_prob_use_dynamic_bsz");
  c.ref.log_prob_max_token_len_per_gpu = in.get_int("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu");
  c.ref.fsdp_config = read_fsdp(in, "actor_rollout_ref.ref.fsdp_config", /*trains=*/false);
  c.ref.megatron = read_megatron(in, "actor_rollout_ref.ref.megatron", /*trains=*/false);
  c.ref.ulysses_sequence_parallel_size = read_ulysses_size(
      in, "actor_rollout_ref.ref.ulysses_sequence_parallel_size",
      "actor_rollout_ref.ref.fsdp_config.ulysses_sequence_parallel_size", c.actor.strategy);
  c.rollout = read_rollout(in);
  if (c.model.lora.enabled()) {
    // Tensor parallelism slices the adapters as their base layer, ZeRO-3 keeps them whole over a sharded base
    // (model/lora.h; tests/dist/test_megatron_lora.cpp, test_zero3_lora.cpp).
    // The reference is the actor's base with the adapters off (one module), so it splits sequences as the actor
    // does; verl's ref size defaults to the actor's.
    VERL_CHECK(c.actor.ulysses_sequence_parallel_size == c.ref.ulysses_sequence_parallel_size, "config",
               "actor_rollout_ref.model.lora_rank > 0 with actor_rollout_ref.ref.ulysses_sequence_parallel_size=",
               c.ref.ulysses_sequence_parallel_size, " unlike the actor's ", c.actor.ulysses_sequence_parallel_size,
               " is not implemented (the reference is the actor's base with the adapters off); use the same size");
    VERL_CHECK(
        c.actor.pipeline_parallel_size() == 1, "config",
        "actor_rollout_ref.model.lora_rank > 0 with actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=",
        c.actor.pipeline_parallel_size(), " is not supported (LoRA adapters run on whole-depth models); use 1");
  }
  return c;
}

CriticConfig read_critic(ConfigReader& in) {
  CriticConfig c;
  c.enable = in.get_optional_bool("critic.enable");
  c.strategy = read_strategy(in, "critic.strategy");
  c.optim = read_optim(in, "critic.optim", c.strategy);
  c.model.path = in.get_string("critic.model.path");
  c.model.tokenizer_path = in.get_string("critic.model.tokenizer_path");
  c.model.hf_config_path = in.get_optional_string("critic.model.hf_config_path").value_or("");
  c.model.enable_gradient_checkpointing = in.get_bool("critic.model.enable_gradient_checkpointing");
  c.model.lora = read_lora_config(in, "critic.model", /*with_adapter_path=*/true);
  c.model.override_config = read_override_config(in, "critic.model.override_config");
  c.model.use_remove_padding = in.get_bool("critic.model.use_remove_padding");
  c.model.fsdp_config = read_fsdp(in, "critic.model.fsdp_config", /*trains=*/true);
  c.megatron = read_megatron(in, "critic.megatron", /*trains=*/true);
  VERL_CHECK(!(c.model.lora.enabled() || c.model.lora.lora_adapter_path) || c.pipeline_parallel_size() == 1, "config",
             "critic.model.lora_rank > 0 with critic.megatron.pipeline_model_parallel_size=",
             c.pipeline_parallel_size(), " is not supported (LoRA adapters run on whole-depth models); use 1");
  c.ulysses_sequence_parallel_size = read_ulysses_size(in, "critic.ulysses_sequence_parallel_size",
                                                       "critic.fsdp.ulysses_sequence_parallel_size", c.strategy);
  c.ppo_mini_batch_size = in.get_int("critic.ppo_mini_batch_size");
  check_positive(c.ppo_mini_batch_size, "critic.ppo_mini_batch_size");
  c.ppo_micro_batch_size_per_gpu = in.get_optional_int("critic.ppo_micro_batch_size_per_gpu");
  check_optional_positive(c.ppo_micro_batch_size_per_gpu, "critic.ppo_micro_batch_size_per_gpu");
  c.forward_micro_batch_size_per_gpu = in.get_optional_int("critic.forward_micro_batch_size_per_gpu");
  check_optional_positive(c.forward_micro_batch_size_per_gpu, "critic.forward_micro_batch_size_per_gpu");
  c.use_dynamic_bsz = in.get_bool("critic.use_dynamic_bsz");
  c.ppo_max_token_len_per_gpu = in.get_int("critic.ppo_max_token_len_per_gpu");
  c.forward_max_token_len_per_gpu = in.get_int("critic.forward_max_token_len_per_gpu");
  c.ppo_epochs = in.get_int("critic.ppo_epochs");
  check_positive(c.ppo_epochs, "critic.ppo_epochs");
  c.shuffle = in.get_bool("critic.shuffle");
  c.data_loader_seed = in.get_int("critic.data_loader_seed");
  c.grad_clip = in.get_double("critic.grad_clip");
  c.cliprange_value = in.get_double("critic.cliprange_value");
  c.loss_agg_mode = in.get_choice("critic.loss_agg_mode", supported_loss_agg_modes());
  c.loss_scale_factor = in.get_optional_double("critic.loss_scale_factor");
  c.checkpoint = read_checkpoint(in, "critic.checkpoint");
  return c;
}

// verl 0.9.1 reads reward.sandbox_fusion; its migration replaces that section with the legacy top-level one when
// any of the legacy keys is set. A legacy null max_concurrent / memory_limit_mb then takes the default here (verl
// would build its semaphore from None and fail, and send a null memory limit).
SandboxFusionConfig read_sandbox_fusion(ConfigReader& in) {
  std::string section = "reward.sandbox_fusion";
  for (const char* both : {"reward.sandbox_fusion", "sandbox_fusion"}) {
    if (in.contains(both)) in.get_node(both);  // the section not taken is read too (it is not a stray key)
  }
  for (const char* key : {"url", "max_concurrent", "memory_limit_mb"}) {
    const std::string legacy = std::string("sandbox_fusion.") + key;
    if (in.contains(legacy) && !in.get_node(legacy).is_null()) section = "sandbox_fusion";
  }
  SandboxFusionConfig s;
  const std::string url_key = section + ".url";
  if (in.contains(url_key)) s.url = in.get_optional_string(url_key);
  if (s.url.has_value()) {
    VERL_CHECK(starts_with(*s.url, "http://") || starts_with(*s.url, "https://"), "config", "config key '", url_key,
               "' expects the sandbox's run_code URL (http://... or https://...), got '", *s.url, "'");
  }
  for (const auto& [key, field] :
       {std::pair{".max_concurrent", &s.max_concurrent}, std::pair{".memory_limit_mb", &s.memory_limit_mb}}) {
    const std::string path = section + key;
    if (in.contains(path) && !in.get_node(path).is_null()) *field = in.get_int(path);
    VERL_CHECK(*field >= 1, "config", "config key '", path, "' must be >= 1, got ", *field);
  }
  return s;
}

// verl 0.9.1 reads its reward section (reward.reward_model.enable, ...); its migration
// (reward_loop.py's migrate_legacy_reward_impl) copies each legacy key set to a non-null value over the new one.
// Returns the key whose value is in force; both are read, so neither is a stray key.
std::string migrated_reward_key(ConfigReader& in, const std::string& legacy, const std::string& current) {
  if (in.contains(current)) in.get_node(current);
  if (in.contains(legacy) && !in.get_node(legacy).is_null()) return legacy;
  return current;
}

RewardModelConfig read_reward_model(ConfigReader& in) {
  RewardModelConfig r;
  const std::string enable_key = migrated_reward_key(in, "reward_model.enable", "reward.reward_model.enable");
  r.enable = in.get_bool(enable_key);
  r.strategy = read_strategy(in, "reward_model.strategy");
  r.input_tokenizer = in.get_optional_string("reward_model.model.input_tokenizer");
  const std::string path_key = migrated_reward_key(in, "reward_model.model.path", "reward.reward_model.model_path");
  r.path = in.get_optional_string(path_key).value_or("");
  VERL_CHECK(!r.enable || !r.path.empty(), "config", "config key '", path_key,
             "' must name the reward model's folder when ", enable_key, " is true");
  r.micro_batch_size_per_gpu = in.get_optional_int("reward_model.micro_batch_size_per_gpu");
  check_optional_positive(r.micro_batch_size_per_gpu, "reward_model.micro_batch_size_per_gpu");
  r.max_length = in.get_optional_int("reward_model.max_length");
  check_optional_positive(r.max_length, "reward_model.max_length");
  r.use_dynamic_bsz = in.get_bool("reward_model.use_dynamic_bsz");
  r.forward_max_token_len_per_gpu = in.get_int("reward_model.forward_max_token_len_per_gpu");
  r.reward_manager = in.get_choice("reward_model.reward_manager",
                                   {"naive", "dapo", "gdpo", "rate_limited", "remote", "digit_completion"});
  const std::string workers_key = migrated_reward_key(in, "reward_model.num_workers", "reward.num_workers");
  r.num_workers = in.get_int(workers_key);
  check_positive(r.num_workers, workers_key);
  r.reward_kwargs = in.get_node("reward_model.reward_kwargs");
  VERL_CHECK(r.reward_kwargs.is_map(), "config", "config key 'reward_model.reward_kwargs' expects map, got ",
             kind_name(r.reward_kwargs.kind()));
  // verl 0.9.1 reads reward.reward_kwargs, which its migration overwrites with reward_model.reward_kwargs when
  // that is given: either place works, the legacy one winning.
  if (in.contains("reward.reward_kwargs")) {
    const Node kwargs = in.get_node("reward.reward_kwargs");
    VERL_CHECK(kwargs.is_map(), "config", "config key 'reward.reward_kwargs' expects map, got ",
               kind_name(kwargs.kind()));
    if (r.reward_kwargs.fields().empty()) r.reward_kwargs = kwargs;
  }
  // The rate_limited manager's keys, which verl 0.9.1 reads from its reward section with these defaults ('+'
  // adds them).
  RewardRateLimits& limits = r.rate_limits;
  if (in.contains("reward.max_concurrent")) limits.max_concurrent = in.get_int("reward.max_concurrent");
  VERL_CHECK(limits.max_concurrent >= 1, "config", "config key 'reward.max_concurrent' must be >= 1, got ",
             limits.max_concurrent);
  for (const auto& [key, field] :
       {std::pair{"reward.max_rpm", &limits.max_rpm}, std::pair{"reward.max_tpm", &limits.max_tpm}}) {
    if (in.contains(key)) *field = in.get_optional_double(key);
    VERL_CHECK(!field->has_value() || **field > 0, "config", "config key '", key,
               "' must be > 0 (or null: no limit), got ", field->value_or(0));
  }
  if (in.contains("reward.estimated_tokens_per_request")) {
    limits.estimated_tokens_per_request = in.get_int("reward.estimated_tokens_per_request");
  }
  VERL_CHECK(limits.estimated_tokens_per_request >= 0, "config",
             "config key 'reward.estimated_tokens_per_request' must be >= 0, got ",
             limits.estimated_tokens_per_request);
  if (in.contains("reward.timeout")) limits.timeout = in.get_double("reward.timeout");
  VERL_CHECK(limits.timeout > 0, "config", "config key 'reward.timeout' must be > 0 seconds, got ", limits.timeout);
  r.sandbox_fusion = read_sandbox_fusion(in);
  return r;
}

// A threshold verl types `str | float`: a YAML number or string, kept as its text.
std::optional<std::string> read_threshold(ConfigReader& in, const std::string& path) {
  const Node node = in.get_node(path);
  if (node.is_null()) return std::nullopt;
  VERL_CHECK(node.kind() == Kind::String || node.kind() == Kind::Int || node.kind() == Kind::Float, "config",
             "config key '", path, "' expects a number or a string like \"0.5_2.0\", got ", kind_name(node.kind()));
  return node.kind() == Kind::String ? node.as_string() : node.to_text();
}

void read_rollout_correction(ConfigReader& in, RolloutCorrectionConfig& r) {
  const std::string p = "algorithm.rollout_correction";
  r.rollout_is = in.get_optional_string(p + ".rollout_is");
  r.rollout_is_threshold = read_threshold(in, p + ".rollout_is_threshold").value_or("2.0");
  r.rollout_is_batch_normalize = in.get_bool(p + ".rollout_is_batch_normalize");
  r.rollout_rs = in.get_optional_string(p + ".rollout_rs");
  r.rollout_rs_threshold = read_threshold(in, p + ".rollout_rs_threshold");
  r.bypass_mode = in.get_bool(p + ".bypass_mode");
  r.loss_type = in.get_choice(p + ".loss_type", {"ppo_clip", "reinforce"});
  algo::RolloutCorrectionOptions options{r.rollout_is, r.rollout_is_threshold, r.rollout_is_batch_normalize,
                                         r.rollout_rs, r.rollout_rs_threshold};
  algo::validate_rollout_correction(options, p);
}

void read_filter_groups(ConfigReader& in, FilterGroupsConfig& f) {
  const std::string p = "algorithm.filter_groups";
  f.enable = in.get_bool(p + ".enable");
  f.metric = in.get_optional_string(p + ".metric").value_or("");
  VERL_CHECK(!f.enable || !f.metric.empty(), "config", "config key '", p,
             ".metric' must be set with filter_groups.enable=true (reward, seq_reward, seq_final_reward, or a "
             "reward extra-info key such as acc or score)");
  f.max_num_gen_batches = in.get_int(p + ".max_num_gen_batches");
  f.max_inflight_gen_batches = in.get_int(p + ".max_inflight_gen_batches");
  check_positive(f.max_inflight_gen_batches, p + ".max_inflight_gen_batches");

}

AlgorithmConfig read_algorithm(ConfigReader& in) {
  AlgorithmConfig a;
  a.gamma = in.get_double("algorithm.gamma");
  a.lam = in.get_double("algorithm.lam");
  a.adv_estimator = in.get_choice("algorithm.adv_estimator", supported_adv_estimators());
  a.norm_adv_by_std_in_grpo = in.get_bool("algorithm.norm_adv_by_std_in_grpo");
  if (!in.get_node("algorithm.gdpo_reward_keys").is_null()) {
    a.gdpo_reward_keys = in.get_string_list("algorithm.gdpo_reward_keys");
  }
  if (!in.get_node("algorithm.gdpo_reward_weights").is_null()) {
    a.gdpo_reward_weights = in.get_double_list("algorithm.gdpo_reward_weights");
  }
  VERL_CHECK(a.adv_estimator != "gdpo" || !a.gdpo_reward_keys.empty(), "config",
             "algorithm.adv_estimator=gdpo needs algorithm.gdpo_reward_keys: the keys of the reward function's "
             "extra info holding each reward component (e.g. [format_reward, accuracy_reward])");
  VERL_CHECK(a.gdpo_reward_weights.empty() || a.gdpo_reward_weights.size() == a.gdpo_reward_keys.size(), "config",
             "algorithm.gdpo_reward_weights has ", a.gdpo_reward_weights.size(), " entries for ",
             a.gdpo_reward_keys.size(), " algorithm.gdpo_reward_keys");
  a.use_kl_in_reward = in.get_bool("algorithm.use_kl_in_reward");
  a.kl_penalty = in.get_choice("algorithm.kl_penalty", supported_kl_penalties());
  a.kl_ctrl.type = in.get_choice("algorithm.kl_ctrl.type", {"fixed", "adaptive"});
  a.kl_ctrl.kl_coef = in.get_double("algorithm.kl_ctrl.kl_coef");
  a.kl_ctrl.horizon = in.get_int("algorithm.kl_ctrl.horizon");
  check_positive(a.kl_ctrl.horizon, "algorithm.kl_ctrl.horizon");
  a.kl_ctrl.target_kl = in.get_double("algorithm.kl_ctrl.target_kl");
  read_rollout_correction(in, a.rollout_correction);
  read_filter_groups(in, a.filter_groups);
  a.use_pf_ppo = in.get_bool("algorithm.use_pf_ppo");
  a.pf_ppo.reweight_method = in.get_choice("algorithm.pf_ppo.reweight_method", algo::pf_ppo_reweight_method_names());
  a.pf_ppo.weight_pow = in.get_double("algorithm.pf_ppo.weight_pow");
  return a;
}

TrainerConfig read_trainer(ConfigReader& in) {
  TrainerConfig t;
  t.balance_batch = in.get_bool("trainer.balance_batch");
  t.total_epochs = in.get_int("trainer.total_epochs");
  check_positive(t.total_epochs, "trainer.total_epochs");
  t.total_training_steps = in.get_optional_int("trainer.total_training_steps");
  check_optional_positive(t.total_training_steps, "trainer.total_training_steps");
  t.project_name = in.get_string("trainer.project_name");
  t.experiment_name = in.get_string("trainer.experiment_name");
  t.logger = in.get_string_list("trainer.logger");
  check_members(t.logger, supported_logger_backends(), "trainer.logger");
  t.log_val_generations = in.get_int("trainer.log_val_generations");
  t.rollout_data_dir = in.get_optional_string("trainer.rollout_data_dir");
  t.validation_data_dir = in.get_optional_string("trainer.validation_data_dir");
  t.nnodes = in.get_int("trainer.nnodes");
  check_positive(t.nnodes, "trainer.nnodes");
  t.n_gpus_per_node = in.get_int("trainer.n_gpus_per_node");
  check_positive(t.n_gpus_per_node, "trainer.n_gpus_per_node");
  t.split_placement = in.get_bool("trainer.split_placement");
  t.save_freq = in.get_int("trainer.save_freq");
  t.resume_mode = in.get_choice("trainer.resume_mode", {"auto", "disable", "resume_path"});
  t.resume_from_path = in.get_optional_string("trainer.resume_from_path");
  t.val_before_train = in.get_bool("trainer.val_before_train");
  t.val_only = in.get_bool("trainer.val_only");
  t.test_freq = in.get_int("trainer.test_freq");
  t.critic_warmup = in.get_int("trainer.critic_warmup");
  t.default_local_dir = in.get_string("trainer.default_local_dir");
  t.del_local_ckpt_after_load = in.get_bool("trainer.del_local_ckpt_after_load");
  t.max_actor_ckpt_to_keep = in.get_optional_int("trainer.max_actor_ckpt_to_keep");
  check_optional_positive(t.max_actor_ckpt_to_keep, "trainer.max_actor_ckpt_to_keep");
  t.max_critic_ckpt_to_keep = in.get_optional_int("trainer.max_critic_ckpt_to_keep");
  check_optional_positive(t.max_critic_ckpt_to_keep, "trainer.max_critic_ckpt_to_keep");
  t.device = in.get_choice("trainer.device", {"cuda", "cpu"});
  t.num_cpu_threads = in.get_optional_int("trainer.num_cpu_threads");
  check_optional_positive(t.num_cpu_threads, "trainer.num_cpu_threads");
  t.worker_call_timeout = in.get_double("trainer.worker_call_timeout");
  VERL_CHECK(std::isfinite(t.worker_call_timeout) && t.worker_call_timeout >= 0, "config",
             "trainer.worker_call_timeout must be a number of seconds >= 0 (0: no limit), got ",
             t.worker_call_timeout);
  t.checkpoint_callback_class = in.get_optional_string("trainer.checkpoint_callback_class").value_or("");
  const std::string& callback = t.checkpoint_callback_class;
  VERL_CHECK(callback.empty() ||
                 (callback.find('.') != std::string::npos && callback.front() != '.' && callback.back() != '.'),
             "config",
             "trainer.checkpoint_callback_class must be a fully qualified class name (module.ClassName), got '",
             callback, "'");
  t.checkpoint_callback_timeout = in.get_double("trainer.checkpoint_callback_timeout");
  VERL_CHECK(std::isfinite(t.checkpoint_callback_timeout) && t.checkpoint_callback_timeout >= 0, "config",
             "trainer.checkpoint_callback_timeout must be a number of seconds >= 0 (0: no limit), got ",
             t.checkpoint_callback_timeout);
  return t;
}

// verl 0.9.1's deprecated global micro-batch sizes. verl 0.9.1 no longer converts them into the per-GPU keys (its
// fsdp_workers.py, which divided them by the data-parallel size, is gone; engine_workers.py reads only the
// *_per_gpu keys and asserts they are set), so the same settings fail here as they fail there, with verl's messages.
struct DeprecatedMicroBatchKeys {
  std::optional<int64_t> actor_ppo;       // actor_rollout_ref.actor.ppo_micro_batch_size
  std::optional<int64_t> rollout_log_prob;  // actor_rollout_ref.rollout.log_prob_micro_batch_size
  std::optional<int64_t> ref_log_prob;    // actor_rollout_ref.ref.log_prob_micro_batch_size
  std::optional<int64_t> critic_ppo;      // critic.ppo_micro_batch_size
  std::optional<int64_t> critic_forward;  // critic.forward_micro_batch_size
};

DeprecatedMicroBatchKeys read_deprecated_micro_batch_keys(ConfigReader& in) {
  DeprecatedMicroBatchKeys k;
  k.actor_ppo = in.get_optional_int("actor_rollout_ref.actor.ppo_micro_batch_size");
  check_optional_positive(k.actor_ppo, "actor_rollout_ref.actor.ppo_micro_batch_size");
  k.rollout_log_prob = in.get_optional_int("actor_rollout_ref.rollout.log_prob_micro_batch_size");
  check_optional_positive(k.rollout_log_prob, "actor_rollout_ref.rollout.log_prob_micro_batch_size");
  k.ref_log_prob = in.get_optional_int("actor_rollout_ref.ref.log_prob_micro_batch_size");
  check_optional_positive(k.ref_log_prob, "actor_rollout_ref.ref.log_prob_micro_batch_size");
  k.critic_ppo = in.get_optional_int("critic.ppo_micro_batch_size");
  check_optional_positive(k.critic_ppo, "critic.ppo_micro_batch_size");
  k.critic_forward = in.get_optional_int("critic.forward_micro_batch_size");
  check_optional_positive(k.critic_forward, "critic.forward_micro_batch_size");
  return k;
}

// verl's message when both the deprecated key and its *_per_gpu key are set ("name" and "param" as verl spells them).
std::string both_set_message(const std::string& name, const std::string& param) {
  return "[" + name + "] You have set both '" + name + "." + param + "' AND '" + name + "." + param +
         "_per_gpu'. Please remove '" + name + "." + param + "' because only '*_" + param +
         "_per_gpu' is supported (the former is deprecated).";
}

// The deprecated key alone: verl 0.9.1 accepts it in config validation, then its worker stops on the missing per-GPU
// size; here that is one line naming the key and its replacement.
[[noreturn]] void fail_unconverted(const std::string& key, int64_t value) {
  VERL_FAIL("config", key, "=", value, " is deprecated and verl 0.9.1 does not convert it to a per-GPU size (its ",
            "worker requires ", key, "_per_gpu): set ", key, "_per_gpu instead");
}

void warn_no_effect(const std::string& key, int64_t value, const std::string& why) {
  VERL_LOG(Warn, "config") << key << "=" << value << " is deprecated and has no effect (" << why << ")";
}

void apply_deprecated_micro_batch_keys(const DeprecatedMicroBatchKeys& k, const PPOConfig& c) {
  const ActorConfig& actor = c.actor_rollout_ref.actor;
  const int64_t n_gpus = c.trainer.nnodes * c.trainer.n_gpus_per_node;
  const std::string a = "actor_rollout_ref.actor.ppo_micro_batch_size";
  if (k.actor_ppo) {
    if (actor.use_dynamic_bsz) {
      warn_no_effect(a, *k.actor_ppo, "use_dynamic_bsz=true");
    } else {
      // verl's ActorConfig.__post_init__, then ActorConfig.validate.
      VERL_CHECK(!actor.ppo_micro_batch_size_per_gpu, "config", a, ": [actor] You have set both ",
                 "'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'. Please remove ",
                 "'actor.ppo_micro_batch_size' because only '*_ppo_micro_batch_size_per_gpu' is supported (the former ",
                 "is deprecated).");
      VERL_CHECK(actor.ppo_mini_batch_size % *k.actor_ppo == 0, "config", a, ": ppo_mini_batch_size (",
                 actor.ppo_mini_batch_size, ") must be divisible by ppo_micro_batch_size (", *k.actor_ppo, ")");
      const int64_t sp = actor.ulysses_sequence_parallel_size;
      VERL_CHECK(*k.actor_ppo * sp >= n_gpus, "config", a, ": ppo_micro_batch_size (", *k.actor_ppo,
                 ") * ulysses_sequence_parallel_size (", sp, ") must be >= n_gpus (", n_gpus, ")");
      fail_unconverted(a, *k.actor_ppo);
    }
  }
  // verl's check_mutually_exclusive runs for the rollout always and for the reference policy when one is used, both
  // only without dynamic batch sizes (the actor's use_dynamic_bsz).
  const bool use_ref = c.algorithm.use_kl_in_reward || actor.use_kl_loss;
  const std::string r = "actor_rollout_ref.rollout.log_prob_micro_batch_size";
  if (k.rollout_log_prob) {
    if (actor.use_dynamic_bsz) {
      warn_no_effect(r, *k.rollout_log_prob, "use_dynamic_bsz=true");
    } else {
      VERL_CHECK(!c.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu, "config", r, ": ",
                 both_set_message("actor_rollout_ref.rollout", "log_prob_micro_batch_size"));
      fail_unconverted(r, *k.rollout_log_prob);
    }
  }
  const std::string f = "actor_rollout_ref.ref.log_prob_micro_batch_size";
  if (k.ref_log_prob) {
    if (actor.use_dynamic_bsz || !use_ref) {
      warn_no_effect(f, *k.ref_log_prob, actor.use_dynamic_bsz ? "use_dynamic_bsz=true" : "no reference policy");
    } else {
      VERL_CHECK(!c.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu, "config", f, ": ",
                 both_set_message("actor_rollout_ref.ref", "log_prob_micro_batch_size"));
      fail_unconverted(f, *k.ref_log_prob);
    }
  }
  // verl's critic.ppo_micro_batch_size_per_gpu defaults to ${.ppo_micro_batch_size}, so setting the deprecated key
  // sets both, and CriticConfig.__post_init__ rejects that whenever the critic is built without dynamic batch sizes.
  const bool use_critic = c.critic.enable ? *c.critic.enable : c.algorithm.adv_estimator == "gae";
  const std::string cp = "critic.ppo_micro_batch_size";
  if (k.critic_ppo) {
    if (!use_critic || c.critic.use_dynamic_bsz) {
      warn_no_effect(cp, *k.critic_ppo, use_critic ? "use_dynamic_bsz=true" : "no critic");
    } else {
      VERL_FAIL("config", cp, ": ", both_set_message("critic", "micro_batch_size"));
    }
  }
  // critic.forward_micro_batch_size follows ppo_micro_batch_size by default and verl 0.9.1 reads it nowhere.
  if (k.critic_forward && k.critic_forward != k.critic_ppo)
    warn_no_effect("critic.forward_micro_batch_size", *k.critic_forward, "verl 0.9.1 reads it nowhere");
}

// verl's RolloutSkipConfig: its checks (steps are ints; cache or repeat).
RolloutSkipConfig read_rollout_skip(ConfigReader& in, const std::string& p) {
  RolloutSkipConfig r;
  r.enable = in.get_bool(p + ".enable");
  r.dump_dir = in.get_string(p + ".dump_dir");
  const Node steps = in.get_node(p + ".steps");
  VERL_CHECK(steps.is_list(), "config", "config key '", p, ".steps' expects a list of global steps, got ",
             steps.to_text());
  for (const Node& step : steps.items()) {
    VERL_CHECK(step.kind() == Kind::Int && step.as_int() >= 1, "config", "config key '", p,
               ".steps' expects global steps (integers >= 1), got ", step.to_text());
    r.steps.push_back(step.as_int());
  }
  r.action = in.get_choice(p + ".action", {"cache", "repeat"});
  return r;
}

}  // namespace

PPOConfig parse_ppo_config(const Node& resolved) {
  ConfigReader in(resolved);
  PPOConfig c;
  c.data = read_data(in);
  c.actor_rollout_ref = read_actor_rollout_ref(in);
  c.critic = read_critic(in);
  c.reward_model = read_reward_model(in);
  // reward_model.model.input_tokenizer and critic.model.tokenizer_path default to the actor's model path; verl
  // 0.9.1 reads the actor's tokenizer_path first, so a tokenizer apart from the weights serves there too.
  const auto& actor_model = c.actor_rollout_ref.model;
  if (c.reward_model.input_tokenizer == actor_model.path) c.reward_model.input_tokenizer = actor_model.tokenizer_dir();
  if (c.critic.model.tokenizer_path == actor_model.path) c.critic.model.tokenizer_path = actor_model.tokenizer_dir();
  c.custom_reward_function.path = in.get_optional_string("custom_reward_function.path");
  c.custom_reward_function.name = in.get_string("custom_reward_function.name");
  c.custom_reward_function.reward_kwargs = in.get_node("custom_reward_function.reward_kwargs");
  VERL_CHECK(c.custom_reward_function.reward_kwargs.is_map(), "config",
             "config key 'custom_reward_function.reward_kwargs' expects map, got ",
             kind_name(c.custom_reward_function.reward_kwargs.kind()));
  c.custom_reward_function.on_error = in.get_choice("custom_reward_function.on_error", {"raise", "zero"});
  c.custom_reward_function.timeout = in.get_double("custom_reward_function.timeout");
  VERL_CHECK(std::isfinite(c.custom_reward_function.timeout) && c.custom_reward_function.timeout >= 0, "config",
             "custom_reward_function.timeout must be a number of seconds >= 0 (0: no limit), got ",
             c.custom_reward_function.timeout);
  c.algorithm = read_algorithm(in);
  c.trainer = read_trainer(in);
  c.rollout.nnodes = in.get_int("rollout.nnodes");
  check_positive(c.rollout.nnodes, "rollout.nnodes");
  c.rollout.n_gpus_per_node = in.get_int("rollout.n_gpus_per_node");
  check_positive(c.rollout.n_gpus_per_node, "rollout.n_gpus_per_node");
  c.skip_rollout = read_rollout_skip(in, "skip.rollout");
  const RolloutConfig& rollout = c.actor_rollout_ref.rollout;
  c.distillation = read_distillation(in, resolved, rollout.prompt_length, rollout.response_length);
  if (c.distillation.enabled) c.actor_rollout_ref.actor.distillation = c.distillation.loss;
  const DeprecatedMicroBatchKeys deprecated_micro_batch = read_deprecated_micro_batch_keys(in);
  static const Node defaults = default_config_tree();
  const std::vector<std::string> no_effect = accept_verl_keys(in, resolved, defaults);
  in.check_all_read();
  if (!no_effect.empty()) {
    VERL_LOG(Warn, "config") << "no effect in verl.cpp (settings of engines it does not run, docs/config.md): "
                             << join(no_effect, ", ");
  }
  apply_deprecated_micro_batch_keys(deprecated_micro_batch, c);

  // verl's apply_bypass_mode: the rollout's log-probs are the old ones and the actor's loss is bypass_mode, which
  // reads the rollout correction (verl passes it in policy_loss.rollout_correction).
  if (c.algorithm.rollout_correction.bypass_mode) {
    ActorConfig& actor = c.actor_rollout_ref.actor;
    VERL_CHECK(contains(supported_policy_loss_modes(), std::string("bypass_mode")), "config",
               "algorithm.rollout_correction.bypass_mode=true needs the bypass_mode policy loss, which this build does "
               "not register (registered: ", join(supported_policy_loss_modes(), ", "), ")");
    actor.policy_loss_mode = "bypass_mode";
    actor.rollout_correction = c.algorithm.rollout_correction;
  }

  const bool token_baseline = c.algorithm.adv_estimator == "optimal_token_baseline" ||
                              c.algorithm.adv_estimator == "tir_optimal_token_baseline";
  VERL_CHECK(!token_baseline || c.actor_rollout_ref.actor.calculate_sum_pi_squared, "config",
             "algorithm.adv_estimator=", c.algorithm.adv_estimator, " needs sum_pi_squared from the actor: set "
             "actor_rollout_ref.actor.calculate_sum_pi_squared=true");
  VERL_CHECK(c.trainer.resume_mode != "resume_path" || c.trainer.resume_from_path.has_value(), "config",
             "trainer.resume_mode=resume_path needs trainer.resume_from_path (a global_step_N folder)");
  return c;
}

}  // namespace verl::config
