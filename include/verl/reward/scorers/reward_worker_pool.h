// verl 0.9.1's `remote` reward manager scores in separate processes (its RewardComputeWorker Ray actors), so that a
// CPU-bound Python scorer (math-verify and the like) runs in parallel and away from the trainer's interpreter.
// Here: reward.num_workers child processes of the verl binary (`verl _reward-worker`), each loading
// custom_reward_function once, as a batch's calls go to whichever worker is free; the outcomes come back in the
// calls' order.
//
// Protocol (one JSON object per line on the child's fd 3, a Unix socket):
//   child -> parent  {"ready": true} once the function loaded, or {"load_error": "..."} (the child then exits)
//   parent -> child  {"data_source", "solution_str", "ground_truth", "extra_info"} for each call
//   child -> parent  {"score", "is_dict", "extra": [[key, value], ...]} or {"error", "timed_out"}
// The child's stdout and stderr are the parent's, so what the function prints shows as it does in process.
// A worker that dies mid-call (a crash, code past custom_reward_function.timeout that would not stop) fails that
// call with a message saying so and is started again for the next.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/reward/scorers/custom_reward_function.h"

namespace verl::reward {

struct RewardWorkerPoolOptions {
  std::string path, name;  // custom_reward_function.path / .name (a Python file)
  nlohmann::json reward_kwargs = nlohmann::json::object();
  UserCodeLimits limits;
  int64_t num_workers = 1;  // reward.num_workers
};

class RewardWorkerPool {
 public:
  // Starts the workers and waits until each has loaded the function; a load error is one line naming the file.
  explicit RewardWorkerPool(RewardWorkerPoolOptions options);
  ~RewardWorkerPool();
  RewardWorkerPool(const RewardWorkerPool&) = delete;
  RewardWorkerPool& operator=(const RewardWorkerPool&) = delete;

  // Every call of a batch, spread over the workers; outcomes in the calls' order, non-finite scores rejected.
  std::vector<ScoreOutcome> score(const std::vector<ScoreCall>& calls);

  int64_t num_workers() const { return static_cast<int64_t>(workers_.size()); }

 private:
  struct Worker;
  void start(Worker& worker);        // spawn, then await_ready
  void spawn(Worker& worker);        // the process, with its socket
  void await_ready(Worker& worker);  // its first line: loaded, or the load error thrown
  void stop(Worker& worker);
  void dispatch_and_collect(const std::vector<ScoreCall>& calls, std::vector<ScoreOutcome>& outcomes);

  RewardWorkerPoolOptions options_;
  std::string who_;  // "reward function 'NAME' from 'PATH'"
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex mutex_;  // one batch at a time
};

// One pool per distinct set of options in the process (a run's training and validation managers share it).
std::shared_ptr<RewardWorkerPool> shared_reward_worker_pool(const RewardWorkerPoolOptions& options);

// The executable a pool starts its workers from: the verl binary (default: this process's own executable, which is
// verl unless a test binary links the library; such tests set it).
void set_reward_worker_executable(const std::string& path);

// The worker's side (`verl _reward-worker PATH NAME TIMEOUT_S TIMEOUT_KEY REWARD_KWARGS_JSON`): loads the function,
// then answers requests on fd 3 until the parent closes it. Returns the process's exit code.
int serve_reward_worker(const std::vector<std::string>& args);

}  // namespace verl::reward
