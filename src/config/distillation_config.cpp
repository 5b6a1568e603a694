// distillation.* (verl 0.9.1's DistillationConfig): read and checked as verl's dataclasses check them when
// distillation.enabled is true. The teachers' placement keys (n_gpus_per_node, nnodes, num_replicas, inference.*)
// are config/verl_key_rules.cpp's: verl.cpp runs each teacher on the actor's ranks.
#include <algorithm>
#include <cmath>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/config_reader.h"
#include "verl/config/section_readers.h"

namespace verl::config {

namespace {

// verl's DISTILLATION_LOSS_REGISTRY: the single-sample estimators, then the top-k loss.
const std::vector<std::string>& distillation_loss_modes() {
  static const std::vector<std::string> modes = {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "forward_kl_topk"};
  return modes;
}

DistillationLossConfig read_distillation_loss(ConfigReader& in) {
  const std::string p = "distillation.distillation_loss";
  DistillationLossConfig l;
  l.loss_mode = in.get_string(p + ".loss_mode");
  l.use_task_rewards = in.get_bool(p + ".use_task_rewards");
  l.distillation_loss_coef = in.get_double(p + ".distillation_loss_coef");
  l.loss_max_clamp = in.get_optional_double(p + ".loss_max_clamp");
  l.topk = in.get_optional_int(p + ".topk").value_or(0);
  l.log_prob_min_clamp = in.get_optional_double(p + ".log_prob_min_clamp");
  l.use_policy_gradient = in.get_bool(p + ".use_policy_gradient");
  l.policy_loss_mode = in.get_string(p + ".policy_loss_mode");
  l.clip_ratio = in.get_double(p + ".clip_ratio");
  l.clip_ratio_low = in.get_double(p + ".clip_ratio_low");
  l.clip_ratio_high = in.get_double(p + ".clip_ratio_high");
  return l;
}

void check_distillation_loss(const DistillationLossConfig& l) {
  const std::string p = "distillation.distillation_loss";
  VERL_CHECK(contains(distillation_loss_modes(), l.loss_mode), "config", p, ".loss_mode '", l.loss_mode,
             "' is not one of verl's distillation losses: ", join(distillation_loss_modes(), ", "));
  VERL_CHECK(l.loss_mode != "forward_kl_topk" || l.topk > 0, "config", p,
             ".topk must be a positive number of tokens with loss_mode 'forward_kl_topk', got ", l.topk);
  VERL_CHECK(!l.log_prob_min_clamp || std::isfinite(*l.log_prob_min_clamp), "config", p,
             ".log_prob_min_clamp must be a finite number or null");
  VERL_CHECK(l.policy_loss_mode == "vanilla", "config", p,
             ".policy_loss_mode must be 'vanilla' (verl supports only the vanilla policy loss for distillation), got '",
             l.policy_loss_mode, "'");
  // verl refuses k1 as a supervised loss: its gradient does not depend on the teacher. kl is k1 under another name.
  VERL_CHECK(l.use_policy_gradient || (l.loss_mode != "k1" && l.loss_mode != "kl"), "config", p, ".loss_mode '",
             l.loss_mode, "' needs ", p,
             ".use_policy_gradient=true: back-propagated directly, its gradient does not depend on the teacher's "
             "log-probs (supervised losses: k3 / low_var_kl, k2 / mse, abs)");
  VERL_CHECK(std::isfinite(l.distillation_loss_coef), "config", p, ".distillation_loss_coef must be a finite number");
  VERL_CHECK(!l.loss_max_clamp || *l.loss_max_clamp > 0, "config", p, ".loss_max_clamp must be > 0 or null, got ",
             l.loss_max_clamp.value_or(0));
  for (const auto& [name, value] : {std::pair<const char*, double>{"clip_ratio", l.clip_ratio},
                                    {"clip_ratio_low", l.clip_ratio_low},
                                    {"clip_ratio_high", l.clip_ratio_high}}) {
    VERL_CHECK(std::isfinite(value) && value >= 0, "config", p, ".", name, " must be >= 0, got ", value);
  }
}

}  // namespace

DistillationConfig read_distillation(ConfigReader& in, const Node& resolved, int64_t prompt_length,
                                     int64_t response_length) {
  DistillationConfig d;
  d.enabled = in.get_bool("distillation.enabled");
  d.teacher_key = in.get_string("distillation.teacher_key");
  d.loss = read_distillation_loss(in);
  const Node* teachers = find_path(resolved, "distillation.teacher_models");
  VERL_CHECK(teachers != nullptr && teachers->is_map(), "config",
             "distillation.teacher_models must be a map of teacher entries");
  for (const auto& [entry, node] : teachers->fields()) {
    const std::string p = "distillation.teacher_models." + entry;
    VERL_CHECK(node.is_map(), "config", p, " must be a map (key, model_path, inference, ...), got ",
               kind_name(node.kind()));
    DistillationTeacherConfig t;
    t.entry = entry;
    t.key = in.contains(p + ".key") ? in.get_optional_string(p + ".key").value_or("") : "";
    t.model_path = in.contains(p + ".model_path") ? in.get_optional_string(p + ".model_path").value_or("") : "";
    // An entry added with '+' may leave inference out: verl's RolloutConfig defaults then.
    const auto optional_int = [&](const std::string& key) -> std::optional<int64_t> {
      return in.contains(key) ? in.get_optional_int(key) : std::nullopt;
    };
    t.max_num_batched_tokens = optional_int(p + ".inference.max_num_batched_tokens").value_or(8192);
    const std::optional<int64_t> max_model_len = optional_int(p + ".inference.max_model_len");
    if (d.enabled) {
      VERL_CHECK(t.max_num_batched_tokens > 0, "config", p, ".inference.max_num_batched_tokens must be > 0, got ",
                 t.max_num_batched_tokens);
      // verl's validate_and_prepare_for_distillation: the prompt, the whole response and one generated token.
      VERL_CHECK(!max_model_len || prompt_length + response_length + 1 <= *max_model_len, "config", p,
                 ".inference.max_model_len=", max_model_len.value_or(0), " leaves no room for the student's prompt (",
                 prompt_length, ") + response (", response_length, ") + 1 token");
    }
    d.teachers.push_back(std::move(t));
  }
  if (!d.enabled) return d;

  check_distillation_loss(d.loss);
  // verl's _resolve_teacher_models: the default entry alone routes every row (key "default"); with others it is
  // dropped and each entry names its routing key.
  auto default_entry = std::find_if(d.teachers.begin(), d.teachers.end(),
                                    [](const DistillationTeacherConfig& t) { return t.entry == "teacher_model"; });
  VERL_CHECK(default_entry != d.teachers.end(), "config",
             "distillation.teacher_models must hold the entry 'teacher_model' (verl's default)");
  if (d.teachers.size() == 1) {
    d.teachers[0].key = "default";
  } else {
    d.teachers.erase(default_entry);
  }
  std::vector<std::string> keys;
  for (const DistillationTeacherConfig& t : d.teachers) {
    const std::string p = "distillation.teacher_models." + t.entry;
    VERL_CHECK(!t.model_path.empty(), "config", p, ".model_path must be set (the teacher's HF model folder)",
               d.teachers.size() > 1 ? "; with several teachers the entry 'teacher_model' is dropped, as in verl" : "");
    VERL_CHECK(!t.key.empty(), "config", p, ".key must be set: the ", d.teacher_key,
               " value whose rows this teacher scores");
    VERL_CHECK(!contains(keys, t.key), "config", "two teachers have the key '", t.key, "' (", p, ".key)");
    keys.push_back(t.key);
  }
  return d;
}

}  // namespace verl::config
