// trainer.device=cuda on a machine without a CUDA device is a one-line error before any weights load (the GPU
// side of placement is tests/gpu/test_cuda_workers.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "support/actor_fixture.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/model/weights.h"
#include "verl/workers/actor_rollout_ref_worker.h"
#include "verl/workers/dp_actor.h"
#include "verl/workers/worker_device.h"

namespace verl::test {
namespace {

TEST(WorkerDevice, CudaWithoutADeviceIsAnErrorNamingTheKey) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is visible: this checks a machine without one";
  const std::string dir = make_tiny_model(make_temp_dir("cuda_missing") + "/model");
  auto config = tiny_ppo_config(dir, {"trainer.device=cuda"});
  single_controller::WorkerContext context;
  workers::ActorRolloutRefWorker actor(context, config, "actor_rollout_ref");
  try {
    actor.init_model(protocol::DataProto());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer.device=cuda"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("trainer.device=cpu"), std::string::npos) << e.what();
  }
  EXPECT_THROW(workers::check_trainer_device(config->trainer), Error);
}

TEST(WorkerDevice, CpuPlacesEverySlotOnTheCpu) {
  const std::string dir = make_tiny_model(make_temp_dir("cpu_slots") + "/model");
  auto config = tiny_ppo_config(dir, {"trainer.n_gpus_per_node=4"});
  for (int rank : {0, 1, 3}) EXPECT_TRUE(workers::worker_device(config->trainer, rank).is_cpu());
  EXPECT_EQ(workers::resolved_precision(std::nullopt, torch::kCPU), torch::kFloat32);  // the CPU path stays fp32
  EXPECT_EQ(workers::resolved_precision(std::nullopt, torch::Device(torch::kCUDA, 0)), torch::kBFloat16);
  EXPECT_EQ(workers::resolved_precision(std::string("fp32"), torch::Device(torch::kCUDA, 0)), torch::kFloat32);
}

TEST(WorkerDevice, PrecisionKeysParseAndBadValuesNameTheKey) {
  const std::string dir = make_tiny_model(make_temp_dir("precision_keys") + "/model");
  auto config = tiny_ppo_config(dir, {"+actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bfloat16",
                                      "+actor_rollout_ref.actor.fsdp_config.mixed_precision.reduce_dtype=fp32",
                                      "actor_rollout_ref.rollout.dtype=bfloat16"});
  EXPECT_EQ(config->actor_rollout_ref.actor.fsdp_config.param_dtype, std::optional<std::string>("bf16"));
  EXPECT_EQ(config->actor_rollout_ref.rollout.dtype, std::optional<std::string>("bf16"));
  EXPECT_FALSE(tiny_ppo_config(dir, {})->actor_rollout_ref.rollout.dtype.has_value());  // null: by device
  auto error_of = [&](const std::string& override) -> std::string {
    try {
      tiny_ppo_config(dir, {override});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("actor_rollout_ref.rollout.dtype=int8").find("actor_rollout_ref.rollout.dtype"), std::string::npos);
  // bf16 / fp16 reductions are honoured (gradient_sync); a dtype outside verl's PrecisionType names is an error.
  EXPECT_EQ(error_of("+critic.model.fsdp_config.mixed_precision.reduce_dtype=bf16"), "");
  EXPECT_NE(error_of("+critic.model.fsdp_config.mixed_precision.reduce_dtype=fp8")
                .find("critic.model.fsdp_config.mixed_precision.reduce_dtype"),
            std::string::npos);
}

// bf16 autocast over fp32 weights (mixed_precision.param_dtype=bf16) on the CPU too: log-probs move by bf16's
// rounding, not more, and left-padded rows (fully masked query rows) stay finite.
TEST(WorkerDevice, Bf16AutocastLogProbsAreNearFp32AndFinite) {
  const std::string dir = make_tiny_model(make_temp_dir("autocast_cpu") + "/model");
  auto cfg = tiny_ppo_config(dir, {})->actor_rollout_ref.actor;
  auto module = model::load_model(dir);
  workers::DataParallelPPOActor actor(cfg, module, nullptr);
  auto batch = ragged_actor_batch();
  batch.meta_info["temperature"] = 1.0;
  batch.meta_info["micro_batch_size"] = 4;
  const auto fp32 = actor.compute_log_prob(batch, true);
  actor.param_dtype = torch::kBFloat16;
  const auto bf16 = actor.compute_log_prob(batch, true);
  EXPECT_EQ(bf16.first.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::isfinite(bf16.first).all().item<bool>());
  const double error = (bf16.first - fp32.first).norm().item<double>() / fp32.first.norm().item<double>();
  EXPECT_GT(error, 1e-6);  // autocast really ran in bf16
  EXPECT_LT(error, 3e-2);
}

}  // namespace
}  // namespace verl::test
