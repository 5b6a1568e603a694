// MPI: the process runtime (`mpirun -np N verl ...`, `srun`) and a Comm over MPI communicators.
//
//   if (launched_by_mpi()) { auto session = MpiSession::start(); auto world = session->world(); ... }
//
// MpiSession is the one owner of MPI_Init / MPI_Finalize (RAII, created by the command that needs MPI and
// passed down). Communicators made by split() keep the session alive, so none is freed after finalize.
// MpiComm moves CPU tensors as bytes (any dtype) and reduces them itself in rank order, so results are
// bitwise the same on every rank and every run; CUDA tensors are staged through host memory (NCCL is the
// fast path for them).
#pragma once

#include <mpi.h>

#include <exception>
#include <memory>
#include <string>

#include "verl/parallel/comm.h"

namespace verl::parallel {

// True when this process was started by an MPI launcher (Open MPI's mpirun, PMIx / PMI2 launchers such
// as srun): the environment variables they set are present.
bool launched_by_mpi();

class MpiSession : public std::enable_shared_from_this<MpiSession> {
 public:
  // MPI_Init_thread asking for MPI_THREAD_MULTIPLE (the controller talks to worker groups from several
  // threads); an MPI library that gives less is an error naming the level it gave.
  static std::shared_ptr<MpiSession> start();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  std::shared_ptr<Comm> world();  // MPI_COMM_WORLD
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  // Ranks on this node (MPI_Comm_split_type SHARED) and this rank's index among them.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // Ends the whole job now with `code` (MPI_Abort): used when an error must not leave other ranks waiting.
  [[noreturn]] void abort(int code) const;
  // Prints "error: <where><what>" to stderr as main() prints an error, then abort(1): other ranks may be blocked in
  // a collective that this rank will never join.
  [[noreturn]] void fail(const std::string& where, const std::exception& e) const;

 private:
  MpiSession();
  int world_rank_ = 0, world_size_ = 1, local_rank_ = 0, local_size_ = 1;
};

class MpiComm : public Comm {
 public:
  // Wraps `comm`; with `owned` the communicator is freed (MPI_Comm_free) on destruction.
  MpiComm(std::shared_ptr<MpiSession> session, MPI_Comm comm, bool owned);
  ~MpiComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void all_reduce(torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  torch::Tensor reduce_scatter(const torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  void broadcast(torch::Tensor& tensor, int root) override;
  torch::Tensor all_to_all(const torch::Tensor& tensor) override;
  void barrier() override;
  std::shared_ptr<Comm> split(int color, int key) override;
  void broadcast_bytes(std::string& bytes, int root) override;

  // Point-to-point messages of any size (the MPI transport's commands and replies): a u64 length, then the
  // bytes in pieces of at most 1 GiB (MPI counts are int). Messages with one (peer, tag) arrive in order.
  void send_bytes(int dest, int tag, const std::string& bytes);
  std::string receive_bytes(int source, int tag);
  // Whether a message from `source` with `tag` is waiting (MPI_Iprobe), without receiving it.
  bool message_waiting(int source, int tag);

  MPI_Comm handle() const { return comm_; }

 private:
  std::shared_ptr<MpiSession> session_;
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

}  // namespace verl::parallel
