// SFTTrainer checkpoints (verl's fsdp_sft_trainer save_checkpoint / load_checkpoint), one folder per step,
// staged and published whole, so a kill mid-save leaves the previous checkpoint as the one resume picks:
//   {default_local_dir}/global_step_N/huggingface/                    the model as HF loads it (LoRA: PEFT's
//                                                                     adapter folder)
//   {default_local_dir}/global_step_N/model_world_size_1_rank_0.safetensors  trained parameters, exact (LoRA:
//                                                                     the adapters), with a .crc32c sidecar
//   {default_local_dir}/global_step_N/optim_world_size_1_rank_0.pt    AdamW state (sharded under mpirun, below)
//   {default_local_dir}/global_step_N/extra_state_world_size_1_rank_0.json   {"lr_scheduler", "global_step"}
//   {default_local_dir}/global_step_N/data.json                       {"version", "global_step", "step_metrics"}
//   {default_local_dir}/latest_checkpointed_iteration.txt             "N", written after the folder
// No RNG state: the data order is a function of trainer.seed + epoch and a step draws no random numbers.
// Under mpirun world rank 0 writes the model, once (every rank holds the same whole model: the `world_size_1_rank_0`
// name says that one copy is the whole); the optimizer state is sharded (engine.fsdp_size), so each rank of the
// first shard group writes its own optim_world_size_{G}_rank_{g}.pt into rank 0's staged folder before rank 0
// publishes it. Every rank loads; the optimizer's shards need the same group size G (an error naming the file).
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "sft_trainer_impl.h"
#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/logging.h"
#include "verl/model/lora.h"
#include "verl/model/weights.h"
#include "verl/trainer/checkpoint_paths.h"
#include "verl/trainer/sft_trainer.h"
#include "verl/trainer/step_metrics_record.h"
#include "verl/trainer/tracking.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/optimizer.h"

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

constexpr int kSFTStateVersion = 1;

nlohmann::json read_checkpoint_json(const fs::path& path) {
  std::ifstream in(path);
  VERL_CHECK(in.good(), "sft", "cannot read '", path.string(), "'");
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), path.string());
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL("sft", "'", path.string(), "' is not valid JSON: ", e.what());
  }
}

}  // namespace

void SFTTrainer::save_checkpoint(int64_t step, const std::map<std::string, double>& step_metrics) {
  const std::string& root = config_.trainer.default_local_dir;
  const bool writes_model = world_->rank() == 0;
  std::optional<StagedDirectory> staged;
  std::string staging;
  if (writes_model) {
    std::error_code ec;
    fs::create_directories(root, ec);
    VERL_CHECK(!ec, "sft", "cannot create checkpoint folder '", root, "': ", ec.message());
    staged.emplace(global_step_dir(root, step));
    staging = staged->path();
    write_checkpoint(staging, step, step_metrics);
  }
  // This rank's optimizer state: its shard (the first shard group's ranks write theirs), or rank 0's whole one.
  if (impl_->shard) world_->broadcast_bytes(staging, 0);
  if (world_->rank() < impl_->shard_ranks()) {  // the first shard group: world ranks 0 .. shard_ranks - 1
    workers::save_optimizer_state(*impl_->optimizer, (fs::path(staging) / impl_->optim_file_name()).string());
  }
  world_->barrier();  // every file is in the staged folder
  if (writes_model) {
    staged->commit();
    write_latest_tracker(root, step);
    // Rotation finds the steps by their huggingface/ folder; the rest of an old step goes with it.
    std::error_code ec;
    for (const std::string& hf : rotate_checkpoints(root, "huggingface", config_.trainer.max_ckpt_to_keep)) {
      fs::remove_all(fs::path(hf).parent_path(), ec);
    }
  }
  world_->barrier();  // the checkpoint is published before any rank goes on
}

void SFTTrainer::write_checkpoint(const std::string& staging, int64_t step,
                                  const std::map<std::string, double>& step_metrics) {
  const fs::path dir = staging;
  const std::string hf = (dir / "huggingface").string();
  std::error_code ec;
  fs::create_directories(hf, ec);
  VERL_CHECK(!ec, "sft", "cannot create checkpoint folder '", hf, "': ", ec.message());
  if (model::lora_state(model_) != nullptr) {
    // verl saves the PEFT model: its adapter folder (adapter_model.safetensors + adapter_config.json).
    model::save_peft_adapter(model_, hf, config_.partial_pretrain);
    workers::copy_tokenizer_files(config_.tokenizer_dir(), hf);
    model::save_lora_state(model_, (dir / workers::model_file_name(1, 0)).string());
  } else {
    model::SaveOptions options;
    options.tokenizer_dir = config_.tokenizer_dir();
    model::save_model(model_, hf, options);
    workers::save_model_file(model_, nullptr, (dir / workers::model_file_name(1, 0)).string());
  }
  const nlohmann::json extra = {{"lr_scheduler", impl_->lr_scheduler->state_dict()}, {"global_step", step}};
  write_file_atomic((dir / workers::extra_state_file_name(1, 0)).string(), extra.dump(2) + "\n");
  nlohmann::json state = {
      {"format", "verl.cpp sft trainer state"}, {"version", kSFTStateVersion}, {"global_step", step}};
  if (!step_metrics.empty()) state["step_metrics"] = step_metrics_record(step_metrics);
  write_file_atomic((dir / "data.json").string(), state.dump(1) + "\n");
}

int64_t SFTTrainer::load_checkpoint(Tracking* tracking) {
  const auto& t = config_.trainer;
  const std::optional<std::string> folder = resolve_resume_path(t.resume_mode, t.default_local_dir, t.resume_from_path);
  if (!folder) return 0;
  const int64_t step = global_step_from_path(*folder);
  const fs::path dir = *folder;
  const fs::path weights = dir / workers::model_file_name(1, 0);
  VERL_CHECK(fs::exists(weights), "sft", "checkpoint '", dir.string(), "' has no training state (",
             weights.filename().string(), "; an SFT checkpoint of an older verl.cpp holds only huggingface/): "
             "set trainer.resume_mode=disable or another trainer.default_local_dir");
  VERL_LOG(Info, "sft") << "resuming from " << dir.string() << " (global step " << step << ")";
  if (model::lora_state(model_)) {
    model::load_lora_state(model_, weights.string());
  } else {
    workers::load_model_file(model_, nullptr, weights.string());
  }
  const std::string optim_name = impl_->optim_file_name();
  workers::check_checkpoint_rank_file(dir.string(), optim_name, impl_->shard_ranks());
  workers::load_optimizer_state(*impl_->optimizer, (dir / optim_name).string());
  const fs::path extra_path = dir / workers::extra_state_file_name(1, 0);
  const nlohmann::json extra = read_checkpoint_json(extra_path);
  VERL_CHECK(extra.is_object() && extra.contains("lr_scheduler"), "sft", "'", extra_path.string(),
             "' lacks lr_scheduler");
  impl_->lr_scheduler->load_state_dict(extra["lr_scheduler"]);

  const fs::path state_path = dir / "data.json";
  const nlohmann::json state = read_checkpoint_json(state_path);
  VERL_CHECK(state.is_object() && state.contains("version") && state["version"].is_number_integer() &&
                 state["version"].get<int64_t>() == kSFTStateVersion,
             "sft", "'", state_path.string(), "' is not a version ", kSFTStateVersion, " SFT trainer state");
  if (tracking == nullptr) return step;  // only world rank 0 logs
  if (auto line = unlogged_step_metrics(state, state_path.string(), t.logger, t.default_local_dir, step)) {
    VERL_LOG(Info, "sft") << "step " << step << "'s metrics were not in " << t.default_local_dir
                          << "/metrics.jsonl (the run stopped right after its checkpoint); logging them from "
                          << state_path.string();
    tracking->log(*line, step);
  }
  return step;
}

}  // namespace verl::trainer
