// configs/ppo_trainer.yaml against verl 0.9.1's own key trees (tests/data/verl/_generated_ppo_trainer.yaml and
// _generated_ppo_megatron_trainer.yaml, copies of verl/trainer/config/'s from the installed verl 0.9.1: its
// model_engine=dp and model_engine=megatron trees): every key verl has is here with verl's default (the megatron
// tree's under model_engine=megatron), except the differences listed below, each with its reason. A new
// difference fails until it is listed; a listed one that disappears fails too, so the lists stay exact.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "verl/config/config_loader.h"
#include "verl/config/verl_key_rules.h"
#include "verl/config/yaml_io.h"

namespace verl::config {
namespace {

// Leaves as dotted paths, without Hydra's `_target_` class paths (instantiation targets, not settings).
void leaves(const Node& node, const std::string& prefix, std::map<std::string, Node>& out) {
  if (!node.is_map() || node.fields().empty()) {
    out[prefix] = node;
    return;
  }
  for (const auto& [key, child] : node.fields()) {
    if (key == "_target_") continue;
    leaves(child, prefix.empty() ? key : prefix + "." + key, out);
  }
}

std::map<std::string, Node> verl_tree(const std::string& name = "_generated_ppo_trainer.yaml") {
  std::map<std::string, Node> out;
  leaves(load_yaml_file(std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/data/verl/" + name), "", out);
  return out;
}

std::map<std::string, Node> our_tree(const std::vector<std::string>& overrides = {}) {
  std::map<std::string, Node> out;
  ConfigArgs args;
  args.overrides = overrides;
  leaves(compose_config(args), "", out);
  return out;
}

// Equal values, an int and a float of the same number included (YAML `0` for a float field, as verl writes some).
bool same_value(const Node& a, const Node& b) {
  const bool a_number = a.kind() == Kind::Int || a.kind() == Kind::Float;
  const bool b_number = b.kind() == Kind::Int || b.kind() == Kind::Float;
  if (a_number && b_number) return a.as_double() == b.as_double();
  if (a.is_list() && b.is_list()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i) {
      if (!same_value(a.items()[i], b.items()[i])) return false;
    }
    return true;
  }
  return a == b;
}

bool under(const std::string& path, const std::string& prefix) {
  return path == prefix || path.rfind(prefix + ".", 0) == 0;
}

// verl.cpp's keys in neither of verl 0.9.1's trees (the megatron tree's own keys, its `megatron` sections and
// McoreOptimizerConfig's, are here beside the dp tree's: strategy picks which are read).
const std::vector<std::string> kExtraSubtrees = {
    // verl <= 0.8's megatron key (0.9.1 dropped it), still read
    "actor_rollout_ref.actor.megatron.grad_offload",
    "critic.megatron.grad_offload",
    // verl <= 0.8's place of critic.fsdp, still read (and fed by critic.fsdp)
    "critic.model.fsdp_config",
    // the native reward model's settings (verl 0.9.1 serves reward models through its reward loop)
    "reward_model.strategy",
    "reward_model.model.input_tokenizer",
    "reward_model.micro_batch_size_per_gpu",
    "reward_model.max_length",
    "reward_model.use_dynamic_bsz",
    "reward_model.forward_max_token_len_per_gpu",
    "reward_model.reward_kwargs",
    // verl.cpp extensions
    "custom_reward_function.reward_kwargs",
    "custom_reward_function.on_error",
    "algorithm.gdpo_reward_keys",
    "algorithm.gdpo_reward_weights",
    "trainer.split_placement",
    "trainer.num_cpu_threads",
    "actor_rollout_ref.rollout.multi_turn.tool_timeout",
    "data.chat_template_timeout",
    "data.custom_cls.timeout",
    "trainer.checkpoint_callback_timeout",
    // verl <= 0.6's interactions key (issue 27)
    "actor_rollout_ref.rollout.multi_turn.interaction_config_path",
    // verl's one_step_off_policy recipe
    "rollout.nnodes",
    "rollout.n_gpus_per_node",
};

// verl.cpp extensions of work in progress beside this one (issue 25's time limits): allowed, not required.
const std::vector<std::string> kExtraSubtreesElsewhere = {"custom_reward_function.timeout", "trainer.worker_call_timeout"};

// Keys in both with another default here, and why.
const std::map<std::string, std::string> kOtherDefaults = {
    {"actor_rollout_ref.actor.fsdp_config.reshard_after_forward", "ZeRO-3 off: on the CPU whole parameters are faster"},
    {"actor_rollout_ref.ref.fsdp_config.reshard_after_forward", "as the actor's"},
    {"critic.fsdp.reshard_after_forward", "as the actor's"},
    {"actor_rollout_ref.actor.grad_clip", "${.optim.clip_grad}: verl 0.9.1's engine clips with optim.clip_grad"},
    {"critic.grad_clip", "as the actor's"},
    {"actor_rollout_ref.rollout.name", "verl: ??? (required); the native engine is hf"},
    {"actor_rollout_ref.rollout.seed", "0 (verl.cpp's sampling seed, + rank)"},
    {"actor_rollout_ref.rollout.dtype", "null: bf16 on CUDA, fp32 on the CPU"},
    {"actor_rollout_ref.rollout.tensor_model_parallel_size", "the rollout generates on the actor's weights"},
    {"actor_rollout_ref.rollout.calculate_log_probs", "false: verl.cpp computes rollout log-probs on request only"},
    {"data.train_files", "a one-element list, so that lists and single paths both fit its type"},
    {"data.val_files", "as train_files"},
    {"critic.ppo_micro_batch_size_per_gpu", "null: the deprecated ppo_micro_batch_size is rejected instead"},
    {"critic.model.tokenizer_path", "the actor's model path"},
    {"custom_reward_function.path", "${reward.custom_reward_function.path}: verl 0.9.1's new place feeds it"},
    {"custom_reward_function.name", "${reward.custom_reward_function.name}"},
    {"reward_model.reward_manager", "${reward.reward_manager.name}"},
    {"algorithm.rollout_correction.rollout_is_threshold", "the string \"2.0\": numbers and \"L_U\" both override it"},
    {"trainer.logger", "[console]: nothing leaves the machine unless asked"},
};

TEST(VerlKeyTree, EveryVerlKeyIsHereWithVerlsDefaultExceptTheListedOnes) {
  const auto verl = verl_tree();
  const auto verl_megatron = verl_tree("_generated_ppo_megatron_trainer.yaml");
  const auto ours = our_tree();
  ASSERT_GT(verl.size(), 500u) << "verl's tree did not load";

  for (const auto& [path, value] : verl) {
    EXPECT_TRUE(ours.count(path)) << "verl's key '" << path << "' (default " << value.to_text()
                                  << ") is missing from configs/ppo_trainer.yaml";
  }

  std::set<std::string> extra_prefixes_seen;
  for (const auto& [path, value] : ours) {
    if (verl.count(path) || verl_megatron.count(path)) continue;
    bool listed = false;
    for (const auto& prefix : kExtraSubtreesElsewhere) listed = listed || under(path, prefix);
    for (const auto& prefix : kExtraSubtrees) {
      if (under(path, prefix)) {
        listed = true;
        extra_prefixes_seen.insert(prefix);
      }
    }
    EXPECT_TRUE(listed) << "'" << path << "' is not a verl 0.9.1 key: list it in kExtraSubtrees with a reason";
  }
  for (const auto& prefix : kExtraSubtrees) {
    EXPECT_TRUE(extra_prefixes_seen.count(prefix)) << "listed extra '" << prefix << "' is gone: unlist it";
  }

  std::set<std::string> differing;
  for (const auto& [path, value] : verl) {
    auto it = ours.find(path);
    if (it == ours.end() || same_value(it->second, value)) continue;
    differing.insert(path);
    EXPECT_TRUE(kOtherDefaults.count(path)) << "'" << path << "': verl's default " << value.to_text() << ", here "
                                            << it->second.to_text();
  }
  for (const auto& [path, why] : kOtherDefaults) {
    EXPECT_TRUE(differing.count(path)) << "listed difference '" << path << "' (" << why << ") is gone: unlist it";
  }
}

// Keys whose default here differs from verl's model_engine=megatron tree beyond kOtherDefaults, and why.
const std::map<std::string, std::string> kOtherMegatronDefaults = {
    {"actor_rollout_ref.ref.strategy", "${actor_rollout_ref.actor.strategy}: resolves to megatron"},
    {"actor_rollout_ref.ref.entropy_from_logits_with_chunking", "the dp tree's literal (no effect: verl.cpp chunks)"},
    {"actor_rollout_ref.ref.entropy_from_logits_chunk_size", "the dp tree's literal (no effect: verl.cpp chunks)"},
};

// model_engine=megatron: verl's megatron tree, key for key.
TEST(VerlKeyTree, UnderModelEngineMegatronEveryKeyHasVerlsMegatronDefault) {
  const auto verl = verl_tree("_generated_ppo_megatron_trainer.yaml");
  const auto ours = our_tree({"model_engine=megatron"});
  ASSERT_GT(verl.size(), 500u) << "verl's megatron tree did not load";
  std::set<std::string> differing;
  for (const auto& [path, value] : verl) {
    auto it = ours.find(path);
    if (it == ours.end()) {
      ADD_FAILURE() << "verl's megatron key '" << path << "' (default " << value.to_text()
                    << ") is missing from configs/ppo_trainer.yaml";
      continue;
    }
    if (same_value(it->second, value) || kOtherDefaults.count(path)) continue;
    differing.insert(path);
    EXPECT_TRUE(kOtherMegatronDefaults.count(path))
        << "'" << path << "': verl's megatron default " << value.to_text() << ", here " << it->second.to_text();
  }
  for (const auto& [path, why] : kOtherMegatronDefaults) {
    EXPECT_TRUE(differing.count(path)) << "listed difference '" << path << "' (" << why << ") is gone: unlist it";
  }
}

// The defaults load: every key is read by a typed section or covered by a rule.
TEST(VerlKeyTree, DefaultsLoadAndEveryKeyHasAnOwner) {
  const LoadedConfig loaded = load_config(ConfigArgs{});
  EXPECT_EQ(loaded.ppo.actor_rollout_ref.rollout.max_num_seqs, 256);  // verl's RolloutConfig default
  EXPECT_TRUE(loaded.ppo.actor_rollout_ref.rollout.free_cache_engine);
  EXPECT_FALSE(loaded.ppo.actor_rollout_ref.rollout.enforce_eager);
}

TEST(VerlKeyTree, RulesPickTheMostSpecificEntry) {
  auto kind = [](const std::string& path) { return verl_key_rule(path).value().kind; };
  EXPECT_EQ(kind("actor_rollout_ref.rollout.enable_chunked_prefill"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind("actor_rollout_ref.rollout.agent.agent_loop_config_path"), KeyRuleKind::Feature);
  EXPECT_EQ(kind("actor_rollout_ref.actor.fsdp_config.forward_prefetch"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind("actor_rollout_ref.actor.fsdp_config.qat.enable"), KeyRuleKind::Feature);
  EXPECT_EQ(kind("critic.fsdp.param_offload"), KeyRuleKind::Honoured);
  EXPECT_EQ(kind("critic.fsdp.use_orig_params"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind("reward.reward_model.rollout.max_num_seqs"), KeyRuleKind::NoEffect);
  EXPECT_FALSE(verl_key_rule("reward.reward_model.enable").has_value());  // read by the typed section
  EXPECT_FALSE(verl_key_rule("trainer.total_epochs").has_value());
  EXPECT_FALSE(verl_key_rule("actor_rollout_ref.actor.optim.lrr").has_value());
  // Megatron's sections: one segment globbed by prefix or suffix, below the section's own rule.
  const std::string otc = "actor_rollout_ref.actor.megatron.override_transformer_config.";
  EXPECT_EQ(kind(otc + "moe_router_dtype"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind(otc + "apply_rope_fusion"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind(otc + "hidden_dropout"), KeyRuleKind::Feature);
  EXPECT_EQ(kind(otc + "fusion_x"), KeyRuleKind::Feature);  // `*_fusion` matches suffixes only
  EXPECT_EQ(kind("critic.megatron.override_transformer_config.recompute_method"), KeyRuleKind::NoEffect);
  EXPECT_EQ(kind("critic.megatron.use_dist_checkpointing"), KeyRuleKind::Feature);
  EXPECT_EQ(kind("critic.optim.muon_momentum"), KeyRuleKind::NoEffect);
  EXPECT_FALSE(verl_key_rule("critic.optim.lr_decay_style").has_value());  // read by the typed section
}

}  // namespace
}  // namespace verl::config
