// `verl config show`: the config a run would use, fully resolved, as YAML.
#include <algorithm>
#include <iostream>

#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/config/ppo_config.h"
#include "verl/config/sft_config.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::cli {

const char* const kConfigUsage =
    "usage: verl config show [--validate] [--config-path DIR --config-name NAME] [--config FILE] [key.path=value ...]\n"
    "\n"
    "Prints the resolved config as YAML: the built-in defaults (verl's ppo_trainer.yaml keys), then FILE\n"
    "merged over them, then the overrides, with ${...} references resolved. The output is valid input for\n"
    "--config. Overrides follow Hydra: key=value changes a key (typed by its default), +key=value adds\n"
    "one, ++key=value adds or changes, ~key removes. Unknown keys and wrong types are errors.\n"
    "--config-path / --config-name (Hydra's): DIR/NAME.yaml instead of the defaults, its `defaults:` list naming\n"
    "ppo_trainer (the built-in defaults), other YAML files of DIR and _self_. Every key of verl 0.9.1's tree is\n"
    "accepted: honoured, a knob of an engine verl.cpp does not run (reported once as having no effect), or a\n"
    "feature it does not have (only the default; docs/config.md lists them).\n"
    "--config-name sft_trainer | sft_trainer_engine (no --config-path): verl sft's config for those keys.\n"
    "--validate: also the checks `verl train` makes of the config before it starts (batch sizes against the devices,\n"
    "parallel sizes, the combinations it does not run), without reading data or models.\n"
    "\n"
    "examples:\n"
    "  verl config show actor_rollout_ref.actor.optim.lr=3e-6\n"
    "  verl config show --config my_run.yaml trainer.logger=[console,jsonl]\n";

int run_config_command(const Args& args) {
  if (args.empty() || args[0] != "show") {
    std::cerr << "error: expected 'verl config show ...'" << (args.empty() ? "" : ", got '" + args[0] + "'") << "\n"
              << kConfigUsage;
    return 2;
  }
  Args rest(args.begin() + 1, args.end());
  const auto flag = std::find(rest.begin(), rest.end(), "--validate");
  const bool validate = flag != rest.end();
  if (validate) rest.erase(flag);
  const config::ConfigArgs parsed = config::parse_config_args(rest);
  // verl sft's layouts, by the names of verl's SFT trainer configs.
  if (!parsed.config_path && (parsed.config_name == "sft_trainer" || parsed.config_name == "sft_trainer_engine")) {
    VERL_CHECK(!validate, "config", "--validate checks verl train's config, not verl sft's");
    std::cout << config::to_yaml(config::load_sft_config(parsed).resolved);
    return 0;
  }
  config::LoadedConfig loaded = config::load_config(parsed);
  if (validate) {
    const config::PPOConfig ppo = config::parse_ppo_config(loaded.resolved);
    trainer::validate_ppo_config(ppo, ppo.trainer.nnodes * ppo.trainer.n_gpus_per_node);
  }
  std::cout << config::to_yaml(loaded.resolved);
  return 0;
}

}  // namespace verl::cli
