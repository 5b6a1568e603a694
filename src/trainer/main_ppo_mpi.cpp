// `mpirun -np 1+S verl train ...`: verl's main_ppo across MPI processes (declared in main_ppo.h).
//
//   world rank 0       the controller: run_ppo, every worker group on an MpiTransport
//   world rank 1 + s   device slot s of the resource pools, laid out in spec order (a pool's slots are
//                      ranks 1 + first_slot .. 1 + first_slot + world_size - 1); it builds the pool's
//                      co-located worker and serves the controller's calls until shutdown
//
// Every rank reads the same config and derives the same layout, so no set-up messages are needed. The
// communicators are made collectively at start: a control one (controller <-> workers), one per pool
// (the worker group's collectives: gradient averaging, checkpoint barriers) and, with a separate rollout,
// the weight-sync one (actor rank 0 + the rollout ranks). Any error ends the whole job
// (MPI_Abort) after one line naming where it happened, so no rank is left waiting.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <optional>

#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/parallel/mpi_comm.h"
#include "verl/runtime/cpu_threads.h"
#include "verl/single_controller/mpi_transport.h"
#include "verl/single_controller/resource_pool.h"
#include "verl/trainer/main_ppo.h"
#include "verl/trainer/role_setup.h"

namespace verl::trainer {

namespace {

constexpr const char* kMainPpoMpiComponent = "distributed";

std::vector<int> pool_world_ranks(const single_controller::ResourcePool& pool) {
  std::vector<int> ranks;
  for (int s = 0; s < pool.world_size(); ++s) ranks.push_back(1 + pool.first_slot + s);
  return ranks;
}

std::shared_ptr<parallel::MpiComm> as_mpi(std::shared_ptr<parallel::Comm> comm) {
  auto mpi = std::dynamic_pointer_cast<parallel::MpiComm>(comm);
  VERL_ASSERT(mpi != nullptr, kMainPpoMpiComponent, "an MPI split gave a non-MPI communicator");
  return mpi;
}

// mpirun ends a job whose rank died (SIGKILL, abort, out of memory) by sending the others SIGTERM: the
// controller then says, in one line, which call it was waiting for (mpirun's own message names the rank).
void on_sigterm(int) {
  const char* waiting = single_controller::controller_waiting_for();
  char line[512];
  int n = 0;
  for (const char* part : {"error: [distributed] the job was stopped (SIGTERM from mpirun: a rank died or was "
                           "killed; mpirun's message names it) while the controller waited for ",
                           *waiting != '\0' ? waiting : "no worker call", "\n"}) {
    for (; *part != '\0' && n < static_cast<int>(sizeof(line)) - 1; ++part) line[n++] = *part;
  }
  if (::write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) {
  }
  ::_exit(1);
}

// Prints the error as main() would and ends every rank now: other ranks may be blocked in a collective or
// waiting for a command that will never come.
[[noreturn]] void fail_job(parallel::MpiSession& session, const std::string& where, const std::exception& e) {
  std::signal(SIGTERM, SIG_DFL);  // the abort's own SIGTERM: this line is the job's one line
  session.fail(where, e);
}

// With a separate rollout (actor_rollout_ref.hybrid_engine=false): the communicator of actor rank 0 and the
// rollout ranks, in world-rank order, so the actor is its rank 0. Collective: every rank calls it.
std::shared_ptr<parallel::Comm> weight_sync_comm(parallel::Comm& world, const single_controller::ResourcePoolManager& pools,
                                                 int rank) {
  if (!pools.has_role(single_controller::Role::Rollout)) return nullptr;
  const auto& actor = pools.pool_for(single_controller::Role::Actor);
  const auto& rollout = pools.pool_for(single_controller::Role::Rollout);
  VERL_ASSERT(actor.first_slot < rollout.first_slot, kMainPpoMpiComponent,
              "the rollout pool must come after the actor's");
  const bool member = rank == 1 + actor.first_slot ||
                      (rank >= 1 + rollout.first_slot && rank < 1 + rollout.first_slot + rollout.world_size());
  auto part = world.split(member ? 1 : 0, rank);
  return member ? part : nullptr;
}

int serve_slot(const std::shared_ptr<const config::PPOConfig>& config, const RoleSetup& roles,
               const single_controller::ResourcePoolManager& pools, parallel::MpiComm& control,
               std::shared_ptr<parallel::Comm> group_comm, std::shared_ptr<parallel::Comm> weight_sync,
               int world_rank) {
  const int slot = world_rank - 1;
  const single_controller::ResourcePool& mine = pools.pools()[pools.pool_index_of_slot(slot)];
  const PoolRoles pool_roles = colocated_roles(roles.role_worker_mapping, pools);
  auto it = pool_roles.find(mine.name);
  VERL_CHECK(it != pool_roles.end(), kMainPpoMpiComponent, "resource pool '", mine.name, "' hosts no role");
  single_controller::WorkerContext context{slot - mine.first_slot, mine.world_size(), mine.name,
                                           std::move(group_comm), std::move(weight_sync)};
  const single_controller::WorkerFactory factory = single_controller::colocated_factory(it->second);
  single_controller::serve_worker(control, [&] { return factory(context); });
  return 0;
}

}  // namespace

bool launched_as_mpi_job() { return parallel::launched_by_mpi(); }

int run_ppo_distributed(const config::PPOConfig& parsed, const std::string& resolved_yaml, const PPORunHooks& hooks) {
  auto session = parallel::MpiSession::start();
  if (session->world_size() == 1) {
    run_ppo(parsed, resolved_yaml, hooks);
    return 0;
  }
  const int rank = session->world_rank();
  if (rank != 0) set_log_prefix("rank " + std::to_string(rank));
  auto config = std::make_shared<config::PPOConfig>(parsed);
  // A layout error is the same on every rank: rank 0 reports it, the others leave quietly.
  std::optional<RoleSetup> role_setup;
  std::optional<single_controller::ResourcePoolManager> pool_manager;
  try {
    role_setup.emplace(build_role_setup(config));
    pool_manager.emplace(role_setup->resource_pool_spec, role_setup->mapping);
  } catch (const std::exception&) {
    if (rank != 0) return 1;
    throw;
  }
  const RoleSetup& roles = *role_setup;
  const single_controller::ResourcePoolManager& pools = *pool_manager;
  if (session->world_size() != 1 + pools.total_slots()) {
    // Every rank sees the same mismatch: rank 0 reports it, all leave together through MPI_Finalize.
    if (rank != 0) return 1;
    const std::string rollout =
        config->actor_rollout_ref.hybrid_engine
            ? std::string()
            : " + rollout.nnodes=" + std::to_string(config->rollout.nnodes) + " x rollout.n_gpus_per_node=" +
                  std::to_string(config->rollout.n_gpus_per_node);
    VERL_FAIL(kMainPpoMpiComponent, "mpirun started ", session->world_size(), " processes but this config needs 1 + ",
              pools.total_slots(), " (the controller + trainer.nnodes=", config->trainer.nnodes,
              " x trainer.n_gpus_per_node=", config->trainer.n_gpus_per_node, rollout,
              " device slots): run mpirun -np ", 1 + pools.total_slots());
  }
  // Collective on every rank, in this order: the control communicator, then one per resource pool (the
  // controller sits alone in a colour of its own).
  auto world = session->world();
  auto control = as_mpi(world->split(0, rank));
  const int color = static_cast<int>(rank == 0 ? pools.pools().size() : pools.pool_index_of_slot(rank - 1));
  auto group_comm = world->split(color, rank);
  auto weight_sync = weight_sync_comm(*world, pools, rank);

  if (rank != 0) {
    try {
      runtime::configure_cpu_threads(config->trainer.num_cpu_threads);
      return serve_slot(config, roles, pools, *control, group_comm, weight_sync, rank);
    } catch (const std::exception& e) {
      fail_job(*session, "rank " + std::to_string(rank) + ": ", e);
    }
  }
  std::signal(SIGTERM, on_sigterm);
  std::vector<int> worker_ranks;
  for (const auto& pool : pools.pools()) {
    for (int r : pool_world_ranks(pool)) worker_ranks.push_back(r);
  }
  try {
    const double call_timeout = config->trainer.worker_call_timeout;
    TransportFactory mpi_transport = [&pools, control, call_timeout](const std::string& name, int world_size,
                                                                     const single_controller::WorkerFactory& factory) {
      for (const auto& pool : pools.pools()) {
        if (pool.name != name) continue;
        VERL_ASSERT(pool.world_size() == world_size, kMainPpoMpiComponent, "pool '", name, "' size mismatch");
        return std::shared_ptr<single_controller::Transport>(
            std::make_shared<single_controller::MpiTransport>(name, pool_world_ranks(pool), control, factory,
                                                             call_timeout));
      }
      VERL_FAIL(kMainPpoMpiComponent, "no resource pool named '", name, "'");
    };
    run_ppo_with_transport(parsed, resolved_yaml, hooks, mpi_transport);
  } catch (const std::exception& e) {
    fail_job(*session, "", e);
  }
  single_controller::shutdown_workers(*control, worker_ranks);
  return 0;
}

}  // namespace verl::trainer
