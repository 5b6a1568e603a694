// TeacherModelWorker (distillation's teachers): teacher_logprobs are the teacher's log-probs of each response token
// at temperature 1 (the rollout's temperature does not matter) with the weights in rollout.dtype, 0 at padding, the
// same whatever the token budget or the number of slots; several teachers each score the rows of their key; a key no
// teacher has, and a token past the teacher's vocabulary, are one-line errors.
#include <gtest/gtest.h>

#include "unit/workers/worker_test_util.h"
#include "verl/single_controller/worker_group.h"
#include "verl/workers/teacher_model_worker.h"

namespace verl::workers {
namespace {

using protocol::DataProto;
using protocol::Json;
using single_controller::WorkerContext;

std::unique_ptr<TeacherModelWorker> make_teacher_worker(const std::vector<std::string>& overrides) {
  auto worker = std::make_unique<TeacherModelWorker>(WorkerContext{0, 1, "teacher"},
                                                     test::ppo_config(test::with(overrides, {"trainer.device=cpu"})));
  worker->init_model(DataProto());
  return worker;
}

std::vector<std::string> one_teacher(const std::string& dir, int64_t token_budget) {
  return {"distillation.enabled=true", "distillation.teacher_models.teacher_model.model_path=" + dir,
          "distillation.teacher_models.teacher_model.inference.max_num_batched_tokens=" + std::to_string(token_budget),
          "actor_rollout_ref.rollout.temperature=0.7", "trainer.device=cpu"};
}

// The teacher's log-probs computed here from the model itself: log_softmax of the logits at the position before
// each response token (temperature 1), 0 where the response is padding.
torch::Tensor expected_teacher_log_probs(const std::string& dir, const DataProto& batch) {
  torch::NoGradGuard no_grad;
  model::CausalLM m = model::load_model(dir, model::LoadOptions{});
  const torch::Tensor logits =
      m->forward(batch.tensor("input_ids"), batch.tensor("attention_mask"), batch.tensor("position_ids"));
  const int64_t R = batch.tensor("responses").size(1);
  const int64_t L = batch.tensor("input_ids").size(1);
  const torch::Tensor log_probs = torch::log_softmax(logits.narrow(1, L - R - 1, R).to(torch::kFloat64), -1);
  const torch::Tensor picked =
      log_probs.gather(-1, batch.tensor("responses").unsqueeze(-1)).squeeze(-1).to(torch::kFloat32);
  return picked * batch.tensor("response_mask").to(torch::kFloat32);
}

TEST(TeacherModelWorker, LogProbsAreTheTeachersAtTemperatureOneWhateverTheBudgetOrSlots) {
  const std::string dir = test::make_lm_folder("teacher_logprobs_lm", 17);
  const DataProto batch = test::make_ppo_batch(5, 4, 3, 29);
  const torch::Tensor got =
      make_teacher_worker(one_teacher(dir, 8192))->compute_teacher_log_prob(batch).tensor("teacher_logprobs");
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(got.scalar_type(), torch::kFloat32);
  const torch::Tensor expected = expected_teacher_log_probs(dir, batch);
  EXPECT_LT((got - expected).abs().max().item<double>(), 2e-5) << got << expected;
  EXPECT_EQ((got * (1 - batch.tensor("response_mask"))).abs().max().item<float>(), 0.0f);

  // A budget of one row per forward: the same numbers.
  const torch::Tensor row_by_row =
      make_teacher_worker(one_teacher(dir, 1))->compute_teacher_log_prob(batch).tensor("teacher_logprobs");
  EXPECT_TRUE(torch::allclose(row_by_row, got, 1e-5, 1e-6));
  // rollout.dtype (verl's teacher inference.dtype follows it): bf16 weights, fp32 log-probs near the fp32 ones.
  const torch::Tensor in_bf16 =
      make_teacher_worker(test::with(one_teacher(dir, 8192), {"actor_rollout_ref.rollout.dtype=bfloat16"}))
          ->compute_teacher_log_prob(batch)
          .tensor("teacher_logprobs");
  EXPECT_EQ(in_bf16.scalar_type(), torch::kFloat32);
  const double bf16_gap = (in_bf16 - got).abs().max().item<double>();
  EXPECT_GT(bf16_gap, 0.0) << "rollout.dtype=bfloat16 was not applied";
  EXPECT_LT(bf16_gap, 0.1);
  // Through a worker group of 2 slots: same numbers, original order.
  auto transport = std::make_shared<single_controller::InProcessTransport>(
      "teacher", 2, teacher_model_worker_factory(test::ppo_config(one_teacher(dir, 8192))));
  single_controller::WorkerGroup group("teacher", transport);
  group.call("init_model");
  EXPECT_TRUE(
      torch::allclose(group.call("compute_teacher_log_prob", batch).tensor("teacher_logprobs"), got, 1e-5, 1e-6));
}

TEST(TeacherModelWorker, TopKLossGetsTheTeachersTopKLogProbsAndIds) {
  const std::string dir = test::make_lm_folder("teacher_top_k_lm", 19);
  const DataProto batch = test::make_ppo_batch(5, 4, 3, 37);
  const std::vector<std::string> top_k = {"distillation.distillation_loss.loss_mode=forward_kl_topk",
                                          "distillation.distillation_loss.topk=3"};
  const DataProto got = make_teacher_worker(test::with(one_teacher(dir, 8192), top_k))->compute_teacher_log_prob(batch);
  const torch::Tensor log_probs = got.tensor("teacher_logprobs"), ids = got.tensor("teacher_ids");
  ASSERT_EQ(log_probs.sizes(), (std::vector<int64_t>{5, 3, 3}));
  ASSERT_EQ(ids.sizes(), (std::vector<int64_t>{5, 3, 3}));
  EXPECT_EQ(log_probs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(ids.scalar_type(), torch::kInt64);
  // The reference: log_softmax of the model's logits before each response token, at temperature 1.
  torch::Tensor reference;
  {
    torch::NoGradGuard no_grad;
    model::CausalLM m = model::load_model(dir, model::LoadOptions{});
    const torch::Tensor logits =
        m->forward(batch.tensor("input_ids"), batch.tensor("attention_mask"), batch.tensor("position_ids"));
    const int64_t L = batch.tensor("input_ids").size(1);
    reference = torch::log_softmax(logits.narrow(1, L - 3 - 1, 3).to(torch::kFloat64), -1);
  }
  const auto [want_log_probs, want_ids] = reference.topk(3, -1);
  const torch::Tensor valid = batch.tensor("response_mask").to(torch::kBool).unsqueeze(-1).expand({5, 3, 3});
  EXPECT_LT((log_probs.to(torch::kFloat64) - want_log_probs).masked_select(valid).abs().max().item<double>(), 2e-5);
  EXPECT_TRUE(torch::equal(ids.masked_select(valid), want_ids.masked_select(valid)));
  // Largest first, as vLLM ranks them.
  EXPECT_TRUE(torch::all(log_probs.narrow(2, 0, 1) >= log_probs.narrow(2, 1, 1)).item<bool>());

  // Row by row and through 2 slots: the same numbers in the original order.
  const DataProto row_by_row =
      make_teacher_worker(test::with(one_teacher(dir, 1), top_k))->compute_teacher_log_prob(batch);
  EXPECT_TRUE(torch::allclose(row_by_row.tensor("teacher_logprobs"), log_probs, 1e-5, 1e-6));
  auto transport = std::make_shared<single_controller::InProcessTransport>(
      "teacher", 2, teacher_model_worker_factory(test::ppo_config(test::with(one_teacher(dir, 8192), top_k))));
  single_controller::WorkerGroup group("teacher", transport);
  group.call("init_model");
  const DataProto grouped = group.call("compute_teacher_log_prob", batch);
  EXPECT_TRUE(torch::allclose(grouped.tensor("teacher_logprobs"), log_probs, 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(grouped.tensor("teacher_ids").masked_select(valid), ids.masked_select(valid)));

  // A top-k past the teacher's vocabulary is an error naming the key.
  const std::string message = test::error_text([&] {
    make_teacher_worker(test::with(one_teacher(dir, 8192), {"distillation.distillation_loss.loss_mode=forward_kl_topk",
                                                            "distillation.distillation_loss.topk=100000"}))
        ->compute_teacher_log_prob(batch);
  });
  EXPECT_NE(message.find("distillation.distillation_loss.topk=100000 is larger than the vocabulary"), std::string::npos)
      << message;
}

TEST(TeacherModelWorker, SeveralTeachersEachScoreTheRowsOfTheirKey) {
  const std::string math = test::make_lm_folder("teacher_route_math", 41);
  const std::string gsm = test::make_lm_folder("teacher_route_gsm", 43);
  DataProto batch = test::make_ppo_batch(6, 4, 3, 31);
  batch.non_tensor_batch["data_source"] = {Json("math"), Json("gsm"), Json("gsm"),
                                           Json("math"), Json("gsm"), Json("math")};
  const std::vector<std::string> overrides = {
      "distillation.enabled=true", "+distillation.teacher_models.math_teacher.key=math",
      "+distillation.teacher_models.math_teacher.model_path=" + math,
      "+distillation.teacher_models.gsm_teacher.key=gsm", "+distillation.teacher_models.gsm_teacher.model_path=" + gsm};
  auto worker = make_teacher_worker(overrides);
  const torch::Tensor got = worker->compute_teacher_log_prob(batch).tensor("teacher_logprobs");
  const torch::Tensor by_math = expected_teacher_log_probs(math, batch);
  const torch::Tensor by_gsm = expected_teacher_log_probs(gsm, batch);
  for (int64_t i = 0; i < 6; ++i) {
    const bool is_math = batch.column("data_source")[i] == "math";
    const torch::Tensor& expected = is_math ? by_math : by_gsm;
    const torch::Tensor& other = is_math ? by_gsm : by_math;
    EXPECT_LT((got[i] - expected[i]).abs().max().item<double>(), 2e-5) << "row " << i;
    EXPECT_GT((got[i] - other[i]).abs().max().item<double>(), 1e-3) << "row " << i << ": the teachers differ";
  }

  // With forward_kl_topk each row's top-k comes from its own teacher too (each teacher's top-k alone is checked
  // against its logits above).
  const std::vector<std::string> top_k = {"distillation.distillation_loss.loss_mode=forward_kl_topk",
                                          "distillation.distillation_loss.topk=3"};
  const DataProto routed = make_teacher_worker(test::with(overrides, top_k))->compute_teacher_log_prob(batch);
  const DataProto math_alone =
      make_teacher_worker(test::with(one_teacher(math, 8192), top_k))->compute_teacher_log_prob(batch);
  const DataProto gsm_alone =
      make_teacher_worker(test::with(one_teacher(gsm, 8192), top_k))->compute_teacher_log_prob(batch);
  for (int64_t i = 0; i < 6; ++i) {
    const DataProto& alone = batch.column("data_source")[i] == "math" ? math_alone : gsm_alone;
    EXPECT_TRUE(torch::equal(routed.tensor("teacher_ids")[i], alone.tensor("teacher_ids")[i])) << "row " << i;
    EXPECT_TRUE(torch::allclose(routed.tensor("teacher_logprobs")[i], alone.tensor("teacher_logprobs")[i], 1e-5, 1e-6))
        << "row " << i;
  }

  batch.non_tensor_batch["data_source"][4] = Json("aime");
  const std::string message = test::error_text([&] { worker->compute_teacher_log_prob(batch); });
  EXPECT_NE(message.find("no teacher has the key 'aime' (row 4's data_source); the teachers' keys: math, gsm"),
            std::string::npos)
      << message;
}

TEST(TeacherModelWorker, RefusesAMissingFolderAndTokensPastItsVocabulary) {
  std::string message = test::error_text([&] { make_teacher_worker(one_teacher("/nonexistent/teacher", 64)); });
  EXPECT_NE(message.find("distillation.teacher_models.teacher_model.model_path '/nonexistent/teacher' is not a "
                         "model folder"),
            std::string::npos)
      << message;
  const std::string dir = test::make_lm_folder("teacher_vocab_lm", 19);  // vocabulary of 64 tokens
  const DataProto wide = test::make_ppo_batch(4, 4, 3, 37, /*vocab=*/500);
  message = test::error_text([&] { make_teacher_worker(one_teacher(dir, 64))->compute_teacher_log_prob(wide); });
  EXPECT_NE(message.find("is outside the vocabulary (64 tokens) of the teacher"), std::string::npos) << message;
  EXPECT_NE(message.find("teacher and student must share a tokenizer"), std::string::npos) << message;
}

}  // namespace
}  // namespace verl::workers
