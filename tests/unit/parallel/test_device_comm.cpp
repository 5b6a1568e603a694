// parallel::device_comm's choice, which runs on every machine (the NCCL collectives themselves are checked by the
// gpu tests): CPU devices, one rank and VERL_NCCL=0 keep the host communicator; an NCCL communicator for a CPU
// device is an error naming what it needs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "verl/common/error.h"
#include "verl/parallel/comm.h"
#include "verl/parallel/nccl_comm.h"

namespace verl::parallel {
namespace {

TEST(DeviceComm, KeepsTheHostCommunicatorWhereNcclHasNothingToDo) {
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA, 0);
  EXPECT_EQ(device_comm(nullptr, cuda), nullptr);
  auto single = single_process_comm();
  EXPECT_EQ(device_comm(single, cuda), single);  // one rank: nothing to move
  auto pair = thread_comms(2);
  EXPECT_EQ(device_comm(pair[0], cpu), pair[0]);
  setenv("VERL_NCCL", "0", 1);
  EXPECT_EQ(device_comm(pair[0], cuda), pair[0]);  // staged through the host on request
  unsetenv("VERL_NCCL");
}

TEST(DeviceComm, AnNcclCommunicatorNeedsACudaDevice) {
  try {
    nccl_comm(single_process_comm(), torch::Device(torch::kCPU));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("CUDA device") != std::string::npos || what.find("no NCCL") != std::string::npos) << what;
  }
}

}  // namespace
}  // namespace verl::parallel
