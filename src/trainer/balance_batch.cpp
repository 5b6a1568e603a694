#include "verl/trainer/balance_batch.h"

#include <algorithm>
#include <numeric>

#include "verl/common/error.h"

namespace verl::trainer {

std::map<std::string, double> log_seqlen_unbalance(const std::vector<int64_t>& seqlens,
                                                   const std::vector<std::vector<int64_t>>& partitions,
                                                   const std::string& prefix) {
  VERL_ASSERT(!partitions.empty(), "trainer", "no partitions");
  const size_t k = partitions.size();
  const size_t chunk = seqlens.size() / k;
  VERL_ASSERT(chunk > 0, "trainer", "fewer rows than partitions");
  // Token sums of the contiguous chunks dispatch would have sent without reordering.
  int64_t min_sum = 0, max_sum = 0, total = 0;
  bool first = true;
  for (size_t offset = 0; offset < seqlens.size(); offset += chunk) {
    const size_t end = std::min(seqlens.size(), offset + chunk);
    const int64_t sum = std::accumulate(seqlens.begin() + static_cast<std::ptrdiff_t>(offset),
                                        seqlens.begin() + static_cast<std::ptrdiff_t>(end), int64_t{0});
    min_sum = first ? sum : std::min(min_sum, sum);
    max_sum = first ? sum : std::max(max_sum, sum);
    first = false;
    total += sum;
  }
  int64_t balanced_min = 0, balanced_max = 0;
  for (size_t p = 0; p < k; ++p) {
    int64_t sum = 0;
    for (int64_t row : partitions[p]) sum += seqlens.at(static_cast<size_t>(row));
    balanced_min = p == 0 ? sum : std::min(balanced_min, sum);
    balanced_max = p == 0 ? sum : std::max(balanced_max, sum);
  }
  return {{prefix + "/min", static_cast<double>(min_sum)},
          {prefix + "/max", static_cast<double>(max_sum)},
          {prefix + "/minmax_diff", static_cast<double>(max_sum - min_sum)},
          {prefix + "/balanced_min", static_cast<double>(balanced_min)},
          {prefix + "/balanced_max", static_cast<double>(balanced_max)},
          {prefix + "/mean", static_cast<double>(total) / static_cast<double>(k)}};
}

BalancePlan plan_balanced_order(const std::vector<int64_t>& seqlens, int64_t dp_size, const PartitionFn& partition,
                                const std::function<int64_t(int64_t)>& workload, const std::string& prefix) {
  VERL_ASSERT(dp_size > 0 && partition && workload, "trainer", "balance_batch needs a partitioner");
  VERL_CHECK(static_cast<int64_t>(seqlens.size()) % dp_size == 0, "trainer", "balance_batch: ", seqlens.size(),
             " rows do not split evenly over ", dp_size, " data-parallel ranks");
  std::vector<int64_t> workloads;
  workloads.reserve(seqlens.size());
  for (int64_t length : seqlens) workloads.push_back(workload(length));
  std::vector<std::vector<int64_t>> partitions = partition(workloads, dp_size, /*equal_size=*/true);
  VERL_ASSERT(static_cast<int64_t>(partitions.size()) == dp_size, "trainer", "partitioner returned ",
              partitions.size(), " parts for ", dp_size, " ranks");
  BalancePlan plan;
  std::vector<bool> seen(seqlens.size(), false);
  for (auto& part : partitions) {
    std::sort(part.begin(), part.end(), [&](int64_t a, int64_t b) {
      const int64_t wa = workloads.at(static_cast<size_t>(a)), wb = workloads.at(static_cast<size_t>(b));
      return wa != wb ? wa < wb : a < b;
    });
    // Small items at both ends: even positions ascending, then odd positions descending.
    std::vector<int64_t> arranged;
    for (size_t i = 0; i < part.size(); i += 2) arranged.push_back(part[i]);
    std::vector<int64_t> odd;
    for (size_t i = 1; i < part.size(); i += 2) odd.push_back(part[i]);
    arranged.insert(arranged.end(), odd.rbegin(), odd.rend());
    part = arranged;
    for (int64_t row : part) {
      VERL_ASSERT(row >= 0 && static_cast<size_t>(row) < seen.size() && !seen[static_cast<size_t>(row)], "trainer",
                  "partitioner returned an invalid or repeated row ", row);
      seen[static_cast<size_t>(row)] = true;
      plan.order.push_back(row);
    }
  }
  VERL_ASSERT(plan.order.size() == seqlens.size(), "trainer", "partitioner dropped rows");
  plan.metrics = log_seqlen_unbalance(seqlens, partitions, prefix);
  return plan;
}

}  // namespace verl::trainer
