#include "verl/config/config_loader.h"

#include <filesystem>
#include <optional>
#include <utility>

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"

extern const char verl_embedded_ppo_trainer_yaml[];  // generated from configs/ppo_trainer.yaml

namespace verl::config {

namespace {

// "--config-path" / "--config-name" for Hydra's spellings of them (long, -cp / -cn, with or without '='), else null.
const char* hydra_flag(const std::string& arg) {
  for (const auto& [name, canonical] : {std::pair<const char*, const char*>{"--config-path", "--config-path"},
                                        {"-cp", "--config-path"},
                                        {"--config-name", "--config-name"},
                                        {"-cn", "--config-name"}}) {
    if (arg == name || starts_with(arg, std::string(name) + "=")) return canonical;
  }
  return nullptr;
}

std::string unquote(const std::string& text) {
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  return text;
}

std::string without_yaml_suffix(const std::string& name) {
  for (const char* suffix : {".yaml", ".yml"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return name.substr(0, name.size() - s.size());
    }
  }
  return name;
}

Node compose_hydra_file(const std::filesystem::path& dir, const std::string& name, int depth,
                        const std::string& engine);

// verl 0.9.1's model_engine config group (`model_engine: dp` in its ppo_trainer.yaml defaults list) picks the actor,
// ref and critic sections of one engine. verl.cpp's one tree holds both engines' keys; the choice sets the
// strategies and the defaults verl's two trees disagree on.
void apply_model_engine(Node& root, const std::string& engine, const std::string& source) {
  VERL_CHECK(engine == "dp" || engine == "megatron", "config", source, ": model_engine=", engine,
             " is not one of verl.cpp's engines: dp (strategy fsdp) or megatron");
  const bool megatron = engine == "megatron";
  const auto set = [&](const char* key, Node value) { set_existing_path(root, key, std::move(value), source); };
  for (const char* key : {"actor_rollout_ref.actor.strategy", "critic.strategy"}) {
    set(key, Node::string(megatron ? "megatron" : "fsdp"));
  }
  for (const char* role : {"actor_rollout_ref.actor.optim", "critic.optim"}) {
    const std::string p = role;
    set((p + ".optimizer").c_str(), Node::string(megatron ? "adam" : "AdamW"));  // Megatron's Adam is AdamW
    set((p + ".override_optimizer_config").c_str(), megatron ? Node::map() : Node::null());
  }
  set("critic.data_loader_seed",
      megatron ? Node::string("${oc.select:actor_rollout_ref.actor.data_loader_seed,null}") : Node::integer(42));
}

// The built-in defaults with an engine chosen (model_engine=... on the command line; null: verl's dp).
Node engine_defaults(const std::string& engine) {
  Node root = default_config_tree();
  if (!engine.empty()) apply_model_engine(root, engine, "model_engine");
  return root;
}

// verl's own trainer configs, when DIR does not hold them (verl's scripts pass --config-path=config, verl's folder).
// ppo_megatron_trainer is verl 0.9.1's `ppo_trainer` with `override model_engine: megatron`.
std::optional<Node> verl_builtin_config(const std::string& name, const std::string& engine) {
  if (name == "ppo_trainer") return engine_defaults(engine);
  if (name == "ppo_megatron_trainer") return engine_defaults(engine.empty() ? "megatron" : engine);
  return std::nullopt;
}

Node compose_hydra_file(const std::filesystem::path& dir, const std::string& name_in, int depth,
                        const std::string& engine) {
  VERL_CHECK(depth < 8, "config", "--config-name: the defaults lists nest more than 8 files deep (a cycle?)");
  const std::string name = without_yaml_suffix(name_in);
  std::filesystem::path file = dir / (name + ".yaml");
  if (!std::filesystem::exists(file) && std::filesystem::exists(dir / (name + ".yml"))) file = dir / (name + ".yml");
  if (!std::filesystem::exists(file)) {
    if (auto builtin = verl_builtin_config(name, engine)) return *builtin;
    VERL_FAIL("config", "--config-name ", name_in, ": no file '", file.string(), "' (and not one of verl's own ",
              "trainer configs, ppo_trainer / ppo_megatron_trainer)");
  }
  Node own = load_yaml_file(file.string());
  VERL_CHECK(own.is_map(), "config", "'", file.string(), "' must hold a map of config keys");
  own.erase("hydra");  // Hydra's own settings (searchpath, run dir): no config keys
  Node defaults = own.find("defaults") ? *own.find("defaults") : Node::list();
  own.erase("defaults");
  VERL_CHECK(defaults.is_list(), "config", "'", file.string(), "': `defaults` must be a list");
  // Every entry merges over what the earlier ones made, in the key set of the built-in defaults (the trees of
  // ppo_trainer and of the folder's files all hold it), so _self_ may come first.
  Node root = engine_defaults(engine);
  bool self_merged = false;
  auto merge = [&](const Node& tree, const std::string& source) { merge_config_file(root, tree, source); };
  for (const Node& entry : defaults.items()) {
    // `model_engine: megatron` / `override model_engine: megatron` (verl's ppo_megatron_trainer.yaml); a choice on
    // the command line wins, as in Hydra.
    if (entry.is_map() && entry.fields().size() == 1) {
      const auto& [group, choice] = *entry.fields().begin();
      if ((group == "model_engine" || group == "override model_engine") && choice.kind() == Kind::String) {
        if (engine.empty()) apply_model_engine(root, choice.as_string(), file.string() + " defaults");
        continue;
      }
    }
    VERL_CHECK(entry.kind() == Kind::String, "config", "'", file.string(), "': defaults entry '", entry.to_text(),
               "' is not supported (verl.cpp takes config names of the same folder, ppo_trainer, model_engine and "
               "_self_)");
    const std::string item = entry.as_string();
    if (item == "_self_") {
      merge(own, file.string());
      self_merged = true;
    } else {
      VERL_CHECK(item.find('@') == std::string::npos && item.find('/') == std::string::npos &&
                     !starts_with(item, "override "),
                 "config", "'", file.string(), "': defaults entry '", item,
                 "' is not supported (verl.cpp takes config names of the same folder, ppo_trainer and _self_)");
      merge(compose_hydra_file(dir, item, depth + 1, engine), file.string() + " defaults: " + item);
    }
  }
  if (!self_merged) merge(own, file.string());  // Hydra puts _self_ last when the list does not name it
  return root;
}

}  // namespace

Node hydra_config_tree(const std::string& config_path, const std::string& config_name, const std::string& engine) {
  return compose_hydra_file(std::filesystem::path(config_path), config_name, 0, engine);
}

ConfigArgs parse_config_args(const std::vector<std::string>& args) {
  ConfigArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--config") {
      VERL_CHECK(i + 1 < args.size(), "config", "--config needs a file path");
      VERL_CHECK(!out.config_file, "config", "--config given twice");
      out.config_file = args[++i];
    } else if (starts_with(arg, "--config=")) {
      VERL_CHECK(!out.config_file, "config", "--config given twice");
      out.config_file = arg.substr(9);
    } else if (const char* flag = hydra_flag(arg)) {
      std::optional<std::string>& slot = std::string(flag) == "--config-path" ? out.config_path : out.config_name;
      VERL_CHECK(!slot, "config", flag, " given twice");
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        slot = unquote(arg.substr(eq + 1));
      } else {
        VERL_CHECK(i + 1 < args.size(), "config", flag, " needs a value");
        slot = unquote(args[++i]);
      }
    } else if (is_override_argument(arg)) {
      out.overrides.push_back(arg);
    } else {
      VERL_FAIL("config", "unexpected argument '", arg, "'; expected --config FILE or key.path=value overrides");
    }
  }
  return out;
}

Node default_config_tree() {
  return parse_yaml(verl_embedded_ppo_trainer_yaml, "configs/ppo_trainer.yaml (built in)");
}

Node compose_config(const ConfigArgs& args) {
  VERL_CHECK(!args.config_path || args.config_name, "config", "--config-path needs --config-name (the YAML to read)");
  // model_engine=X chooses the defaults before any key is set, wherever it stands (a Hydra group choice).
  std::string engine;
  std::vector<std::string> key_overrides;
  for (const auto& text : args.overrides) {
    if (starts_with(text, "model_engine=")) {
      engine = unquote(text.substr(std::string("model_engine=").size()));
    } else {
      key_overrides.push_back(text);
    }
  }
  Node root = args.config_name ? hydra_config_tree(args.config_path.value_or("."), *args.config_name, engine)
                               : engine_defaults(engine);
  if (args.config_file) merge_config_file(root, load_yaml_file(*args.config_file), *args.config_file);
  for (const auto& text : key_overrides) apply_override(root, parse_override(text));
  return root;
}

LoadedConfig load_config(const ConfigArgs& args) {
  LoadedConfig loaded;
  loaded.resolved = resolve_interpolations(compose_config(args));
  loaded.ppo = parse_ppo_config(loaded.resolved);
  return loaded;
}

}  // namespace verl::config
