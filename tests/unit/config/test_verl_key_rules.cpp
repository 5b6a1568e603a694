// verl's key families, set as verl's run scripts set them: engine knobs (accepted; honoured where the native engine
// has the concept, else reported once as having no effect), features verl.cpp does not have (default accepted,
// any other value a one-line error naming the feature), loggers, deprecated keys, and OmegaConf's oc.select.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/config_overrides.h"
#include "verl/config/interpolation.h"
#include "verl/config/yaml_io.h"
#include "verl/rollout/generator.h"

namespace verl::test {
namespace {

using config::find_path;
using config::Node;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The vLLM / SGLang / FSDP / Ray knobs of verl's scripts (examples/tuning, grpo_trainer): all accepted.
TEST(VerlKeyRules, EngineKnobsAreAcceptedAndReportedOnceInOneLine) {
  const std::vector<std::string> knobs = {
      "actor_rollout_ref.rollout.enable_chunked_prefill=False",
      "actor_rollout_ref.rollout.max_num_batched_tokens=16384",
      "actor_rollout_ref.rollout.load_format=safetensors",
      "actor_rollout_ref.rollout.enable_prefix_caching=false",
      "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=32",  // verl's scripts add vLLM arguments with +
      "actor_rollout_ref.rollout.mode=async",
      "actor_rollout_ref.model.use_shm=True",
      "actor_rollout_ref.model.use_fused_kernels=True",
      "actor_rollout_ref.actor.use_torch_compile=False",
      "actor_rollout_ref.actor.fsdp_config.forward_prefetch=True",
      "actor_rollout_ref.actor.entropy_from_logits_with_chunking=True",
      "actor_rollout_ref.actor.checkpoint.async_save=True",
      "actor_rollout_ref.actor.profiler.enable=True",
      "global_profiler.tool=nsys",
      "data.dataloader_num_workers=0",
      "data.tokenizer=/models/tokenizer",                            // verl reads it nowhere either
      "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts=4",  // so does this one
      "ray_kwargs.ray_init.num_cpus=8",
      "trainer.n_gpus_per_node=4",  // followed by rollout.n_gpus_per_node: not reported (it is the default's value)
  };
  const std::string err = stderr_of_load(knobs);
  // One warning line lists them all.
  size_t lines = 0;
  for (size_t at = err.find("no effect in verl.cpp"); at != std::string::npos;
       at = err.find("no effect in verl.cpp", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << err;
  for (const char* key :
       {"actor_rollout_ref.rollout.enable_chunked_prefill=false",
        "actor_rollout_ref.rollout.max_num_batched_tokens=16384", "actor_rollout_ref.rollout.load_format=safetensors",
        "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=32", "actor_rollout_ref.model.use_shm=true",
        "actor_rollout_ref.actor.profiler.enable=true", "global_profiler.tool=nsys", "ray_kwargs.ray_init.num_cpus=8",
        "data.tokenizer=/models/tokenizer", "multi_turn.num_repeat_rollouts=4"}) {
    EXPECT_TRUE(contains(err, key)) << key << " not reported in: " << err;
  }
  EXPECT_FALSE(contains(err, "rollout.n_gpus_per_node")) << err;
  // actor.profiler.tool follows global_profiler.tool (${oc.select:global_profiler.tool,null}): the default's value.
  EXPECT_FALSE(contains(err, "actor_rollout_ref.actor.profiler.tool")) << err;
  EXPECT_FALSE(contains(err, "rollout.mode")) << "async is the default: " << err;
  // Defaults alone report nothing.
  EXPECT_FALSE(contains(stderr_of_load({}), "no effect")) << stderr_of_load({});
}

TEST(VerlKeyRules, EngineKnobsKeepTheirTypes) {
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.rollout.max_num_batched_tokens=lots"}), "expects int"));
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.rollout.enable_chunked_prefill=maybe"}), "expects bool"));
}

// Where the native engine has vLLM's concept, the knob is honoured.
TEST(VerlKeyRules, VllmKnobsWithANativeMeaningAreHonoured) {
  const auto loaded = load_with_overrides({"actor_rollout_ref.rollout.max_num_seqs=64", "actor_rollout_ref.rollout.n=4",
                                           "actor_rollout_ref.rollout.enforce_eager=True",
                                           "actor_rollout_ref.rollout.free_cache_engine=True"});
  const auto& rollout = loaded.ppo.actor_rollout_ref.rollout;
  const rollout::SamplingParams p = rollout::sampling_params_from_config(rollout, false, {2}, 0, 1);
  EXPECT_EQ(p.max_num_seqs, 64);
  EXPECT_TRUE(p.enforce_eager);
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.rollout.max_num_seqs=0"}), "must be > 0"));
  // max_model_len must hold prompt + response, as vLLM requires.
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.rollout.max_model_len=1000"}),
                       "max_model_len=1000 is below prompt_length + response_length (512 + 512)"));
  EXPECT_EQ(config_error_of({"actor_rollout_ref.rollout.max_model_len=1024"}), "");
}

// Ulysses sequence parallelism (fsdp): the engine key, or verl's deprecated role-level key when it is > 1; the ref's
// role-level key follows the actor's (verl's oc.select). Under megatron only 1, an error naming the key.
TEST(VerlKeyRules, UlyssesSizesAreReadAsVerlReadsThem) {
  auto sizes = [](const std::vector<std::string>& overrides) {
    const auto c = load_with_overrides(overrides).ppo;
    return std::vector<int64_t>{c.actor_rollout_ref.actor.ulysses_sequence_parallel_size,
                                c.actor_rollout_ref.ref.ulysses_sequence_parallel_size,
                                c.critic.ulysses_sequence_parallel_size};
  };
  EXPECT_EQ(sizes({}), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(sizes({"actor_rollout_ref.actor.ulysses_sequence_parallel_size=2", "critic.ulysses_sequence_parallel_size=4"}),
            (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(sizes({"actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2",
                   "actor_rollout_ref.ref.fsdp_config.ulysses_sequence_parallel_size=4",
                   "critic.fsdp.ulysses_sequence_parallel_size=2"}),
            (std::vector<int64_t>{2, 4, 2}));
  EXPECT_TRUE(contains(config_error_of({"critic.strategy=megatron", "critic.ulysses_sequence_parallel_size=2"}),
                       "critic.ulysses_sequence_parallel_size=2 with strategy=megatron"));
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=0"}),
                       "actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size' must be > 0"));
}

// Features verl.cpp does not have: the default is fine, anything else names the feature.
TEST(VerlKeyRules, FeaturesAcceptTheirDefaultAndNameThemselvesOtherwise) {
  EXPECT_EQ(config_error_of({"data.image_key=images", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=1",
                             "actor_rollout_ref.rollout.multi_turn.enable=False", "transfer_queue.enable=false"}),
            "");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"data.image_key=image", "multimodal (VLM) inputs"},
      {"actor_rollout_ref.rollout.agent.agent_loop_config_path=loops.yaml", "custom agent loops"},
      {"actor_rollout_ref.actor.fsdp_config.qat.enable=true", "quantization-aware training"},
      {"actor_rollout_ref.model.mtp.enable=true", "multi-token prediction"},
      {"reward_model.reward_loop_source=importlib", "custom reward-loop manager classes"},
      {"transfer_queue.enable=true", "TransferQueue"},
      {"trainer.v1.trainer_mode=separate_async", "asynchronous v1 trainer"},
  };
  for (const auto& [override_arg, feature] : cases) {
    const std::string err = config_error_of({override_arg});
    EXPECT_TRUE(contains(err, feature)) << override_arg << " -> " << err;
    EXPECT_TRUE(contains(err, "is not implemented in verl.cpp")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  }
}

// verl's build_optimizer: torch.optim's class by name, its arguments from the section and override_optimizer_config.
TEST(VerlKeyRules, OptimizerClassAndItsArgumentsAreHonoured) {
  const auto sgd = load_with_overrides({"actor_rollout_ref.actor.optim.optimizer=SGD",
                                        "actor_rollout_ref.actor.optim.override_optimizer_config={momentum: 0.9, "
                                        "nesterov: true, lr: 0.5, foreach: true}"})
                       .ppo.actor_rollout_ref.actor.optim;
  EXPECT_EQ(sgd.optimizer, "SGD");
  EXPECT_DOUBLE_EQ(sgd.momentum, 0.9);
  EXPECT_TRUE(sgd.nesterov);
  EXPECT_DOUBLE_EQ(sgd.lr, 0.5);  // the override wins over optim.lr, as in verl
  const auto critic = load_with_overrides({"critic.optim.optimizer=Adagrad"}).ppo.critic.optim;
  EXPECT_EQ(critic.optimizer, "Adagrad");
  EXPECT_DOUBLE_EQ(critic.eps, 1e-10);  // Adagrad's own default
  const auto adam = load_with_overrides({"critic.optim.optimizer=Adam",
                                         "critic.optim.override_optimizer_config={decoupled_weight_decay: true}"})
                        .ppo.critic.optim;
  EXPECT_EQ(adam.optimizer, "AdamW");  // torch.optim.Adam(decoupled_weight_decay=True) is AdamW
  EXPECT_EQ(load_with_overrides({}).ppo.actor_rollout_ref.actor.optim.optimizer, "AdamW");

  const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> errors = {
      {{"actor_rollout_ref.actor.optim.optimizer_impl=bitsandbytes.optim"},
       {"actor_rollout_ref.actor.optim.optimizer_impl", "bitsandbytes.optim", "torch.optim"}},
      {{"critic.optim.optimizer=adamw"}, {"critic.optim.optimizer", "did you mean 'AdamW'"}},
      {{"critic.optim.optimizer=Lion"}, {"critic.optim.optimizer", "AdamW, Adam, SGD, RMSprop, Adagrad"}},
      {{"critic.optim.optimizer=SGD", "critic.optim.override_optimizer_config={betas: [0.9, 0.95]}"},
       {"critic.optim.override_optimizer_config.betas", "torch.optim.SGD takes no argument 'betas'"}},
      {{"critic.optim.override_optimizer_config={momentum: 0.9}"},
       {"critic.optim.override_optimizer_config.momentum", "torch.optim.AdamW"}},
      {{"critic.optim.override_optimizer_config={maximize: true}"}, {"maximize", "not implemented"}},
      {{"critic.optim.override_optimizer_config={eps: fast}"}, {"override_optimizer_config.eps", "expects a number"}},
      {{"critic.optim.override_optimizer_config={amsgrad: 1}"}, {"override_optimizer_config.amsgrad", "true or false"}},
      {{"critic.optim.override_optimizer_config={eps: -1.0}"}, {"eps", "must be >= 0"}},
      {{"critic.optim.optimizer=SGD", "critic.optim.override_optimizer_config={nesterov: true}"},
       {"nesterov", "momentum > 0 and dampening 0"}},
      {{"critic.optim.override_optimizer_config={betas: [0.9, 1.5]}"}, {"override_optimizer_config.betas", "[0, 1)"}},
  };
  for (const auto& [overrides, parts] : errors) {
    const std::string err = config_error_of(overrides);
    for (const auto& part : parts) EXPECT_TRUE(contains(err, part)) << overrides.back() << " -> " << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  }
}

// multi_turn.format: every parser of verl 0.9.1's registry; any other name is verl's own refusal too.
TEST(VerlKeyRules, ToolCallFormatsNameVerlsRegistry) {
  for (const char* format :
       {"hermes", "gpt-oss", "qwen3_coder", "glm", "seed", "minimax", "kimi", "deepseek_v4", "gemma4"}) {
    EXPECT_EQ(config_error_of({std::string("actor_rollout_ref.rollout.multi_turn.format=") + format}), "") << format;
  }
  const std::string qwen = config_error_of({"actor_rollout_ref.rollout.multi_turn.format=qwen"});
  EXPECT_TRUE(contains(qwen, "multi_turn.format' is 'qwen'; expected one of: hermes, gpt-oss, qwen3_coder")) << qwen;
  EXPECT_TRUE(contains(qwen, "Unknown tool parser: qwen")) << qwen;
  EXPECT_EQ(qwen.find('\n'), std::string::npos) << "one line: " << qwen;
}

// skip.rollout is read (trainer/rollout_skip.h); the TransferQueue and fully async trainers' dumps are features.
TEST(VerlKeyRules, SkipRolloutKeysAreCheckedAsVerlChecksThem) {
  const auto skip = load_with_overrides({"skip.rollout.enable=true", "skip.rollout.steps=[2, 5]",
                                         "skip.rollout.action=repeat", "skip.rollout.dump_dir=/tmp/dumps"})
                        .ppo.skip_rollout;
  EXPECT_TRUE(skip.enable);
  EXPECT_EQ(skip.steps, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(skip.action, "repeat");
  EXPECT_EQ(skip.dump_dir, "/tmp/dumps");
  EXPECT_TRUE(contains(config_error_of({"skip.rollout.action=random"}), "expected one of: cache, repeat"));
  EXPECT_TRUE(contains(config_error_of({"skip.rollout.steps=[0]"}), "integers >= 1"));
  EXPECT_TRUE(contains(config_error_of({"skip.rollout.steps=[two]"}), "skip.rollout.steps"));
  EXPECT_TRUE(contains(config_error_of({"skip.rollout_tq.enable=true"}), "is not implemented in verl.cpp"));
  EXPECT_TRUE(contains(config_error_of({"skip.async_rollout.enable=true"}), "fully async"));
}

// verl 0.9.1's new places of the reward keys feed the ones verl.cpp reads.
TEST(VerlKeyRules, Verl091RewardKeysAndCriticEngineKeysAreHonoured) {
  const auto loaded = load_with_overrides({"reward.reward_manager.name=dapo", "reward.custom_reward_function.path=/x.py",
                                           "reward.custom_reward_function.name=my_score",
                                           "critic.fsdp.param_offload=true", "critic.fsdp.fsdp_size=2"});
  EXPECT_EQ(loaded.ppo.reward_model.reward_manager, "dapo");
  EXPECT_EQ(loaded.ppo.custom_reward_function.path.value_or(""), "/x.py");
  EXPECT_EQ(loaded.ppo.custom_reward_function.name, "my_score");
  EXPECT_TRUE(loaded.ppo.critic.model.fsdp_config.param_offload);
  EXPECT_EQ(loaded.ppo.critic.model.fsdp_config.fsdp_size, 2);
  // The keys of verl <= 0.8 keep working.
  const auto legacy = load_with_overrides({"reward_model.reward_manager=dapo", "custom_reward_function.path=/y.py",
                                           "critic.model.fsdp_config.optimizer_offload=true"});
  EXPECT_EQ(legacy.ppo.reward_model.reward_manager, "dapo");
  EXPECT_EQ(legacy.ppo.custom_reward_function.path.value_or(""), "/y.py");
  EXPECT_TRUE(legacy.ppo.critic.model.fsdp_config.optimizer_offload);
  // verl 0.9.1 clips with optim.clip_grad.
  EXPECT_DOUBLE_EQ(load_with_overrides({"actor_rollout_ref.actor.optim.clip_grad=0.5"}).ppo.actor_rollout_ref.actor.grad_clip,
                   0.5);
}

// Deprecated spellings, as verl 0.9.1 treats them.
TEST(VerlKeyRules, DeprecatedKeysFollowVerl) {
  // FSDPOptimizerConfig: warmup_style wins over lr_scheduler_type.
  EXPECT_EQ(load_with_overrides({"actor_rollout_ref.actor.optim.warmup_style=cosine"})
                .ppo.actor_rollout_ref.actor.optim.lr_scheduler_type,
            "cosine");
  EXPECT_TRUE(contains(config_error_of({"critic.optim.warmup_style=linear"}), "expected one of: constant, cosine"));
  // RolloutConfig: mode=sync was removed.
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.rollout.mode=sync"}), "Rollout mode 'sync' has been removed"));
  // The global micro-batch sizes (test_deprecated_micro_batch.cpp has the rest).
  EXPECT_TRUE(contains(config_error_of({"actor_rollout_ref.actor.ppo_micro_batch_size=8", "trainer.n_gpus_per_node=1",
                                        "actor_rollout_ref.actor.ppo_mini_batch_size=16"}),
                       "set actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu instead"));
}

TEST(VerlKeyRules, VerlsLoggersAreAccepted) {
  EXPECT_EQ(config_error_of({"trainer.logger=['console','wandb']"}), "");
  EXPECT_EQ(config_error_of({"trainer.logger=[console,file,mlflow,tensorboard]"}), "");
  EXPECT_TRUE(contains(config_error_of({"trainer.logger=[console,wandbb]"}), "wandb"));
}

// OmegaConf's oc.select, as verl's generated config uses it. Expected values: OmegaConf 2.3.0's resolution of the
// same document (OmegaConf.to_container(resolve=True)).
TEST(VerlKeyRules, OcSelectResolvesAsOmegaConf) {
  const Node root = config::resolve_interpolations(
      config::parse_yaml("a:\n  x: 4\n  n: null\n"
                         "b:\n"
                         "  present: ${oc.select:a.x,7}\n"
                         "  absent: ${oc.select:a.y,7}\n"
                         "  absent_list: ${oc.select:a.y,[]}\n"
                         "  absent_bool: ${oc.select:a.y,False}\n"
                         "  absent_nodefault: ${oc.select:a.y}\n"
                         "  null_kept: ${oc.select:a.n,5}\n"
                         "  nested: ${oc.select:a.y,${oc.select:a.x,1}}\n"
                         "  rel: ${oc.select:.present,0}\n"
                         "  spaced: ${oc.select:a.y, null}\n"
                         "  absent_map: ${oc.select:a.y,{}}\n"  // verl's ref.megatron.override_transformer_config
                         "  absent_flow_map: '${oc.select:a.y,{k: 1, j: [2, 3]}}'\n"
                         "  present_map: ${oc.select:a,{}}\n",
                         "test"));
  EXPECT_EQ(*find_path(root, "b.present"), Node::integer(4));
  EXPECT_EQ(*find_path(root, "b.absent"), Node::integer(7));
  EXPECT_EQ(*find_path(root, "b.absent_list"), Node::list());
  EXPECT_EQ(*find_path(root, "b.absent_bool"), Node::boolean(false));
  EXPECT_EQ(*find_path(root, "b.absent_nodefault"), Node::null());
  EXPECT_EQ(*find_path(root, "b.null_kept"), Node::null());
  EXPECT_EQ(*find_path(root, "b.nested"), Node::integer(4));
  EXPECT_EQ(*find_path(root, "b.rel"), Node::integer(4));
  EXPECT_EQ(*find_path(root, "b.spaced"), Node::null());
  EXPECT_EQ(*find_path(root, "b.absent_map"), Node::map());
  EXPECT_EQ(find_path(root, "b.absent_flow_map")->to_text(), "{k: 1, j: [2, 3]}");
  EXPECT_EQ(*find_path(root, "b.present_map"), *find_path(root, "a"));
  // An override of the selected key flows through, and types the override by the target's kind.
  EXPECT_EQ(load_with_overrides({"actor_rollout_ref.actor.ppo_epochs=3"}).ppo.critic.ppo_epochs, 3);
}

}  // namespace
}  // namespace verl::test
