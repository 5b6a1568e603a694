#include "verl/config/sft_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/strings.h"
#include "verl/config/config_reader.h"
#include "verl/config/interpolation.h"
#include "verl/config/node_json.h"
#include "verl/config/overrides.h"
#include "verl/config/ppo_config.h"
#include "verl/config/section_readers.h"
#include "verl/config/verl_key_rules.h"
#include "verl/config/yaml_io.h"

extern const char verl_embedded_sft_trainer_yaml[];         // generated from configs/sft_trainer.yaml
extern const char verl_embedded_sft_trainer_engine_yaml[];  // generated from configs/sft_trainer_engine.yaml

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

// save_freq / test_freq: steps (<= 0: never), or verl sft_trainer's "after_each_epoch" when `epoch_word`.
int64_t read_freq(ConfigReader& in, const std::string& path, bool epoch_word) {
  const Node node = in.get_node(path);
  if (epoch_word && node.kind() == Kind::String && node.as_string() == "after_each_epoch") {
    return SFTTrainerSection::kAfterEachEpoch;
  }
  VERL_CHECK(node.kind() == Kind::Int, "config", "config key '", path, "' expects a number of steps",
             epoch_word ? " or after_each_epoch" : "", ", got ", node.to_text());
  return node.as_int();
}

// The trainer section both layouts share.
SFTTrainerSection read_trainer_section(ConfigReader& in, bool epoch_word) {
  SFTTrainerSection t;
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
    VERL_CHECK(std::find(valid.begin(), valid.end(), name) != valid.end(), "config",
               "config key 'trainer.logger' contains '", name, "'; expected items from: ", join(valid, ", "));
  }
  t.seed = in.get_int("trainer.seed");
  t.save_freq = read_freq(in, "trainer.save_freq", epoch_word);
  t.test_freq = read_freq(in, "trainer.test_freq", epoch_word);
  t.max_ckpt_to_keep = in.get_optional_int("trainer.max_ckpt_to_keep");
  t.num_cpu_threads = in.get_optional_int("trainer.num_cpu_threads");
  if (t.num_cpu_threads) check_positive(*t.num_cpu_threads, "trainer.num_cpu_threads");
  t.resume_mode = in.get_choice("trainer.resume_mode", {"auto", "disable", "resume_path"});
  t.resume_from_path = in.get_optional_string("trainer.resume_from_path");
  if (t.resume_from_path) t.resume_from_path = expand_user_path(*t.resume_from_path);
  VERL_CHECK(t.resume_mode != "resume_path" || t.resume_from_path.has_value(), "config",
             "trainer.resume_mode=resume_path needs trainer.resume_from_path (a global_step_N folder)");
  return t;
}

double read_template_timeout(ConfigReader& in) {
  const double timeout = in.get_double("data.chat_template_timeout");
  VERL_CHECK(std::isfinite(timeout) && timeout >= 0, "config",
             "data.chat_template_timeout must be a number of seconds >= 0 (0: no limit), got ", timeout);
  return timeout;
}

nlohmann::ordered_json read_template_kwargs(ConfigReader& in) {
  const Node kwargs = in.get_node("data.apply_chat_template_kwargs");
  VERL_CHECK(kwargs.is_map(), "config", "config key 'data.apply_chat_template_kwargs' expects a map, got ",
             kind_name(kwargs.kind()));
  return node_to_json(kwargs);
}

// verl's `bool(value)` of a config value that is not null (Python truthiness), nullopt for null.
std::optional<bool> python_truthiness(const Node& node, const std::string& path) {
  switch (node.kind()) {
    case Kind::Null:
      return std::nullopt;
    case Kind::Bool:
      return node.as_bool();
    case Kind::Int:
    case Kind::Float:
      return node.as_double() != 0;
    case Kind::String:
      return !node.as_string().empty();
    default:
      VERL_FAIL("config", "config key '", path, "' expects null, a bool, a number or a string, got ",
                kind_name(node.kind()));
  }
}

// Hydra's choice of a config group (`engine=fsdp optim=fsdp`, as verl's SFT scripts write): the sft_trainer layout's
// groups are model/hf_model, engine/fsdp, optim/fsdp and profiler/profiler; choosing those is a no-op, another an
// error.
bool is_config_group_choice(const Override& o) {
  static const std::vector<std::pair<std::string, std::string>> groups = {
      {"model", "hf_model"}, {"engine", "fsdp"}, {"optim", "fsdp"}, {"profiler", "profiler"}};
  for (const auto& [group, option] : groups) {
    if (o.op != Override::Op::Set || o.path != group || o.value.kind() != Kind::String) continue;
    VERL_CHECK(o.value.as_string() == option, "config", "'", o.text, "': verl sft builds the ", group, "/", option,
               " config (", group == "engine" || group == "optim" ? "verl's fsdp engine" : "verl's default", "); the ",
               o.value.as_string(), " option is not implemented");
    return true;
  }
  return false;
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
  if (const auto deprecated = in.get_optional_int("data.micro_batch_size")) {
    VERL_LOG(Warn, "config") << "data.micro_batch_size=" << *deprecated << " has no effect (verl's fsdp_sft_trainer "
                             << "reads it nowhere either): data.micro_batch_size_per_gpu=" << d.micro_batch_size_per_gpu
                             << " sets the micro-batches";
  }
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
  d.chat_template_timeout = read_template_timeout(in);
  d.multiturn = in.get_bool("data.multiturn.enable");
  d.messages_key = in.get_string("data.multiturn.messages_key");
  d.tools_key = in.get_string("data.multiturn.tools_key");
  d.enable_thinking_key = in.get_string("data.multiturn.enable_thinking_key");
  d.apply_chat_template_kwargs = read_template_kwargs(in);

  c.partial_pretrain = expand_user_path(in.get_string("model.partial_pretrain"));
  c.lora = read_lora_config(in, "model", /*with_adapter_path=*/false);
  c.enable_gradient_checkpointing = in.get_bool("model.enable_gradient_checkpointing");
  c.use_remove_padding = in.get_bool("use_remove_padding");
  c.ulysses_sequence_parallel_size = in.get_int("ulysses_sequence_parallel_size");
  check_positive(c.ulysses_sequence_parallel_size, "ulysses_sequence_parallel_size");
  c.balance_dp_token = in.get_bool("data.balance_dp_token");

  OptimConfig& o = c.optimizer;
  o.lr = in.get_double("optim.lr");
  VERL_CHECK(o.lr >= 0, "config", "config key 'optim.lr' must be >= 0, got ", o.lr);
  o.betas = in.get_double_list("optim.betas");
  VERL_CHECK(o.betas.size() == 2 && o.betas[0] >= 0 && o.betas[0] < 1 && o.betas[1] >= 0 && o.betas[1] < 1, "config",
             "config key 'optim.betas' expects two numbers in [0, 1)");
  o.weight_decay = in.get_double("optim.weight_decay");
  // fsdp_sft_trainer's optimizer: AdamW, cosine or constant, warmup as a share of the steps (the later name wins).
  o.lr_warmup_steps = -1;
  o.lr_warmup_steps_ratio =
      in.get_optional_double("optim.lr_warmup_steps_ratio").value_or(in.get_double("optim.warmup_steps_ratio"));
  VERL_CHECK(o.lr_warmup_steps_ratio >= 0 && o.lr_warmup_steps_ratio <= 1, "config",
             "config key 'optim.warmup_steps_ratio' must be in [0, 1], got ", o.lr_warmup_steps_ratio);
  o.lr_scheduler_type = in.get_choice("optim.lr_scheduler", {"cosine", "constant"});
  o.min_lr_ratio = 0.0;
  o.num_cycles = 0.5;
  c.clip_grad = in.get_double("optim.clip_grad");
  VERL_CHECK(c.clip_grad > 0, "config", "config key 'optim.clip_grad' must be > 0, got ", c.clip_grad);

  c.trainer = read_trainer_section(in, /*epoch_word=*/false);
  c.trainer.shuffle_seed = c.trainer.seed;
  c.loss_normalization = SFTLossNormalization::MicroBatchMean;
  c.val_batch_size = d.micro_batch_size_per_gpu;
  in.check_all_read();
  return c;
}

Node default_sft_engine_config_tree() {
  return parse_yaml(verl_embedded_sft_trainer_engine_yaml, "configs/sft_trainer_engine.yaml (built in)");
}

SFTConfig parse_sft_engine_config(const Node& resolved, const Node& defaults) {
  ConfigReader in(resolved);
  SFTConfig c;
  c.layout = SFTLayout::SFTTrainer;
  SFTDataConfig& d = c.data;
  d.multiturn = true;
  d.train_batch_size = in.get_int("data.train_batch_size");
  check_positive(d.train_batch_size, "data.train_batch_size");
  d.micro_batch_size_per_gpu = in.get_int("data.micro_batch_size_per_gpu");
  check_positive(d.micro_batch_size_per_gpu, "data.micro_batch_size_per_gpu");
  d.use_dynamic_bsz = in.get_bool("data.use_dynamic_bsz");
  d.max_token_len_per_gpu = in.get_int("data.max_token_len_per_gpu");
  check_positive(d.max_token_len_per_gpu, "data.max_token_len_per_gpu");
  d.train_files = read_files(in, "data.train_files");
  if (!in.get_node("data.val_files").is_null()) d.val_files = read_files(in, "data.val_files");
  d.train_max_samples = in.get_int("data.train_max_samples");
  d.val_max_samples = in.get_int("data.val_max_samples");
  d.messages_key = in.get_string("data.messages_key");
  d.tools_key = in.get_string("data.tools_key");
  d.enable_thinking_key = in.get_string("data.enable_thinking_key");
  d.enable_thinking_default =
      python_truthiness(in.get_node("data.enable_thinking_default"), "data.enable_thinking_default");
  d.pad_mode = in.get_choice("data.pad_mode", {"no_padding", "right"});
  d.max_length = in.get_int("data.max_length");
  VERL_CHECK(d.max_length >= 2, "config", "config key 'data.max_length' must be >= 2, got ", d.max_length);
  d.truncation = in.get_choice("data.truncation", {"error", "left", "right"});
  d.apply_chat_template_kwargs = read_template_kwargs(in);
  d.ignore_input_ids_mismatch = in.get_bool("data.ignore_input_ids_mismatch");
  d.chat_template_timeout = read_template_timeout(in);

  c.partial_pretrain = expand_user_path(in.get_string("model.path"));
  if (auto path = in.get_optional_string("model.tokenizer_path")) c.tokenizer_path = expand_user_path(*path);
  if (auto path = in.get_optional_string("model.hf_config_path")) c.hf_config_path = expand_user_path(*path);
  c.custom_chat_template = in.get_optional_string("model.custom_chat_template");
  c.override_config = read_model_override_config(in, "model.override_config");
  c.lora = read_lora_config(in, "model", /*with_adapter_path=*/true);
  if (c.lora.lora_adapter_path) c.lora.lora_adapter_path = expand_user_path(*c.lora.lora_adapter_path);
  c.enable_gradient_checkpointing = in.get_bool("model.enable_gradient_checkpointing");
  c.use_remove_padding = in.get_bool("model.use_remove_padding");

  in.get_choice("engine.strategy", {"fsdp", "fsdp2"});  // verl's fsdp engine (both FSDP APIs: one process here)
  c.ulysses_sequence_parallel_size = in.get_int("engine.ulysses_sequence_parallel_size");
  check_positive(c.ulysses_sequence_parallel_size, "engine.ulysses_sequence_parallel_size");
  c.fsdp_size = in.get_int("engine.fsdp_size");
  VERL_CHECK(c.fsdp_size == -1 || c.fsdp_size >= 1, "config",
             "config key 'engine.fsdp_size' must be -1 (every rank) or >= 1, got ", c.fsdp_size);
  in.get_choice("engine.model_dtype", {"fp32", "float32"});
  VERL_CHECK(!in.get_bool("engine.forward_only"), "config",
             "config key 'engine.forward_only' is true: the SFT trainer trains the model");

  c.optimizer = read_optim_config(in, "optim");
  c.clip_grad = in.get_double("optim.clip_grad");
  VERL_CHECK(c.clip_grad > 0, "config", "config key 'optim.clip_grad' must be > 0, got ", c.clip_grad);

  c.trainer = read_trainer_section(in, /*epoch_word=*/true);
  c.trainer.shuffle_seed = 0;  // verl's DistributedSampler(shuffle=True) with its default seed
  c.trainer.device = in.get_choice("trainer.device", {"cuda", "cpu", "npu"});  // checked when the trainer starts
  c.loss_normalization = SFTLossNormalization::BatchTokenMean;
  c.val_batch_size = d.train_batch_size;

  const std::vector<std::string> no_effect = accept_verl_keys(in, resolved, defaults, KeyRuleTable::SFTTrainer);
  in.check_all_read();
  if (!no_effect.empty()) {
    VERL_LOG(Warn, "config") << "no effect in verl.cpp (settings of engines it does not run, docs/config.md): "
                             << join(no_effect, ", ");
  }
  return c;
}

LoadedSFTConfig load_sft_config(const ConfigArgs& args) {
  VERL_CHECK(!args.config_path, "config",
             "verl sft: --config-path is not supported; pick the layout with --config-name sft_trainer | "
             "sft_trainer_engine and pass your own YAML with --config FILE");
  const std::string name = args.config_name.value_or("sft_trainer");
  VERL_CHECK(name == "sft_trainer" || name == "sft_trainer_engine", "config", "verl sft --config-name ", name,
             ": expected sft_trainer (verl's fsdp_sft_trainer keys, the default) or sft_trainer_engine (verl 0.9.1's "
             "sft_trainer keys)");
  const bool engine = name == "sft_trainer_engine";
  const Node defaults = engine ? default_sft_engine_config_tree() : default_sft_config_tree();
  Node root = defaults;
  if (args.config_file) merge_config_file(root, load_yaml_file(*args.config_file), *args.config_file);
  for (const auto& text : args.overrides) {
    const Override parsed = parse_override(text);
    if (engine && is_config_group_choice(parsed)) continue;
    try {
      apply_override(root, parsed);
    } catch (const Error&) {
      // verl 0.9.1's sft_trainer keys given to the default layout: say which layout takes them.
      static const Node engine_tree = default_sft_engine_config_tree();
      if (!engine && find_path(root, parsed.path) == nullptr && find_path(engine_tree, parsed.path) != nullptr) {
        VERL_FAIL("config", "config key '", parsed.path,
                  "' is a key of verl 0.9.1's sft_trainer; run verl sft "
                  "--config-name sft_trainer_engine for that layout (the default takes verl's fsdp_sft_trainer keys)");
      }
      throw;
    }
  }
  LoadedSFTConfig loaded;
  loaded.resolved = resolve_interpolations(root);
  loaded.sft = engine ? parse_sft_engine_config(loaded.resolved, defaults) : parse_sft_config(loaded.resolved);
  return loaded;
}

}  // namespace verl::config
