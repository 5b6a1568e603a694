// thread_comms: in-process ranks on threads. Closed-form answers on 2 and 3 ranks (rank r holds r + 1, ...),
// the same for every collective as the MPI communicator's tests; a shape mismatch is an error on the ranks
// that see it, and a rank whose peers never come fails after the timeout instead of hanging.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "verl/common/error.h"
#include "verl/parallel/comm.h"

namespace verl::parallel {
namespace {

// Runs body(comm) on one thread per rank; returns each rank's error message ("" when it succeeded).
std::vector<std::string> run_ranks(int size, const std::function<void(Comm&)>& body, double timeout = 60.0) {
  auto comms = thread_comms(size, timeout);
  std::vector<std::string> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(*comms[static_cast<size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

void expect_no_errors(const std::vector<std::string>& errors) {
  for (size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

class ThreadCommOnRanks : public ::testing::TestWithParam<int> {};

TEST_P(ThreadCommOnRanks, CollectivesGiveTheClosedFormAnswers) {
  const int n = GetParam();
  expect_no_errors(run_ranks(n, [n](Comm& comm) {
    const int r = comm.rank();
    EXPECT_EQ(comm.size(), n);
    EXPECT_EQ(comm.backend(), "threads");
    // all_reduce: sum_r (r + 1) = n (n + 1) / 2; average; max = n.
    torch::Tensor t = torch::full({3}, static_cast<double>(r + 1), torch::kFloat64);
    comm.all_reduce(t, ReduceOp::Sum);
    EXPECT_TRUE(torch::equal(t, torch::full({3}, n * (n + 1) / 2.0, torch::kFloat64)));
    torch::Tensor a = torch::full({2}, static_cast<float>(r + 1));
    comm.all_reduce(a, ReduceOp::Average);
    EXPECT_FLOAT_EQ(a[0].item<float>(), (n + 1) / 2.0f);
    torch::Tensor m = torch::tensor({static_cast<int64_t>(r), static_cast<int64_t>(-r)});
    comm.all_reduce(m, ReduceOp::Max);
    EXPECT_EQ(m[0].item<int64_t>(), n - 1);
    EXPECT_EQ(m[1].item<int64_t>(), 0);
    // all_gather: rows 0..n-1 hold their rank.
    torch::Tensor g = comm.all_gather(torch::full({1, 2}, static_cast<int64_t>(r), torch::kInt64));
    ASSERT_EQ(g.sizes(), (std::vector<int64_t>{n, 2}));
    for (int q = 0; q < n; ++q) EXPECT_EQ(g[q][1].item<int64_t>(), q);
    // reduce_scatter of arange(n) * (r + 1): rank r gets r * sum_q (q + 1).
    torch::Tensor rs = comm.reduce_scatter(torch::arange(n, torch::kFloat32) * static_cast<float>(r + 1));
    ASSERT_EQ(rs.numel(), 1);
    EXPECT_FLOAT_EQ(rs.item<float>(), static_cast<float>(r) * n * (n + 1) / 2.0f);
    // broadcast from the last rank, tensors and bytes.
    torch::Tensor b = torch::full({2, 2}, static_cast<float>(r));
    comm.broadcast(b, n - 1);
    EXPECT_TRUE(torch::equal(b, torch::full({2, 2}, static_cast<float>(n - 1))));
    std::string bytes = r == 0 ? std::string("from rank 0") : std::string();
    comm.broadcast_bytes(bytes, 0);
    EXPECT_EQ(bytes, "from rank 0");
    comm.barrier();
  }));
}

TEST_P(ThreadCommOnRanks, SplitMakesGroupsOrderedByKey) {
  const int n = GetParam();
  expect_no_errors(run_ranks(n, [n](Comm& comm) {
    const int r = comm.rank();
    // Colour 0: rank 0 alone (or with others when n > 2: even ranks); keys reverse the order.
    auto part = comm.split(r % 2, -r);
    const int members = r % 2 == 0 ? (n + 1) / 2 : n / 2;
    EXPECT_EQ(part->size(), members);
    torch::Tensor t = torch::full({1}, static_cast<double>(r));
    part->all_reduce(t);
    double expected = 0;
    for (int q = r % 2; q < n; q += 2) expected += q;
    EXPECT_EQ(t.item<double>(), expected);
    // Highest old rank first.
    torch::Tensor first = torch::full({1}, static_cast<double>(r));
    part->broadcast(first, 0);
    EXPECT_EQ(first.item<double>(), static_cast<double>(r % 2 == 0 ? (n - 1) - (n - 1) % 2 : n - 1 - n % 2));
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, ThreadCommOnRanks, ::testing::Values(2, 3));

TEST(ThreadComm, BroadcastIntoAWrongShapeIsAnErrorOnThatRankOnly) {
  auto errors = run_ranks(2, [](Comm& comm) {
    torch::Tensor t = torch::zeros({comm.rank() == 0 ? 4 : 3});
    comm.broadcast(t, 0);
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_NE(errors[1].find("broadcast: rank 1 has a Float tensor of shape [3] but root 0 sends Float [4]"),
            std::string::npos)
      << errors[1];
}

TEST(ThreadComm, APeerThatNeverComesIsAnErrorAfterTheTimeout) {
  auto errors = run_ranks(
      2,
      [](Comm& comm) {
        if (comm.rank() == 1) return;  // never joins
        torch::Tensor t = torch::ones({1});
        comm.all_reduce(t);
      },
      0.2);
  EXPECT_NE(errors[0].find("thread communicator rank 0 waited 0.2 s for its 1 peers"), std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1], "");
}

TEST(ThreadComm, BroadcastCoalescedCopiesEveryTensorFromTheRoot) {
  expect_no_errors(run_ranks(3, [](Comm& comm) {
    const float v = static_cast<float>(comm.rank() + 1);
    std::vector<torch::Tensor> tensors = {torch::full({3, 2}, v).requires_grad_(), torch::full({5}, v),
                                          torch::full({2}, static_cast<int64_t>(v), torch::kInt64)};
    broadcast_coalesced(comm, tensors, 1, /*bucket_bytes=*/16);
    EXPECT_TRUE(torch::equal(tensors[0], torch::full({3, 2}, 2.0f)));
    EXPECT_TRUE(torch::equal(tensors[1], torch::full({5}, 2.0f)));
    EXPECT_TRUE(torch::equal(tensors[2], torch::full({2}, 2, torch::kInt64)));
  }));
}

}  // namespace
}  // namespace verl::parallel
