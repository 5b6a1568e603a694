// Comm: the ranks of one process group and the collectives between them (verl's torch.distributed group).
// Passed explicitly to whatever needs it (data-parallel gradient sync, tensor-parallel layers, weight
// broadcast); never a global. Implementations: single-process (size 1, every collective is the identity),
// threads of one process (thread_comms: in-process worker groups that meet, e.g. an actor and its separate
// rollout), MPI over CPU tensors (parallel/mpi_comm.h), NCCL over CUDA tensors in CUDA builds.
//
// Every collective is deterministic: all ranks end with bitwise the same result, and the same inputs give the
// same result on every run whatever the MPI library's algorithm choice (sums are taken in rank order).
//
//   comm.all_reduce(t)                  in place; t on every rank becomes sum_r t_r
//   comm.all_gather(t)                  [size * n, ...] = cat(t_0, ..., t_{size-1}) along dim 0
//   comm.reduce_scatter(t)              dim 0 divisible by size: rank r gets sum_q chunk_r(t_q)
//   comm.broadcast(t, root)             in place; t becomes root's t
//   comm.all_to_all(t)                  dim 0 divisible by size: chunk q of rank r's result is chunk r of rank q's t
//   comm.split(color, key)              the ranks with the same color, ordered by key (MPI_Comm_split)
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace verl::parallel {

enum class ReduceOp { Sum, Average, Max };

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "single", "mpi", "nccl"

  virtual void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  virtual torch::Tensor all_gather(const torch::Tensor& tensor) = 0;
  virtual torch::Tensor reduce_scatter(const torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) = 0;
  virtual void broadcast(torch::Tensor& tensor, int root) = 0;
  // Ulysses sequence parallelism's exchange (parallel/ulysses.h). The base class's is built on all_gather
  // (size times the traffic of a true all-to-all, but right on every backend); MPI has its own.
  virtual torch::Tensor all_to_all(const torch::Tensor& tensor);
  virtual void barrier() = 0;
  virtual std::shared_ptr<Comm> split(int color, int key) = 0;
  // Raw bytes, for small control payloads (serialized DataProto, strings); `bytes` is resized on receivers.
  virtual void broadcast_bytes(std::string& bytes, int root) = 0;
};

// For Comm implementations: the reduction of every rank's contribution, taken in rank order (not torch's
// reduction order, which may change with the thread count), so every rank and every run gets the same bits.
torch::Tensor reduce_in_rank_order(const std::vector<torch::Tensor>& parts, ReduceOp op);

// The communicator of a single rank.
std::shared_ptr<Comm> single_process_comm();

// All-reduces many tensors (e.g. every parameter's gradient) through flat buckets of at most `bucket_bytes`
// (one collective per bucket, not per tensor), in place. Tensors may differ in shape; each bucket holds
// tensors of one dtype and device. Deterministic like every collective.
void all_reduce_coalesced(Comm& comm, const std::vector<torch::Tensor>& tensors, ReduceOp op = ReduceOp::Sum,
                          int64_t bucket_bytes = 25 << 20);
// Broadcasts many tensors from `root` the same way (e.g. a model's parameters to its rollout copies).
void broadcast_coalesced(Comm& comm, const std::vector<torch::Tensor>& tensors, int root,
                         int64_t bucket_bytes = 25 << 20);

// The communicators of `size` ranks that live on threads of this process (rank r uses the r-th): collectives
// meet in shared memory. Each rank must call from its own thread; a rank that waits more than
// `timeout_seconds` for its peers gets an error instead of hanging.
std::vector<std::shared_ptr<Comm>> thread_comms(int size, double timeout_seconds = 600.0);

}  // namespace verl::parallel
