#include "verl/workers/teacher_model_worker.h"

#include <filesystem>

#include "verl/algo/distillation_loss.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"
#include "verl/model/weights.h"
#include "verl/workers/checkpoint_rank_files.h"
#include "verl/workers/micro_batches.h"
#include "verl/workers/worker_device.h"

namespace verl::workers {

namespace fs = std::filesystem;
using protocol::DataProto;
using single_controller::Dispatch;
using single_controller::Execute;

namespace {

constexpr const char* kTeacherModelWorkerComponent = "teacher";

std::string teacher_key_path(const config::DistillationTeacherConfig& teacher, const std::string& field) {
  return "distillation.teacher_models." + teacher.entry + "." + field;
}

}  // namespace

TeacherModelWorker::TeacherModelWorker(const single_controller::WorkerContext& context,
                                       std::shared_ptr<const config::PPOConfig> config)
    : Worker(context), config_(std::move(config)) {
  VERL_ASSERT(config_ != nullptr, kTeacherModelWorkerComponent, "TeacherModelWorker needs a config");
  VERL_CHECK(config_->distillation.enabled && !config_->distillation.teachers.empty(), kTeacherModelWorkerComponent,
             "a teacher worker was requested but distillation.enabled is false");
  register_method({"init_model", Dispatch::OneToAll, Execute::All, ""},
                  [this](const DataProto& in) { return init_model(in); });
  register_method({"compute_teacher_log_prob", Dispatch::DpComputeProto, Execute::All, ""},
                  [this](const DataProto& in) { return compute_teacher_log_prob(in); });
}

DataProto TeacherModelWorker::init_model(const DataProto&) {
  device_ = worker_device(config_->trainer, rank());
  modules_.clear();
  for (const config::DistillationTeacherConfig& teacher : config_->distillation.teachers) {
    const std::string path = expand_user(teacher.model_path);
    VERL_CHECK(fs::is_regular_file(fs::path(path) / "config.json"), kTeacherModelWorkerComponent,
               teacher_key_path(teacher, "model_path"), " '", path,
               "' is not a model folder (config.json + safetensors weights)");
    model::LoadOptions options;
    // verl's teacher inference.dtype follows rollout.dtype; the same resolution as the rollout's (bf16 on a GPU,
    // fp32 on the CPU unless set). Log-probs come out in fp32 either way.
    options.dtype = resolved_precision(config_->actor_rollout_ref.rollout.dtype, device_);
    model::CausalLM module = model::load_model(path, options);
    module->to(device_);
    module->remove_padding = config_->actor_rollout_ref.model.use_remove_padding;
    module->eval();
    for (auto& parameter : module->parameters()) parameter.set_requires_grad(false);
    modules_.push_back(std::move(module));
  }
  return DataProto();
}

int64_t TeacherModelWorker::top_k() const {
  const config::DistillationLossConfig& loss = config_->distillation.loss;
  return algo::distillation_uses_top_k(loss) ? loss.topk : 0;
}

TeacherModelWorker::Scores TeacherModelWorker::teacher_scores(size_t index, const DataProto& rows) {
  const config::DistillationTeacherConfig& teacher = config_->distillation.teachers[index];
  model::CausalLM& module = modules_[index];
  const torch::Tensor& input_ids = rows.tensor("input_ids");
  // The student's tokens must be the teacher's too (verl sends token ids; vLLM rejects ids past its vocabulary).
  const int64_t vocab = module->config.vocab_size;
  const int64_t largest = (input_ids * rows.tensor("attention_mask").to(input_ids.dtype())).max().item<int64_t>();
  VERL_CHECK(largest < vocab, kTeacherModelWorkerComponent, "token id ", largest,
             " of the student's batch is outside the vocabulary (", vocab, " tokens) of the teacher ",
             teacher_key_path(teacher, "model_path"), " '", teacher.model_path,
             "': teacher and student must share a tokenizer");
  model::TopKQuery query;
  query.top_k = top_k();
  VERL_CHECK(query.top_k <= vocab, kTeacherModelWorkerComponent, "distillation.distillation_loss.topk=", query.top_k,
             " is larger than the vocabulary (", vocab, " tokens) of the teacher ",
             teacher_key_path(teacher, "model_path"), " '", teacher.model_path, "'");

  const int64_t budget = std::max<int64_t>(teacher.max_num_batched_tokens, input_ids.size(1));
  const MicroBatches micro =
      dynamic_micro_batches(rows, budget, teacher_key_path(teacher, "inference.max_num_batched_tokens"));
  std::vector<torch::Tensor> log_probs, ids;
  for (const auto& part : micro.parts) {
    // verl's teacher: prompt log-probs at temperature 1, whatever the rollout's temperature.
    auto out = model::response_log_probs(
        module, part.tensor("input_ids").to(device_), part.tensor("attention_mask").to(device_),
        part.tensor("position_ids").to(device_), part.tensor("responses").to(device_),
        /*temperature=*/1.0, /*with_entropy=*/false, /*with_sum_pi_squared=*/false, query);
    if (query.top_k > 0) {
      log_probs.push_back(out.top_k.top_k_log_probs.to(torch::kCPU));
      ids.push_back(out.top_k.top_k_ids.to(torch::kCPU));
    } else {
      log_probs.push_back(out.log_probs.to(torch::kCPU));
    }
  }
  return {micro.restore(log_probs), query.top_k > 0 ? micro.restore(ids) : torch::Tensor()};
}

DataProto TeacherModelWorker::compute_teacher_log_prob(const DataProto& data) {
  VERL_CHECK(!modules_.empty(), kTeacherModelWorkerComponent, "compute_teacher_log_prob called before init_model");
  for (const char* name : {"input_ids", "attention_mask", "position_ids", "responses"}) {
    VERL_CHECK(data.has_tensor(name), kTeacherModelWorkerComponent,
               "compute_teacher_log_prob: the batch has no tensor '", name,
               "' (needs input_ids, attention_mask, position_ids, responses)");
  }
  const int64_t B = data.size();
  const int64_t R = data.tensor("responses").size(1);
  const int64_t k = top_k();
  const auto as_proto = [&](const Scores& scores) {
    if (k == 0) return DataProto::from_dict({{"teacher_logprobs", scores.log_probs}});
    return DataProto::from_dict({{"teacher_logprobs", scores.log_probs}, {"teacher_ids", scores.ids}});
  };
  // The rows of several teachers (or none) are copied into zeros of the output's shape.
  const auto zeros = [&]() -> Scores {
    std::vector<int64_t> shape = {B, R};
    if (k > 0) shape.push_back(k);
    return {torch::zeros(shape, torch::kFloat32), k > 0 ? torch::zeros(shape, torch::kInt64) : torch::Tensor()};
  };
  if (B == 0) return as_proto(zeros());
  torch::NoGradGuard no_grad;
  const DataProto inputs = data.select({"input_ids", "attention_mask", "position_ids", "responses"});
  const auto& teachers = config_->distillation.teachers;
  if (teachers.size() == 1) return as_proto(teacher_scores(0, inputs));

  // Several teachers: rows by their routing value.
  const std::string& column = config_->distillation.teacher_key;
  VERL_CHECK(data.non_tensor_batch.count(column) > 0, kTeacherModelWorkerComponent, "distillation.teacher_key '",
             column, "' is not a column of the batch; multi-teacher distillation routes rows by it");
  const auto& values = data.column(column);
  std::vector<std::vector<int64_t>> rows_of(teachers.size());
  std::vector<std::string> keys;
  for (const auto& teacher : teachers) keys.push_back(teacher.key);
  for (int64_t i = 0; i < B; ++i) {
    VERL_CHECK(values[i].is_string(), kTeacherModelWorkerComponent, "row ", i, "'s ", column,
               " must be a string to route it to a teacher, got ", values[i].dump());
    const std::string& value = values[i].get_ref<const std::string&>();
    const auto it = std::find(keys.begin(), keys.end(), value);
    VERL_CHECK(it != keys.end(), kTeacherModelWorkerComponent, "no teacher has the key '", value, "' (row ", i, "'s ",
               column, "); the teachers' keys: ", join(keys, ", "));
    rows_of[it - keys.begin()].push_back(i);
  }
  Scores out = zeros();
  for (size_t t = 0; t < teachers.size(); ++t) {
    if (rows_of[t].empty()) continue;
    const torch::Tensor index = torch::tensor(rows_of[t], torch::kInt64);
    const Scores scores = teacher_scores(t, inputs.index(rows_of[t]));
    out.log_probs.index_copy_(0, index, scores.log_probs);
    if (k > 0) out.ids.index_copy_(0, index, scores.ids);
  }
  return as_proto(out);
}

single_controller::WorkerFactory teacher_model_worker_factory(std::shared_ptr<const config::PPOConfig> config) {
  return [config](const single_controller::WorkerContext& context) -> std::unique_ptr<single_controller::Worker> {
    return std::make_unique<TeacherModelWorker>(context, config);
  };
}

}  // namespace verl::workers
