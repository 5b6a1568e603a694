// Helpers for the critic worker tests (test_critic_worker.cpp, test_critic_lora.cpp): the base overrides of a tiny
// critic run and an initialised CriticWorker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "unit/workers/worker_test_util.h"
#include "verl/workers/critic_worker.h"

namespace verl::test {

// A one-rank critic on `model_dir` with small batches.
inline std::vector<std::string> critic_overrides(const std::string& model_dir) {
  return {"critic.model.path=" + model_dir,
          "trainer.device=cpu",
          "actor_rollout_ref.rollout.n=1",
          "critic.ppo_mini_batch_size=4",
          "critic.ppo_micro_batch_size_per_gpu=2",
          "critic.optim.lr=0.01",
          "data.seed=5"};
}

inline std::unique_ptr<workers::CriticWorker> make_critic_worker(const std::vector<std::string>& overrides,
                                                                 int rank = 0, int world = 1,
                                                                 std::shared_ptr<parallel::Comm> comm = nullptr) {
  auto worker = std::make_unique<workers::CriticWorker>(
      single_controller::WorkerContext{rank, world, "critic", std::move(comm)}, ppo_config(overrides));
  worker->init_model(protocol::DataProto());
  return worker;
}

}  // namespace verl::test
