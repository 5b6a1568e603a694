#include "verl/config/sft_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/config_reader.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/ppo_config.h"
#include "verl/config/yaml_io.h"

extern const char verl_embedded_sft_trainer_yaml[];  // generated from configs/sft_trainer.yaml

namespace verl::config {

namespace {

std::vector<std::string> read_files(ConfigReader& in, const std::string& path) {
  Node node = in.get_node(path);
  std::vector<std::string> files;
  if (node.kind() == Kind::String) {
    files.push_back(expand_user_path(node.as_string()));
  } else if (node.is_list()) {
    for (const auto& item : node.items()) {
      VERL_CHECK(item.kind() == Kind::String, "config", "config key '", path, "' expects file paths, got ",
                 item.to_text());
      files.push_back(expand_user_path(item.as_string()));
    }
  }
  VERL_CHECK(!files.empty(), "config", "config key '", path, "' expects a file path or a non-empty list of paths");
  return files;
}

std::vector<std::string> read_optional_list(ConfigReader& in, const std::string& path) {
  Node node = in.get_node(path);
  if (node.is_null()) return {};
  VERL_CHECK(node.is_list(), "config", "config key '", path, "' expects null or a list of keys");
  std::vector<std::string> out;
  for (const auto& item : node.items()) {
    VERL_CHECK(item.kind() == Kind::String, "config", "config key '", path, "' expects strings, got ", item.to_text());
    out.push_back(item.as_string());
  }
  return out;
}

void check_positive(int64_t value, const std::string& path) {
  VERL_CHECK(value > 0, "config", "config key '", path, "' must be > 0, got ", value);
}

}  // namespace

std::string expand_user_path(const std::string& path) {
  if (path == "~" || starts_with(path, "~/")) {
    const char* home = std::getenv("HOME");
    VERL_CHECK(home != nullptr && *home != '\0', "config", "cannot expand '", path, "': $HOME is not set");
    return std::string(home) + path.substr(1);
  }
  return path;
}

Node default_sft_config_tree() {
  return parse_yaml(verl_embedded_sft_trainer_yaml, "configs/sft_trainer.yaml (built in)");
}

SFTConfig parse_sft_config(const Node& resolved) {
  ConfigReader in(resolved);
  SFTConfig c;
  SFTDataConfig& d = c.data;
  d.train_batch_size = in.get_int("data.train_batch_size");
  check_positive(d.train_batch_size, "data.train_batch_size");
  d.micro_batch_size_per_gpu = in.get_int("data.micro_batch_size_per_gpu");
  check_positive(d.micro_batch_size_per_gpu, "data.micro_batch_size_per_gpu");
  VERL_CHECK(d.train_batch_size % d.micro_batch_size_per_gpu == 0, "config", "data.train_batch_size (",
             d.train_batch_size, ") must be divisible by data.micro_batch_size_per_gpu (", d.micro_batch_size_per_gpu,
             ")");
  d.train_files = read_files(in, "data.train_files");
  d.val_files = read_files(in, "data.val_files");
  d.prompt_key = in.get_string("data.prompt_key");
  d.response_key = in.get_string("data.response_key");
  d.prompt_dict_keys = read_optional_list(in, "data.prompt_dict_keys");
  d.response_dict_keys = read_optional_list(in, "data.response_dict_keys");
  d.max_length = in.get_int("data.max_length");
  VERL_CHECK(d.max_length >= 2, "config", "config key 'data.max_length' must be >= 2, got ", d.max_length);
  d.truncation = in.get_choice("data.truncation", {"error", "left", "right"});
  d.train_max_samples = in.get_int("data.train_max_samples");
  d.val_max_samples = in.get_int("data.val_max_samples");
  d.chat_template_timeout = in.get_double("data.chat_template_timeout");
  VERL_CHECK(std::isfinite(d.chat_template_timeout) && d.chat_template_timeout >= 0, "config",
             "data.chat_template_timeout must be a number of seconds >= 0 (0: no limit), got ",
             d.chat_template_timeout);

  c.partial_pretrain = expand_user_path(in.get_string("model.partial_pretrain"));
  c.lora = read_lora_config(in, "model", /*with_adapter_path=*/false);
  c.enable_gradient_checkpointing = in.get_bool("model.enable_gradient_checkpointing");
  c.use_remove_padding = in.get_bool("use_remove_padding");
  const int64_t sp = in.get_int("ulysses_sequence_parallel_size");
  VERL_CHECK(sp == 1, "config", "config key 'ulysses_sequence_parallel_size' must be 1, got ", sp,
             ": verl sft trains in one process, so there is no group to split sequences over");

  SFTOptimConfig& o = c.optim;
  o.lr = in.get_double("optim.lr");
  VERL_CHECK(o.lr >= 0, "config", "config key 'optim.lr' must be >= 0, got ", o.lr);
  o.betas = in.get_double_list("optim.betas");
  VERL_CHECK(o.betas.size() == 2 && o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, "config",
             "config key 'optim.betas' expects two numbers in [0, 1)");
  o.weight_decay = in.get_double("optim.weight_decay");
  o.warmup_steps_ratio = in.get_double("optim.warmup_steps_ratio");
  VERL_CHECK(o.warmup_steps_ratio >= 0 && o.warmup_steps_ratio <= 1, "config",
             "config key 'optim.warmup_steps_ratio' must be in [0, 1], got ", o.warmup_steps_ratio);
  o.clip_grad = in.get_double("optim.clip_grad");
  VERL_CHECK(o.clip_grad > 0, "config", "config key 'optim.clip_grad' must be > 0, got ", o.clip_grad);
  o.lr_scheduler = in.get_choice("optim.lr_scheduler", {"cosine", "constant"});

  SFTTrainerSection& t = c.trainer;
  t.default_local_dir = expand_user_path(in.get_string("trainer.default_local_dir"));
  t.project_name = in.get_string("trainer.project_name");
  t.experiment_name = in.get_string("trainer.experiment_name");
  t.total_epochs = in.get_int("trainer.total_epochs");
  check_positive(t.total_epochs, "trainer.total_epochs");
  t.total_training_steps = in.get_optional_int("trainer.total_training_steps");
  if (t.total_training_steps) check_positive(*t.total_training_steps, "trainer.total_training_steps");
  t.logger = in.get_string_list("trainer.logger");
  for (const auto& name : t.logger) {
    const auto& valid = supported_logger_backends();
    VERL_CHECK(std::find(valid.begin(), valid.end(), name) != valid.end(), "config", "config key 'trainer.logger' contains '",
               name, "'; expected items from: ", join(valid, ", "));
  }
  t.seed = in.get_int("trainer.seed");
  t.save_freq = in.get_int("trainer.save_freq");
  t.test_freq = in.get_int("trainer.test_freq");
  t.max_ckpt_to_keep = in.get_optional_int("trainer.max_ckpt_to_keep");
  t.num_cpu_threads = in.get_optional_int("trainer.num_cpu_threads");
  if (t.num_cpu_threads) check_positive(*t.num_cpu_threads, "trainer.num_cpu_threads");
  t.resume_mode = in.get_choice("trainer.resume_mode", {"auto", "disable", "resume_path"});
  t.resume_from_path = in.get_optional_string("trainer.resume_from_path");
  if (t.resume_from_path) t.resume_from_path = expand_user_path(*t.resume_from_path);
  VERL_CHECK(t.resume_mode != "resume_path" || t.resume_from_path.has_value(), "config",
             "trainer.resume_mode=resume_path needs trainer.resume_from_path (a global_step_N folder)");
  in.check_all_read();
  return c;
}

LoadedSFTConfig load_sft_config(const ConfigArgs& args) {
  Node root = default_sft_config_tree();
  VERL_CHECK(!args.config_name && !args.config_path, "config",
             "--config-path / --config-name compose PPO configs; verl sft takes --config FILE");
  if (args.config_file) merge_config_file(root, load_yaml_file(*args.config_file), *args.config_file);
  for (const auto& text : args.overrides) apply_override(root, parse_override(text));
  LoadedSFTConfig loaded;
  loaded.resolved = resolve_interpolations(root);
  loaded.sft = parse_sft_config(loaded.resolved);
  return loaded;
}

}  // namespace verl::config
