// Transport: how a worker group reaches its ranks. The controller code (WorkerGroup, the trainer) only sees
// this interface; the in-process transport below holds the workers in this process, and the MPI transport
// (distributed issue) runs them in other ranks with the same calls.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "verl/single_controller/worker.h"

namespace verl::single_controller {

using RankOutputs = std::vector<std::optional<DataProto>>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int world_size() const = 0;
  virtual const std::vector<MethodSpec>& methods() const = 0;
  virtual std::vector<MeshRankInfo> mesh_info(const std::string& mesh) const = 0;
  // Runs `method` on every rank whose input is set. Calls on one transport run in the order they were made;
  // calls on different transports may overlap. A failure on any rank fails the future with that error.
  virtual std::future<RankOutputs> execute(const std::string& method, std::vector<std::optional<DataProto>> inputs) = 0;
};

// Runs queued calls one at a time, in order, on a thread of its own: one per worker group, so groups on
// different resource pools overlap while each group stays sequential. The destructor runs what is queued,
// then joins.
class CallQueue {
 public:
  CallQueue();
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;
  void push(std::function<void()> call);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// All ranks live in this process; one background thread per transport runs its calls in order, so groups
// on different resource pools overlap (split placement) while each group stays sequential.
class InProcessTransport : public Transport {
 public:
  InProcessTransport(const std::string& group_name, int world_size, const WorkerFactory& factory);

  int world_size() const override { return static_cast<int>(workers_.size()); }
  const std::vector<MethodSpec>& methods() const override { return workers_.front()->methods(); }
  std::vector<MeshRankInfo> mesh_info(const std::string& mesh) const override;
  std::future<RankOutputs> execute(const std::string& method, std::vector<std::optional<DataProto>> inputs) override;

  Worker& worker(int rank) { return *workers_.at(static_cast<size_t>(rank)); }

 private:
  std::string group_name_;
  std::vector<std::unique_ptr<Worker>> workers_;
  CallQueue calls_;  // last: its thread stops before the workers it calls are destroyed
};

}  // namespace verl::single_controller
