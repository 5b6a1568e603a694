// verl 0.9.1's keys that verl.cpp accepts without an implementation of its own, so that verl's run scripts work
// unchanged and no key is silently ignored. Every key of configs/ppo_trainer.yaml is one of:
//   - read by the typed sections (ppo_config.cpp): honoured;
//   - Honoured here: it feeds a read key through an interpolation (critic.fsdp.* -> critic.model.fsdp_config.*);
//   - NoEffect: a tuning knob of an engine or framework verl.cpp does not run (vLLM / SGLang arguments, Ray,
//     profilers, FSDP wrapping): any value of the default's type is accepted, and those set to another value than
//     the default are reported once at start-up in one warning line;
//   - Feature: a feature verl.cpp does not have (VLM inputs, multi-turn tools, QAT, Ulysses, ...): the default is
//     accepted, any other value is a one-line error naming the feature.
// A key in none of these is an error (config_reader.h's check_all_read).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "verl/config/config_node.h"
#include "verl/config/config_reader.h"

namespace verl::config {

enum class KeyRuleKind { Honoured, NoEffect, Feature };

struct KeyRule {
  KeyRuleKind kind;
  std::string what;  // NoEffect: whose knob it is; Feature: the feature's name; Honoured: the key it feeds
};

// Whose keys: verl's PPO trainer (configs/ppo_trainer.yaml) or verl 0.9.1's sft_trainer
// (configs/sft_trainer_engine.yaml).
enum class KeyRuleTable { PPOTrainer, SFTTrainer };

// The rule for a leaf path (the most specific table entry; `*` matches one segment), or nullopt.
std::optional<KeyRule> verl_key_rule(const std::string& path, KeyRuleTable which = KeyRuleTable::PPOTrainer);

// Accepts every leaf the typed sections left unread that has a rule, comparing against `defaults` (the
// built-in defaults, not yet resolved): throws for a Feature key off its default, and returns "key=value" for each
// NoEffect key off its default (the caller reports them once).
std::vector<std::string> accept_verl_keys(ConfigReader& in, const Node& resolved, const Node& defaults,
                                          KeyRuleTable which = KeyRuleTable::PPOTrainer);

}  // namespace verl::config
