// main() of `verl_mpi_tests`: every rank runs the same GoogleTest cases on its own part of the work; a rank
// with a failure exits non-zero, so mpirun (and ctest) fail. Only rank 0 prints the progress lines.
#include <gtest/gtest.h>

#include "mpi/mpi_test_env.h"

namespace verl::test {

namespace {
std::shared_ptr<parallel::MpiSession>& session_slot() {
  static std::shared_ptr<parallel::MpiSession> session;
  return session;
}
}  // namespace

std::shared_ptr<parallel::MpiSession> mpi_session() { return session_slot(); }
std::shared_ptr<parallel::Comm> mpi_world() { return session_slot()->world(); }

}  // namespace verl::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto& session = verl::test::session_slot();
  session = verl::parallel::MpiSession::start();
  if (session->world_rank() != 0) {
    // Other ranks report failures only (GoogleTest's default printer would repeat every line N times).
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  // Every rank must reach finalize together; one rank's failure must not leave the others waiting.
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed != 0) fprintf(stderr, "verl_mpi_tests: rank %d had failures\n", session->world_rank());
  session.reset();
  return any_failed != 0 ? 1 : 0;
}
