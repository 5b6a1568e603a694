#include "verl/trainer/main_ppo.h"
#include "verl/trainer/role_setup.h"

#include <algorithm>
#include <filesystem>

#include "verl/algo/distillation_loss.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/config/node_json.h"
#include "verl/config/yaml_io.h"
#include "verl/data/dataloader.h"
#include "verl/data/rl_dataset.h"
#include "verl/model/hf_config.h"
#include "verl/model/model_folder.h"
#include "verl/reward/reward_manager.h"
#include "verl/runtime/cpu_threads.h"
#include "verl/trainer/checkpoint_callback.h"
#include "verl/workers/actor_rollout_ref_worker.h"
#include "verl/workers/critic_worker.h"
#include "verl/workers/multi_turn_rollout.h"
#include "verl/workers/reward_model_worker.h"
#include "verl/workers/seqlen_balancing.h"
#include "verl/workers/teacher_model_worker.h"
#include "verl/workers/worker_device.h"

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

// data::StatefulDataLoader behind the trainer's PromptDataLoader interface.
class DataLoaderAdapter : public PromptDataLoader {
 public:
  explicit DataLoaderAdapter(std::shared_ptr<data::StatefulDataLoader> loader) : loader_(std::move(loader)) {}
  int64_t batches_per_epoch() const override { return loader_->batches_per_epoch(); }
  void start_epoch(int64_t epoch) override { loader_->start_epoch(epoch); }
  bool has_next() const override { return loader_->has_next(); }
  DataProto next() override { return loader_->next(); }
  nlohmann::json state_dict() const override { return loader_->state_dict(); }
  void load_state_dict(const nlohmann::json& state) override { loader_->load_state_dict(state); }

 private:
  std::shared_ptr<data::StatefulDataLoader> loader_;
};

RewardFn as_reward_fn(std::shared_ptr<reward::RewardManager> manager) {
  return [manager](const DataProto& batch) {
    reward::RewardResult result = manager->compute(batch);
    return RewardOutput{result.reward_tensor, result.reward_extra_info};
  };
}

void check_model_folder(const std::string& key, const std::string& path) {
  const std::string dir = data::expand_user(path);
  VERL_CHECK(fs::exists(fs::path(dir) / "config.json"), "config", key, "='", path,
             "' is not a Hugging Face model folder (no config.json); make one with `verl model init`");
}

// A model whose config.json may come from model.hf_config_path: the weights' folder must exist, the config's
// folder must hold config.json.
void check_model_folders(const std::string& key, const std::string& path, const std::string& hf_config_path) {
  if (hf_config_path.empty()) return check_model_folder(key + ".path", path);
  VERL_CHECK(fs::is_directory(data::expand_user(path)), "config", key, ".path='", path,
             "' is not a folder (the model's safetensors weights; config.json from ", key, ".hf_config_path)");
  check_model_folder(key + ".hf_config_path", hf_config_path);
}

// The actor's tokenizer: model.tokenizer_path, else the model folder (verl's HFModelConfig).
tokenizer::Tokenizer load_actor_tokenizer(const config::ModelConfig& model) {
  const std::string dir = data::expand_user(model.tokenizer_dir());
  const std::string key =
      model.tokenizer_path.empty() ? "actor_rollout_ref.model.path" : "actor_rollout_ref.model.tokenizer_path";
  model::require_model_file(
      "config", key, dir, model.tokenizer_dir(), "tokenizer.json",
      model.tokenizer_path.empty() ? "set actor_rollout_ref.model.tokenizer_path to the tokenizer's folder" : "");
  return tokenizer::load_model_tokenizer(dir, model.custom_chat_template,
                                         "actor_rollout_ref.model.custom_chat_template");
}

void check_data_files(const std::string& key, const std::vector<std::string>& files) {
  VERL_CHECK(!files.empty(), "config", key, " is empty");
  for (const auto& file : data::data_files_from_config(files)) {
    VERL_CHECK(fs::is_regular_file(file), "config", key, ": '", file, "' does not exist");
  }
}

// verl's create_rl_dataset: the files read here, or a data.custom_cls class run on them (data/custom_dataset.h)
// with the resolved `data` section as its config.
std::shared_ptr<const data::RLHFDataset> create_rl_dataset(const config::PPOConfig& config,
                                                           std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                                           const std::string& resolved_yaml, bool is_train,
                                                           const nlohmann::ordered_json& filter_tools) {
  const config::DataConfig& d = config.data;
  const std::vector<std::string>& files = is_train ? d.train_files : d.val_files;
  const int64_t max_samples = is_train ? d.train_max_samples : d.val_max_samples;
  if (!d.custom_cls_path) {
    return std::make_shared<const data::RLHFDataset>(data::data_files_from_config(files), std::move(tokenizer), d,
                                                     max_samples, filter_tools);
  }
  data::CustomDatasetRequest request;
  request.path = data::expand_user(*d.custom_cls_path);
  request.name = d.custom_cls_name.value_or("");
  request.data_files = data::data_files_from_config(files);
  request.tokenizer_path = data::expand_user(config.actor_rollout_ref.model.tokenizer_dir());
  request.trust_remote_code = d.trust_remote_code;
  const config::Node root = config::parse_yaml(resolved_yaml, "the resolved config");
  const config::Node* data_section = root.find("data");
  VERL_CHECK(data_section != nullptr, "config", "the resolved config has no data section");
  request.config = config::node_to_json(*data_section);
  request.max_samples = max_samples;
  request.timeout_s = d.custom_cls_timeout;
  request.what = is_train ? "train" : "val";
  return std::make_shared<const data::RLHFDataset>(data::load_custom_dataset(request), std::move(tokenizer), d);
}

}  // namespace

RoleSetup build_role_setup(const std::shared_ptr<const config::PPOConfig>& config) {
  RoleSetup setup;
  const auto& trainer = config->trainer;
  const bool critic = need_critic(*config);
  // Co-located: every role on one pool. Split (verl's examples/split_placement/main_ppo_split.py): the actor
  // and ref on one half of the slots, the critic and reward model on the other half.
  std::string actor_pool = "global_pool";
  std::string critic_pool = "global_pool";
  if (trainer.split_placement) {
    check_split_placement(*config);
    std::vector<int> half;
    if (trainer.n_gpus_per_node % 2 == 0) {
      half.assign(static_cast<size_t>(trainer.nnodes), static_cast<int>(trainer.n_gpus_per_node / 2));
    } else {
      half.assign(static_cast<size_t>(trainer.nnodes / 2), static_cast<int>(trainer.n_gpus_per_node));
    }
    actor_pool = "actor_rollout_ref_pool";
    critic_pool = "critic_pool";
    setup.resource_pool_spec.emplace_back(actor_pool, half);
    setup.resource_pool_spec.emplace_back(critic_pool, half);
  } else {
    setup.resource_pool_spec.emplace_back(
        actor_pool, std::vector<int>(static_cast<size_t>(trainer.nnodes), static_cast<int>(trainer.n_gpus_per_node)));
  }
  if (config->actor_rollout_ref.hybrid_engine) {
    setup.role_worker_mapping[Role::ActorRollout] = workers::actor_rollout_ref_worker_factory(config, "actor_rollout");
    setup.mapping[Role::ActorRollout] = actor_pool;
  } else {
    // verl's one_step_off_policy layout: the actor trains on the trainer's devices, a Rollout role generates on
    // devices of its own (the last pool) and receives the actor's weights after every update.
    const std::string rollout_pool = "rollout_pool";
    setup.resource_pool_spec.emplace_back(
        rollout_pool, std::vector<int>(static_cast<size_t>(config->rollout.nnodes),
                                       static_cast<int>(config->rollout.n_gpus_per_node)));
    setup.role_worker_mapping[Role::Actor] = workers::actor_rollout_ref_worker_factory(config, "actor");
    setup.mapping[Role::Actor] = actor_pool;
    setup.role_worker_mapping[Role::Rollout] = workers::actor_rollout_ref_worker_factory(config, "rollout");
    setup.mapping[Role::Rollout] = rollout_pool;
  }
  if (critic) {
    setup.role_worker_mapping[Role::Critic] = workers::critic_worker_factory(config);
    setup.mapping[Role::Critic] = critic_pool;
  }
  if (config->reward_model.enable) {
    setup.role_worker_mapping[Role::RewardModel] = workers::reward_model_worker_factory(config);
    setup.mapping[Role::RewardModel] = critic_pool;
  }
  if (need_reference_policy(*config)) {
    setup.role_worker_mapping[Role::RefPolicy] = workers::actor_rollout_ref_worker_factory(config, "ref");
    setup.mapping[Role::RefPolicy] = actor_pool;
  }
  if (config->distillation.enabled) {
    // verl gives the teachers a pool of their own (distillation.n_gpus_per_node x nnodes); here they share the
    // actor's ranks, as the reference policy does.
    setup.role_worker_mapping[Role::TeacherModel] = workers::teacher_model_worker_factory(config);
    setup.mapping[Role::TeacherModel] = actor_pool;
  }
  return setup;
}

void preflight_check(const config::PPOConfig& config, const tokenizer::Tokenizer& tokenizer) {
  validate_ppo_config(config, config.trainer.nnodes * config.trainer.n_gpus_per_node);
  workers::check_trainer_device(config.trainer);  // a CUDA request without a GPU fails before any weights load
  if (!config.data.custom_cls_path) {  // a custom dataset class reads what it is given (files, folders, names)
    check_data_files("data.train_files", config.data.train_files);
    check_data_files("data.val_files", config.data.val_files);
  }
  const config::ModelConfig& actor_model = config.actor_rollout_ref.model;
  check_model_folders("actor_rollout_ref.model", actor_model.path, actor_model.hf_config_path);
  // With model.override_config applied, as the workers will build the model: a field that would not fit the
  // checkpoint's shapes is an error here, before any weights load.
  const model::HFConfig actor =
      model::load_hf_config(data::expand_user(actor_model.hf_config_dir()), actor_model.override_config);
  VERL_CHECK(static_cast<int64_t>(tokenizer.vocab_size()) <= actor.vocab_size, "config", "the tokenizer of '",
             actor_model.tokenizer_dir(), "' has ", tokenizer.vocab_size(), " tokens but the model's vocab_size is ",
             actor.vocab_size, " (actor_rollout_ref.model.",
             actor_model.tokenizer_path.empty() ? "path" : "tokenizer_path", ": tokenizer and model do not match)");
  // verl's vLLM rollout asserts the same ("model context length should be greater than total sequence length")
  // without rope_scaling; with it, the scaled length (max_position_embeddings * factor) bounds the buffers.
  const int64_t sequence = config.data.max_prompt_length + config.data.max_response_length;
  const bool scaled = actor.rope_scaling.type != model::RopeScaling::Type::None;
  const double context = static_cast<double>(actor.max_position_embeddings) *
                         (scaled ? std::max(1.0, actor.rope_scaling.factor) : 1.0);
  VERL_CHECK(static_cast<double>(sequence) <= context, "config",
             "data.max_prompt_length + data.max_response_length = ", sequence,
             " exceeds the model's max_position_embeddings ", actor.max_position_embeddings,
             scaled ? " times its rope_scaling factor" : "", " (", actor_model.hf_config_dir(), "/config.json)");
  if (need_critic(config)) {
    const config::CriticModelConfig& critic_model = config.critic.model;
    check_model_folders("critic.model", critic_model.path, critic_model.hf_config_path);
    const model::HFConfig critic =
        model::load_hf_config(data::expand_user(critic_model.hf_config_dir()), critic_model.override_config);
    VERL_CHECK(static_cast<int64_t>(tokenizer.vocab_size()) <= critic.vocab_size, "config", "the tokenizer has ",
               tokenizer.vocab_size(), " tokens but critic.model.path '", config.critic.model.path,
               "' has vocab_size ", critic.vocab_size);
  }
  if (config.reward_model.enable) {
    check_model_folder("reward_model.model.path / reward.reward_model.model_path", config.reward_model.path);
  }
  if (config.distillation.enabled) {
    // The teachers read the student's token ids (verl sends ids, not text): every id must be theirs too.
    for (const config::DistillationTeacherConfig& teacher : config.distillation.teachers) {
      const std::string key = "distillation.teacher_models." + teacher.entry + ".model_path";
      check_model_folder(key, teacher.model_path);
      const model::HFConfig hf = model::load_hf_config(data::expand_user(teacher.model_path));
      VERL_CHECK(static_cast<int64_t>(tokenizer.vocab_size()) <= hf.vocab_size, "config", "the tokenizer has ",
                 tokenizer.vocab_size(), " tokens but ", key, " '", teacher.model_path, "' has vocab_size ",
                 hf.vocab_size, " (teacher and student must share a tokenizer)");
      const config::DistillationLossConfig& loss = config.distillation.loss;
      if (algo::distillation_uses_top_k(loss)) {
        // The student reads its log-probs at the teacher's top-k tokens: every id of the teacher's must be its own,
        // and k tokens must exist.
        VERL_CHECK(hf.vocab_size <= actor.vocab_size, "config", key, " '", teacher.model_path, "' has vocab_size ",
                   hf.vocab_size, ", more than the actor's ", actor.vocab_size,
                   ": with distillation.distillation_loss.loss_mode=forward_kl_topk the student reads the teacher's "
                   "top-k token ids");
        VERL_CHECK(loss.topk <= hf.vocab_size, "config", "distillation.distillation_loss.topk=", loss.topk,
                   " is larger than the vocab_size ", hf.vocab_size, " of ", key, " '", teacher.model_path, "'");
      }
    }
  }
}

PPORunResult run_ppo(const config::PPOConfig& config, const std::string& resolved_yaml, const PPORunHooks& hooks) {
  return run_ppo_with_transport(config, resolved_yaml, hooks, nullptr);
}

PPORunResult run_ppo_with_transport(const config::PPOConfig& parsed, const std::string& resolved_yaml,
                                    const PPORunHooks& hooks, TransportFactory transport_factory) {
  auto config = std::make_shared<config::PPOConfig>(parsed);
  // Before any worker thread exists: threads started later inherit the process-wide OpenMP setting.
  runtime::configure_cpu_threads(config->trainer.num_cpu_threads);
  const config::ModelConfig& actor_model = config->actor_rollout_ref.model;
  check_model_folders("actor_rollout_ref.model", actor_model.path, actor_model.hf_config_path);
  auto tokenizer = std::make_shared<const tokenizer::Tokenizer>(load_actor_tokenizer(actor_model));
  preflight_check(*config, *tokenizer);
  // Loaded before the data and the weights, so that a class that cannot be imported stops the run at once.
  std::shared_ptr<const CheckpointCallback> checkpoint_callback;
  if (!config->trainer.checkpoint_callback_class.empty()) {
    checkpoint_callback = std::make_shared<const CheckpointCallback>(
        config->trainer.checkpoint_callback_class,
        config::node_to_json(config::parse_yaml(resolved_yaml, "the resolved config")),
        config->trainer.checkpoint_callback_timeout);
  }

  // Reward managers: training prints no samples, validation prints one per data source (num_examine).
  std::shared_ptr<reward::RewardManager> reward_manager = reward::load_reward_manager(*config, tokenizer, 0);
  std::shared_ptr<reward::RewardManager> val_reward_manager = reward::load_reward_manager(*config, tokenizer, 1);

  RoleSetup roles = build_role_setup(config);
  single_controller::ResourcePoolManager resource_pool_manager(roles.resource_pool_spec, roles.mapping);

  // verl's create_rl_dataset / create_rl_sampler / _create_dataloader.
  const nlohmann::ordered_json filter_tools = workers::dataset_filter_tool_schemas(*config);
  auto train_dataset = create_rl_dataset(*config, tokenizer, resolved_yaml, /*is_train=*/true, filter_tools);
  auto val_dataset = create_rl_dataset(*config, tokenizer, resolved_yaml, /*is_train=*/false, filter_tools);
  const uint64_t sampler_seed = static_cast<uint64_t>(config->data.seed.value_or(1));
  auto train_loader = std::make_shared<DataLoaderAdapter>(std::make_shared<data::StatefulDataLoader>(
      train_dataset, config->data.gen_batch_size.value_or(config->data.train_batch_size), config->data.shuffle,
      sampler_seed, /*drop_last=*/true));  // verl: data.gen_batch_size or data.train_batch_size prompts per batch
  const int64_t val_batch_size = config->data.val_batch_size.value_or(val_dataset->size());
  auto val_loader = std::make_shared<DataLoaderAdapter>(std::make_shared<data::StatefulDataLoader>(
      val_dataset, std::max<int64_t>(1, val_batch_size), config->data.validation_shuffle, sampler_seed,
      /*drop_last=*/false));

  PPOTrainerOptions options;
  options.config_yaml = resolved_yaml;
  if (checkpoint_callback) {
    options.on_checkpoint_saved = [checkpoint_callback](int64_t global_step, const std::string& checkpoint_dir) {
      checkpoint_callback->on_save(global_step, checkpoint_dir);
    };
  }
  options.seqlen_partitioner = workers::get_seqlen_balanced_partitions;
  options.sequence_workload = workers::sequence_workload;
  options.on_log = hooks.on_log;
  options.transport_factory = std::move(transport_factory);
  PPOTrainer trainer(config, tokenizer, roles.role_worker_mapping, std::move(resource_pool_manager),
                     as_reward_fn(reward_manager), as_reward_fn(val_reward_manager), train_loader, val_loader,
                     options);
  trainer.init_workers();
  trainer.fit();
  return PPORunResult{trainer.run_dir()};
}

void export_actor_checkpoint(const std::string& checkpoint_dir, const std::string& out_dir, bool merge_lora) {
  fs::path dir(checkpoint_dir);
  if (fs::is_directory(dir / "actor")) dir /= "actor";
  VERL_CHECK(fs::is_directory(dir), "export", "checkpoint folder '", checkpoint_dir, "' does not exist");
  workers::export_hf_model(dir.string(), out_dir, merge_lora);
}

}  // namespace verl::trainer
