#include "verl/single_controller/transport.h"

#include "verl/common/error.h"
#include "verl/parallel/comm.h"

namespace verl::single_controller {

InProcessTransport::InProcessTransport(const std::string& group_name, int world_size, const WorkerFactory& factory)
    : group_name_(group_name) {
  VERL_CHECK(world_size > 0, "transport", "worker group '", group_name, "' needs at least one rank");
  for (int rank = 0; rank < world_size; ++rank) {
    // One rank is its own process group; several in-process ranks run one after another, so they cannot
    // meet in a collective and get no communicator.
    auto comm = world_size == 1 ? parallel::single_process_comm() : nullptr;
    workers_.push_back(factory(WorkerContext{rank, world_size, group_name, comm}));
  }
}

std::vector<MeshRankInfo> InProcessTransport::mesh_info(const std::string& mesh) const {
  std::vector<MeshRankInfo> infos;
  for (const auto& worker : workers_) infos.push_back(worker->mesh_info(mesh));
  return infos;
}

std::future<RankOutputs> InProcessTransport::execute(const std::string& method,
                                                     std::vector<std::optional<DataProto>> inputs) {
  VERL_ASSERT(inputs.size() == workers_.size(), "transport", "one input slot per rank");
  workers_.front()->method_spec(method);  // unknown method: error now, in the caller's thread
  auto promise = std::make_shared<std::promise<RankOutputs>>();
  std::future<RankOutputs> future = promise->get_future();
  auto task = [this, method, inputs = std::move(inputs), promise]() {
    RankOutputs outputs(inputs.size());
    for (size_t rank = 0; rank < inputs.size(); ++rank) {
      if (!inputs[rank]) continue;
      try {
        outputs[rank] = workers_[rank]->invoke(method, *inputs[rank]);
      } catch (const std::exception& e) {
        // One line that says where it failed: group, rank, method, then the worker's own message.
        promise->set_exception(std::make_exception_ptr(
            Error("worker", str_cat("worker group '", group_name_, "' rank ", rank, " failed in '", method, "': ",
                                    e.what()))));
        return;
      }
    }
    promise->set_value(std::move(outputs));
  };
  calls_.push(std::move(task));
  return future;
}

CallQueue::CallQueue() : thread_([this] { run(); }) {}

CallQueue::~CallQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CallQueue::push(std::function<void()> call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(call));
  }
  wake_.notify_one();
}

void CallQueue::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace verl::single_controller
