// MPI transport: a worker group whose ranks are other MPI processes (`mpirun -np 1+S verl train ...`).
// World rank 0 is the controller; each worker rank runs serve_worker(), a command loop that invokes its
// Worker's methods. The controller's WorkerGroup calls go through MpiTransport exactly as they go through
// the in-process transport.
//
// Wire format (on a control communicator of its own, so collectives between workers never meet it):
//   controller -> worker   tag kCommandTag: [kind u8][method length u32][method][has input u8][DataProto bytes]
//   worker -> controller   tag kReplyTag:   [status u8][payload: DataProto bytes | error text | mesh JSON]
// Messages of any size go through MpiComm::send_bytes / receive_bytes.
//
// A method that throws on a worker is answered with its error text; the controller fails the call with one
// line naming the group, the rank (in the group and in the world) and the method, without waiting for the
// other ranks (which may sit in a collective with the failed one). The caller then aborts the job.
// A rank that does not answer within `call_timeout_s` (trainer.worker_call_timeout) fails the call the same
// way, naming the ranks still silent: a hung rank, or one that waits in a collective for it, ends the job in
// bounded time instead of holding it forever.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "verl/parallel/mpi_comm.h"
#include "verl/single_controller/transport.h"

namespace verl::single_controller {

class MpiTransport : public Transport {
 public:
  // `world_ranks[i]` hosts rank i of the group. `factory` builds a probe worker here only to read the
  // method table (worker constructors are cheap by contract); the real workers live on those ranks.
  MpiTransport(std::string group_name, std::vector<int> world_ranks, std::shared_ptr<parallel::MpiComm> control,
               const WorkerFactory& factory, double call_timeout_s = 0);

  int world_size() const override { return static_cast<int>(world_ranks_.size()); }
  const std::vector<MethodSpec>& methods() const override { return probe_->methods(); }
  std::vector<MeshRankInfo> mesh_info(const std::string& mesh) const override;
  std::future<RankOutputs> execute(const std::string& method, std::vector<std::optional<DataProto>> inputs) override;

 private:
  RankOutputs run_call(const std::string& method, const std::vector<std::optional<DataProto>>& inputs) const;

  std::string group_name_;
  std::vector<int> world_ranks_;
  std::shared_ptr<parallel::MpiComm> control_;
  std::unique_ptr<Worker> probe_;
  double call_timeout_s_ = 0;  // <= 0: wait forever
  mutable CallQueue calls_;  // mesh_info() (const) queues its query too; last, so it stops first
};

// The worker side: answers commands from world rank 0 until it is told to stop. The worker is built when the
// first command arrives, so a job the controller ends during its own checks (a bad config) prints only the
// controller's line; a worker that fails to build answers that command with the error.
void serve_worker(parallel::MpiComm& control, const std::function<std::unique_ptr<Worker>()>& make_worker);

// "worker group 'G' to answer 'method'": the call the controller waits for now ("" when none), kept in a
// fixed buffer that a signal handler may read (main_ppo_mpi.cpp names it when mpirun ends the job).
const char* controller_waiting_for();

// Tells the given worker ranks to leave serve_worker() (end of a run).
void shutdown_workers(parallel::MpiComm& control, const std::vector<int>& world_ranks);

}  // namespace verl::single_controller
