// The MPI world of `verl_mpi_tests`: that executable runs under `mpirun -np N` (ctest label `dist`); its
// main starts the MpiSession, and every test reaches the world communicator through mpi_world().
#pragma once

#include <memory>

#include "verl/parallel/mpi_comm.h"

namespace verl::test {

std::shared_ptr<parallel::MpiSession> mpi_session();
std::shared_ptr<parallel::Comm> mpi_world();

}  // namespace verl::test
