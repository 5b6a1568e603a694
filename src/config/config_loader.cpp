#include "verl/config/config_loader.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/config/interpolation.h"
#include "verl/config/overrides.h"
#include "verl/config/yaml_io.h"

extern const char verl_embedded_ppo_trainer_yaml[];  // generated from configs/ppo_trainer.yaml

namespace verl::config {

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
  Node root = default_config_tree();
  if (args.config_file) merge_config_file(root, load_yaml_file(*args.config_file), *args.config_file);
  for (const auto& text : args.overrides) apply_override(root, parse_override(text));
  return root;
}

LoadedConfig load_config(const ConfigArgs& args) {
  LoadedConfig loaded;
  loaded.resolved = resolve_interpolations(compose_config(args));
  loaded.ppo = parse_ppo_config(loaded.resolved);
  return loaded;
}

}  // namespace verl::config
