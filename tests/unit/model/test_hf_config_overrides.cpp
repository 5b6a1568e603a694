// verl's model.override_config: fields applied to config.json before the model is built (verl's
// update_model_config), the checks on them, and the actor / reference / critic models built with them.
#include <gtest/gtest.h>

#include <cmath>

#include "support/actor_fixture.h"
#include "support/config_overrides.h"
#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/model/hf_config.h"
#include "verl/model/weights.h"
#include "verl/single_controller/transport.h"
#include "verl/single_controller/worker_group.h"
#include "verl/workers/actor_rollout_ref_worker.h"

namespace verl::test {
namespace {

constexpr const char* kKey = "actor_rollout_ref.model.override_config";

// Llama with llama3 rope scaling, hidden 64, 2 layers, 4 heads.
const std::string kLlama = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 96,
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 1024}, "tie_word_embeddings": false})";

model::HFConfig with(const std::string& overrides, const std::string& base = kLlama) {
  return model::parse_hf_config_text(model::apply_hf_config_overrides(base, {kKey, overrides}));
}

TEST(HFConfigOverrides, HonouredFieldsReachTheConfig) {
  const auto c = with(R"({"max_position_embeddings": 32768, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
                         "attn_implementation": "eager", "attention_dropout": 0.0, "use_cache": false,
                         "eos_token_id": [7, 9], "pad_token_id": 3})");
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(c.pad_token_id, 3);
  // Untouched fields keep config.json's values.
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
}

TEST(HFConfigOverrides, RopeScalingMergesKeyByKey) {
  // rope_scaling.factor=4.0 keeps config.json's type and other keys.
  auto c = with(R"({"rope_scaling": {"factor": 4.0}})");
  EXPECT_EQ(c.rope_scaling.type, model::RopeScaling::Type::Llama3);
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 1024);
  // A whole new scaling where config.json has none; null turns it off.
  const std::string plain = R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 96, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4})";
  c = with(R"({"rope_scaling": {"rope_type": "linear", "factor": 2.0}})", plain);
  EXPECT_EQ(c.rope_scaling.type, model::RopeScaling::Type::Linear);
  EXPECT_EQ(c.rope_scaling.factor, 2.0);
  EXPECT_EQ(with(R"({"rope_scaling": null})").rope_scaling.type, model::RopeScaling::Type::None);
  // verl's docs/advance/rope.rst example: Qwen2.5's long-context yarn on a config.json without rope_scaling.
  c = with(R"({"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})", plain);
  EXPECT_EQ(c.rope_scaling.type, model::RopeScaling::Type::Yarn);
  EXPECT_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope_scaling.attention_factor, 0.1 * std::log(4.0) + 1);
  // Over llama3's scaling, "type" replaces its rope_type; its original length stays.
  c = with(R"({"rope_scaling": {"type": "yarn", "factor": 4.0}})");
  EXPECT_EQ(c.rope_scaling.type, model::RopeScaling::Type::Yarn);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 1024);
  // A scaling verl.cpp does not implement is an error naming the override.
  const std::string dynamic = error_of([] { with(R"({"rope_scaling": {"type": "dynamic", "factor": 4.0}})"); });
  EXPECT_NE(dynamic.find(kKey), std::string::npos) << dynamic;
  EXPECT_NE(dynamic.find("dynamic"), std::string::npos) << dynamic;
}

// Qwen2's sliding window switched on from the override (transformers' Qwen2Config fields), on the layers from
// max_window_layers on.
TEST(HFConfigOverrides, SlidingWindowFieldsAreHonoured) {
  const std::string qwen2 = R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 96, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
    "use_sliding_window": false, "sliding_window": 32768, "max_window_layers": 28})";
  EXPECT_TRUE(with("{}", qwen2).sliding_layers.empty());
  const auto c = with(R"({"use_sliding_window": true, "sliding_window": 64, "max_window_layers": 1})", qwen2);
  EXPECT_EQ(c.sliding_window, 64);
  EXPECT_EQ(c.sliding_layers, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(with(R"({"use_sliding_window": true, "layer_types": ["sliding_attention", "full_attention",
    "sliding_attention"]})", qwen2).sliding_layers, (std::vector<bool>{true, false, true}));
  const std::string e = error_of([&] { with(R"({"use_sliding_window": true, "layer_types": ["local"]})", qwen2); });
  EXPECT_NE(e.find("layer_types must list one entry per layer (3)"), std::string::npos) << e;
}

TEST(HFConfigOverrides, ModelConfigStandsForTheWholeOverride) {
  // verl's HFModelConfig reads override_config.model_config when present.
  EXPECT_EQ(with(R"({"model_config": {"max_position_embeddings": 4096}})").max_position_embeddings, 4096);
}

TEST(HFConfigOverrides, FieldsVerlCppCannotHonourAreOneLineErrors) {
  struct Case {
    const char* overrides;
    const char* names;
  } cases[] = {
      {R"({"final_logit_softcapping": 30.0})", "actor_rollout_ref.model.override_config.final_logit_softcapping"},
      {R"({"attention_dropout": 0.1})", "actor_rollout_ref.model.override_config.attention_dropout"},
      {R"({"attn_implementation": "paged"})", "actor_rollout_ref.model.override_config.attn_implementation"},
      {R"({"hidden_act": "gelu"})", "hidden_act"},
      {R"({"num_experts": 8})", "num_experts"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { with(c.overrides); });
    EXPECT_NE(e.find(c.names), std::string::npos) << c.overrides << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(HFConfigOverrides, ShapeFieldsOnlyAtTheCheckpointsValue) {
  // The checkpoint's own value is accepted.
  EXPECT_EQ(with(R"({"hidden_size": 64, "num_hidden_layers": 2, "tie_word_embeddings": false})").hidden_size, 64);
  for (const char* o : {R"({"hidden_size": 128})", R"({"num_hidden_layers": 4})", R"({"vocab_size": 100})",
                        R"({"num_key_value_heads": 4})", R"({"head_dim": 32})", R"({"tie_word_embeddings": true})",
                        R"({"architectures": ["Qwen2ForCausalLM"]})"}) {
    const std::string e = error_of([&] { with(o); });
    EXPECT_NE(e.find("override_config"), std::string::npos) << o << ": " << e;
    EXPECT_NE(e.find("shapes"), std::string::npos) << o << ": " << e;
  }
}

std::string tiny_model_dir() {
  static const std::string dir = make_tiny_model(make_temp_dir("override_config_model") + "/model");
  return dir;
}

TEST(HFConfigOverrides, LoadModelBuildsWithTheOverriddenConfig) {
  model::LoadOptions options;
  options.config_overrides = {kKey, R"({"max_position_embeddings": 777, "rope_theta": 50.0})"};
  auto overridden = model::load_model(tiny_model_dir(), options);
  auto plain = model::load_model(tiny_model_dir());
  EXPECT_EQ(overridden->config.max_position_embeddings, 777);
  EXPECT_EQ(plain->config.max_position_embeddings, 4096);
  // rope_theta reaches the forward: the same weights give other logits.
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor({{1, 5, 9, 13, 2, 7}}, torch::kInt64);
  auto mask = torch::ones_like(ids);
  auto pos = torch::arange(6).unsqueeze(0);
  auto a = overridden->forward(ids, mask, pos), b = plain->forward(ids, mask, pos);
  EXPECT_GT((a - b).abs().max().item<double>(), 1e-3);
  // A shape field: an error before any tensor of that size exists (hidden 60000 would be gigabytes).
  options.config_overrides = {kKey, R"({"hidden_size": 60000})"};
  const std::string e = error_of([&] { model::load_model(tiny_model_dir(), options); });
  EXPECT_NE(e.find("actor_rollout_ref.model.override_config.hidden_size=60000"), std::string::npos) << e;
}

TEST(HFConfigOverrides, ConfigKeysReadAndChecked) {
  auto loaded = load_with_overrides({"+actor_rollout_ref.model.override_config.max_position_embeddings=32768",
                                     "+critic.model.override_config.rope_theta=20000.0"});
  EXPECT_EQ(nlohmann::json::parse(loaded.ppo.actor_rollout_ref.model.override_config.json),
            nlohmann::json::parse(R"({"max_position_embeddings": 32768})"));
  EXPECT_EQ(loaded.ppo.actor_rollout_ref.model.override_config.key, kKey);
  EXPECT_EQ(nlohmann::json::parse(loaded.ppo.critic.model.override_config.json),
            nlohmann::json::parse(R"({"rope_theta": 20000.0})"));
  // verl config show already names a field verl.cpp cannot honour.
  const std::string e = config_error_of({"+critic.model.override_config.final_logit_softcapping=4"});
  EXPECT_NE(e.find("critic.model.override_config.final_logit_softcapping"), std::string::npos) << e;
  EXPECT_EQ(config_error_of({"+actor_rollout_ref.model.override_config.attn_implementation=eager"}), "");
}

TEST(HFConfigOverrides, ActorReferenceAndRolloutShareTheOverriddenConfig) {
  auto cfg = tiny_ppo_config(tiny_model_dir(), {"+actor_rollout_ref.model.override_config.max_position_embeddings=321",
                                                "+actor_rollout_ref.model.override_config.rope_theta=77.0"});
  auto transport = std::make_shared<single_controller::InProcessTransport>(
      "actor_rollout_ref", 1, workers::actor_rollout_ref_worker_factory(cfg, "actor_rollout_ref"));
  single_controller::WorkerGroup group("actor_rollout_ref", transport);
  group.call("init_model");
  auto& w = dynamic_cast<workers::ActorRolloutRefWorker&>(transport->worker(0));
  // The rollout generates with the actor's module (hybrid engine).
  EXPECT_EQ(w.actor_module()->config.max_position_embeddings, 321);
  EXPECT_EQ(w.actor_module()->config.rope_theta, 77.0);
  EXPECT_EQ(w.ref_module()->config.max_position_embeddings, 321);
  EXPECT_EQ(w.ref_module()->config.rope_theta, 77.0);
}

}  // namespace
}  // namespace verl::test
