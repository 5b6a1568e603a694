// Test helper: run `body` on `size` ranks, each a thread holding its communicator from parallel::thread_comms,
// and report every rank's exception as a test failure naming the rank.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "verl/parallel/comm.h"

namespace verl::test {

inline void on_thread_ranks(int size, const std::function<void(const std::shared_ptr<parallel::Comm>&)>& body) {
  auto comms = parallel::thread_comms(size, 60.0);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(comms[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

}  // namespace verl::test
