#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "verl/common/error.h"
#include "verl/runtime/cpu_threads.h"

namespace verl::runtime {
namespace {

class CpuThreads : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("OMP_NUM_THREADS");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    } else {
      ::unsetenv("OMP_NUM_THREADS");
    }
  }
  std::optional<std::string> saved_;
};

TEST_F(CpuThreads, ConfigWinsOverEnvironment) {
  ::setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(choose_cpu_threads(5), 5);
  EXPECT_EQ(choose_cpu_threads(std::nullopt), 3);
}

TEST_F(CpuThreads, DefaultIsTheCoreCount) {
  ::unsetenv("OMP_NUM_THREADS");
  unsigned cores = std::thread::hardware_concurrency();
  EXPECT_EQ(choose_cpu_threads(std::nullopt), cores == 0 ? 1 : static_cast<int>(cores));
}

TEST_F(CpuThreads, BadEnvironmentValueIsAnError) {
  ::setenv("OMP_NUM_THREADS", "two", 1);
  EXPECT_THROW(choose_cpu_threads(std::nullopt), Error);
  EXPECT_THROW(choose_cpu_threads(0), Error);
}

TEST_F(CpuThreads, ConfigureAppliesToLibTorch) {
  EXPECT_EQ(configure_cpu_threads(2), 2);
  EXPECT_EQ(torch::get_num_threads(), 2);
}

}  // namespace
}  // namespace verl::runtime
