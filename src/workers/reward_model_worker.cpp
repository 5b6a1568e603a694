#include "verl/workers/reward_model_worker.h"

#include <filesystem>

#include "verl/common/error.h"
#include "verl/io/safetensors.h"
#include "verl/model/weights.h"
#include "verl/tokenizer/chat_template.h"
#include "verl/workers/checkpoint_files.h"
#include "verl/workers/micro_batches.h"

namespace verl::workers {

namespace fs = std::filesystem;
using protocol::DataProto;
using single_controller::Dispatch;
using single_controller::Execute;

namespace {

constexpr const char* kRewardModelWorkerComponent = "reward_model";

// Python's str.replace(old, "") for every occurrence.
std::string remove_all(std::string text, const std::string& old) {
  if (old.empty()) return text;
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = text.find(old, pos)) != std::string::npos; pos = at + old.size()) out.append(text, pos, at - pos);
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace

RewardModelWorker::RewardModelWorker(const single_controller::WorkerContext& context,
                                     std::shared_ptr<const config::PPOConfig> config)
    : Worker(context), config_(std::move(config)) {
  VERL_ASSERT(config_ != nullptr, kRewardModelWorkerComponent, "RewardModelWorker needs a config");
  const config::RewardModelConfig& rm = config_->reward_model;
  VERL_CHECK(rm.enable, kRewardModelWorkerComponent,
             "a reward model worker was requested but reward_model.enable is false");
  if (!rm.use_dynamic_bsz) {
    VERL_CHECK(rm.micro_batch_size_per_gpu.has_value(), kRewardModelWorkerComponent,
               "reward_model.micro_batch_size_per_gpu must be set when reward_model.use_dynamic_bsz is false");
  } else {
    VERL_CHECK(rm.forward_max_token_len_per_gpu > 0, kRewardModelWorkerComponent,
               "reward_model.forward_max_token_len_per_gpu must be > 0, got ", rm.forward_max_token_len_per_gpu);
  }
  model_path_ = expand_user(rm.path);
  register_method({"init_model", Dispatch::OneToAll, Execute::All, ""},
                  [this](const DataProto& in) { return init_model(in); });
  register_method({"compute_rm_score", Dispatch::DpComputeProto, Execute::All, ""},
                  [this](const DataProto& in) { return compute_rm_score(in); });
}

DataProto RewardModelWorker::init_model(const DataProto&) {
  const config::RewardModelConfig& rm = config_->reward_model;
  VERL_CHECK(fs::is_directory(model_path_), kRewardModelWorkerComponent, "reward_model.model.path '", model_path_,
             "' is not a model folder (config.json + safetensors weights)");
  {
    io::SafetensorsCheckpoint weights(model_path_);
    VERL_CHECK(weights.contains("score.weight"), kRewardModelWorkerComponent, "reward_model.model.path '", model_path_,
               "' has no score.weight: a reward model needs a trained value head (a <Family>ForTokenClassification "
               "checkpoint with num_labels=1), not a language model");
  }
  model::LoadOptions options;
  options.head = model::HeadKind::Value;
  options.dtype = torch::kFloat32;
  module_ = std::make_unique<model::CausalLM>(model::load_model(model_path_, options));
  (*module_)->eval();
  if (rm.input_tokenizer) {
    const std::string input_dir = expand_user(*rm.input_tokenizer);
    VERL_CHECK(fs::exists(fs::path(model_path_) / "tokenizer.json"), kRewardModelWorkerComponent,
               "reward_model.model.path '", model_path_,
               "' has no tokenizer.json to re-encode the chat with (verl's chat-template switch, on "
               "because reward_model.model.input_tokenizer is set); set reward_model.model.input_tokenizer=null to "
               "score the policy's own tokens");
    input_tokenizer_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(input_dir));
    rm_tokenizer_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(model_path_));
    VERL_CHECK(!rm_tokenizer_->config().chat_template.empty(), kRewardModelWorkerComponent,
               "the reward model's tokenizer in '", model_path_,
               "' has no chat template; set reward_model.model.input_tokenizer=null to score the "
               "policy's own tokens");
    auto pad = rm_tokenizer_->pad_token_id();
    if (!pad) pad = rm_tokenizer_->eos_token_id();  // verl sets pad_token = eos_token when missing
    VERL_CHECK(pad.has_value(), kRewardModelWorkerComponent, "the reward model's tokenizer in '", model_path_,
               "' has neither a pad token nor an eos token to pad with");
    pad_token_id_ = *pad;
  }
  return DataProto();
}

model::CausalLM& RewardModelWorker::module() {
  VERL_CHECK(module_ != nullptr, kRewardModelWorkerComponent, "module() called before init_model");
  return *module_;
}

DataProto RewardModelWorker::switch_chat_template(const DataProto& data) const {
  VERL_CHECK(data.non_tensor_batch.count("raw_prompt") > 0, kRewardModelWorkerComponent,
             "compute_rm_score re-encodes the chat for the reward model (reward_model.model.input_tokenizer is set) "
             "and needs the raw_prompt column: set data.return_raw_chat=true");
  const auto& raw_prompts = data.column("raw_prompt");
  const torch::Tensor responses = data.tensor("responses").to(torch::kCPU).to(torch::kInt64).contiguous();
  const torch::Tensor attention_mask = data.tensor("attention_mask").to(torch::kCPU).to(torch::kInt64);
  const int64_t B = responses.size(0), R = responses.size(1);
  const int64_t max_length = config_->reward_model.max_length.value_or(attention_mask.size(1));
  const torch::Tensor valid_lengths = attention_mask.narrow(1, attention_mask.size(1) - R, R).sum(1);
  const std::string eos_text = input_tokenizer_->config().eos_token.value_or("");

  torch::Tensor ids = torch::full({B, max_length}, pad_token_id_, torch::kInt64);
  torch::Tensor mask = torch::zeros({B, max_length}, torch::kInt64);
  for (int64_t i = 0; i < B; ++i) {
    VERL_CHECK(raw_prompts[i].is_array(), kRewardModelWorkerComponent, "raw_prompt of row ", i,
               " must be a list of chat messages, got ", raw_prompts[i].type_name());
    const int64_t valid = valid_lengths[i].item<int64_t>();
    const int64_t* row = responses.data_ptr<int64_t>() + i * R;
    std::vector<int32_t> response_ids(row, row + valid);
    const std::string response = remove_all(input_tokenizer_->decode(response_ids), eos_text);
    tokenizer::ChatTemplateInputs chat;
    for (const auto& message : raw_prompts[i]) chat.messages.push_back(nlohmann::ordered_json(message));
    chat.messages.push_back({{"role", "assistant"}, {"content", response}});
    chat.add_generation_prompt = false;
    chat.limits.timeout_s = config_->data.chat_template_timeout;
    const std::string text = tokenizer::apply_chat_template(*rm_tokenizer_, chat);
    std::vector<int32_t> encoded = rm_tokenizer_->encode(text, /*add_special_tokens=*/false);
    // verl's postprocess_data(left_pad=False, truncation="right"): keep the first max_length tokens.
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(encoded.size()), max_length);
    for (int64_t t = 0; t < n; ++t) {
      ids[i][t] = static_cast<int64_t>(encoded[t]);
      mask[i][t] = 1;
    }
  }
  return DataProto::from_dict(
      {{"input_ids", ids}, {"attention_mask", mask}, {"position_ids", model::position_ids_from_mask(mask)}});
}

DataProto RewardModelWorker::reward_model_inputs(const DataProto& data) const {
  for (const char* key : {"input_ids", "attention_mask", "position_ids", "responses"}) {
    VERL_CHECK(data.has_tensor(key), kRewardModelWorkerComponent, "compute_rm_score: the batch has no tensor '", key,
               "' (needs input_ids, attention_mask, position_ids, responses)");
  }
  if (input_tokenizer_) return switch_chat_template(data);
  return data.select({"input_ids", "attention_mask", "position_ids"});
}

DataProto RewardModelWorker::compute_rm_score(const DataProto& data) {
  VERL_CHECK(module_ != nullptr, kRewardModelWorkerComponent, "compute_rm_score called before init_model");
  const config::RewardModelConfig& rm = config_->reward_model;
  DataProto inputs = reward_model_inputs(data);  // checks the keys
  const torch::Tensor& attention_mask = data.tensor("attention_mask");
  const int64_t B = data.size();
  const int64_t R = data.tensor("responses").size(1);
  if (B == 0) return DataProto::from_dict({{"rm_scores", torch::zeros({0, R}, torch::kFloat32)}});

  torch::Tensor scores;
  {
    torch::NoGradGuard no_grad;
    MicroBatches micro =
        rm.use_dynamic_bsz
            ? dynamic_micro_batches(inputs, rm.forward_max_token_len_per_gpu, "reward_model.forward_max_token_len_per_gpu")
            : fixed_micro_batches(inputs, rm.micro_batch_size_per_gpu.value_or(0), "reward_model.micro_batch_size_per_gpu");
    std::vector<torch::Tensor> outputs;
    for (const auto& part : micro.parts) {
      outputs.push_back(model::reward_scores(*module_, part.tensor("input_ids"), part.tensor("attention_mask"),
                                             part.tensor("position_ids")));
    }
    scores = micro.restore(outputs);  // [B] fp32
  }
  // verl's _expand_to_token_level on the policy layout: the score at argmax(position_ids * attention_mask).
  const torch::Tensor position_ids = data.tensor("position_ids");
  VERL_CHECK(position_ids.dim() == 2, kRewardModelWorkerComponent, "position_ids must be [batch, length], got ",
             position_ids.sizes());
  const torch::Tensor last = (position_ids.to(torch::kInt64) * attention_mask.to(torch::kInt64)).argmax(-1);
  torch::Tensor token_level = torch::zeros(attention_mask.sizes(), torch::kFloat32);
  token_level.index_put_({torch::arange(B, torch::kInt64), last.to(torch::kCPU)}, scores.to(torch::kCPU));
  return DataProto::from_dict({{"rm_scores", token_level.narrow(1, token_level.size(1) - R, R).contiguous()}});
}

single_controller::WorkerFactory reward_model_worker_factory(std::shared_ptr<const config::PPOConfig> config) {
  return [config](const single_controller::WorkerContext& context) -> std::unique_ptr<single_controller::Worker> {
    return std::make_unique<RewardModelWorker>(context, config);
  };
}

}  // namespace verl::workers
