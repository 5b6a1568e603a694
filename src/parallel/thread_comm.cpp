// thread_comms (parallel/comm.h): ranks that are threads of one process. Every collective is a rendezvous:
// each rank posts its input in a shared slot, all meet at a barrier, each computes its result from the slots
// (reductions in rank order, as MpiComm, so the bits match), all meet again, and only then does a rank write
// its result in place (a slot may be another rank's in-place tensor, still being read before that).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <utility>

#include "verl/common/error.h"
#include "verl/parallel/comm.h"

namespace verl::parallel {

namespace {

constexpr const char* kThreadCommComponent = "comm";

// What the ranks of one thread group share.
struct ThreadGroup {
  explicit ThreadGroup(int size, double timeout_seconds)
      : size(size), timeout(timeout_seconds), tensors(static_cast<size_t>(size)),
        bytes(static_cast<size_t>(size)), split_requests(static_cast<size_t>(size)) {}

  // Waits until every rank has arrived; a rank left waiting past the timeout fails instead of hanging.
  void barrier(int rank) {
    std::unique_lock<std::mutex> lock(mutex);
    const int64_t generation = generation_;
    if (++arrived_ == size) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    const bool met = changed_.wait_for(lock, std::chrono::duration<double>(timeout),
                                       [&] { return generation_ != generation; });
    if (!met) {
      --arrived_;
      VERL_FAIL(kThreadCommComponent, "thread communicator rank ", rank, " waited ", timeout, " s for its ", size - 1,
                " peers in a collective; a peer failed or never called it");
    }
  }

  const int size;
  const double timeout;
  std::mutex mutex;
  std::vector<torch::Tensor> tensors;
  std::vector<std::string> bytes;
  std::vector<std::pair<int, int>> split_requests;        // (color, key) per rank
  std::map<int, std::shared_ptr<ThreadGroup>> split_groups;  // color -> the new group

 private:
  std::condition_variable changed_;
  int arrived_ = 0;
  int64_t generation_ = 0;
};

class ThreadComm : public Comm {
 public:
  ThreadComm(std::shared_ptr<ThreadGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size; }
  std::string backend() const override { return "threads"; }

  void all_reduce(torch::Tensor& tensor, ReduceOp op) override {
    torch::Tensor result = exchange(tensor, [&](const std::vector<torch::Tensor>& parts) {
      check_same_shapes(parts, "all_reduce");
      return reduce_in_rank_order(parts, op);
    });
    tensor.copy_(result);
  }

  torch::Tensor all_gather(const torch::Tensor& tensor) override {
    return exchange(tensor, [&](const std::vector<torch::Tensor>& parts) {
      check_same_shapes(parts, "all_gather");
      return torch::cat(parts, 0);
    });
  }

  torch::Tensor reduce_scatter(const torch::Tensor& tensor, ReduceOp op) override {
    VERL_CHECK(tensor.dim() >= 1 && tensor.size(0) % size() == 0, kThreadCommComponent, "reduce_scatter: dim 0 (",
               tensor.dim() >= 1 ? tensor.size(0) : 0, ") must be divisible by the ", size(), " ranks");
    return exchange(tensor, [&](const std::vector<torch::Tensor>& parts) {
      check_same_shapes(parts, "reduce_scatter");
      const int64_t chunk = tensor.size(0) / size();
      std::vector<torch::Tensor> mine;
      for (const auto& part : parts) mine.push_back(part.narrow(0, rank_ * chunk, chunk));
      return reduce_in_rank_order(mine, op);
    });
  }

  void broadcast(torch::Tensor& tensor, int root) override {
    check_root(root, "broadcast");
    torch::Tensor result = exchange(tensor, [&](const std::vector<torch::Tensor>& parts) {
      VERL_CHECK(parts[root].sizes() == tensor.sizes() && parts[root].scalar_type() == tensor.scalar_type(),
                 kThreadCommComponent, "broadcast: rank ", rank_, " has a ", tensor.scalar_type(), " tensor of shape ",
                 tensor.sizes(), " but root ", root, " sends ", parts[root].scalar_type(), " ", parts[root].sizes());
      return parts[root].clone();
    });
    if (rank_ != root) tensor.copy_(result);
  }

  void barrier() override { group_->barrier(rank_); }

  std::shared_ptr<Comm> split(int color, int key) override {
    ThreadGroup& g = *group_;
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.split_requests[static_cast<size_t>(rank_)] = {color, key};
    }
    g.barrier(rank_);
    // The ranks of my colour ordered by (key, old rank); the first of them makes the new group.
    std::vector<std::pair<int, int>> members;  // (key, old rank)
    for (int r = 0; r < size(); ++r) {
      if (g.split_requests[static_cast<size_t>(r)].first == color) {
        members.emplace_back(g.split_requests[static_cast<size_t>(r)].second, r);
      }
    }
    std::sort(members.begin(), members.end());
    int new_rank = 0;
    while (members[static_cast<size_t>(new_rank)].second != rank_) ++new_rank;
    if (new_rank == 0) {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.split_groups[color] = std::make_shared<ThreadGroup>(static_cast<int>(members.size()), g.timeout);
    }
    g.barrier(rank_);
    std::shared_ptr<ThreadGroup> mine;
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      mine = g.split_groups.at(color);
    }
    g.barrier(rank_);
    if (rank_ == 0) {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.split_groups.clear();
    }
    return std::make_shared<ThreadComm>(std::move(mine), new_rank);
  }

  void broadcast_bytes(std::string& bytes, int root) override {
    check_root(root, "broadcast_bytes");
    ThreadGroup& g = *group_;
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.bytes[static_cast<size_t>(rank_)] = bytes;
    }
    g.barrier(rank_);
    std::string result = g.bytes[static_cast<size_t>(root)];
    g.barrier(rank_);
    bytes = std::move(result);
  }

 private:
  // Posts `input`, meets the others, computes this rank's result from everyone's inputs, meets again.
  template <typename Compute>
  torch::Tensor exchange(const torch::Tensor& input, Compute compute) {
    ThreadGroup& g = *group_;
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.tensors[static_cast<size_t>(rank_)] = input;
    }
    g.barrier(rank_);
    torch::Tensor result;
    std::exception_ptr failure;  // rethrown only after the second meeting, so no peer is left waiting
    try {
      result = compute(g.tensors);
    } catch (...) {
      failure = std::current_exception();
    }
    g.barrier(rank_);  // every rank has read the slots: in-place writes are safe now
    {
      std::lock_guard<std::mutex> lock(g.mutex);
      g.tensors[static_cast<size_t>(rank_)] = torch::Tensor();
    }
    if (failure) std::rethrow_exception(failure);
    return result;
  }

  void check_same_shapes(const std::vector<torch::Tensor>& parts, const char* what) const {
    for (int r = 0; r < size(); ++r) {
      const torch::Tensor& part = parts[static_cast<size_t>(r)];
      VERL_CHECK(part.sizes() == parts[0].sizes() && part.scalar_type() == parts[0].scalar_type(), kThreadCommComponent,
                 what, ": rank ", r, " has a ", part.scalar_type(), " tensor of shape ", part.sizes(),
                 " but rank 0 has ", parts[0].scalar_type(), " ", parts[0].sizes());
    }
  }

  void check_root(int root, const char* what) const {
    VERL_CHECK(root >= 0 && root < size(), kThreadCommComponent, what, " root ", root, " is not a rank of a ", size(),
               "-rank communicator");
  }

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

}  // namespace

std::vector<std::shared_ptr<Comm>> thread_comms(int size, double timeout_seconds) {
  VERL_CHECK(size >= 1, kThreadCommComponent, "a thread communicator needs at least 1 rank, got ", size);
  VERL_CHECK(timeout_seconds > 0, kThreadCommComponent, "the collective timeout must be > 0 s, got ", timeout_seconds);
  auto group = std::make_shared<ThreadGroup>(size, timeout_seconds);
  std::vector<std::shared_ptr<Comm>> comms;
  for (int r = 0; r < size; ++r) comms.push_back(std::make_shared<ThreadComm>(group, r));
  return comms;
}

}  // namespace verl::parallel
