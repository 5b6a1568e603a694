#include "verl/workers/seqlen_balancing.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "verl/common/error.h"

namespace verl::workers {
namespace {

constexpr const char* kSeqlenBalancingComponent = "seqlen_balancing";

// One part of a partial solution: its items (index, value) in insertion order and their sum.
struct Part {
  int64_t sum = 0;
  std::vector<std::pair<int64_t, int64_t>> items;  // (index, value)
};

// verl's ordering of parts: by sum, then by item count, then by the item list (lexicographic on (index, value)).
bool part_less(const Part& a, const Part& b) {
  if (a.sum != b.sum) return a.sum < b.sum;
  if (a.items.size() != b.items.size()) return a.items.size() < b.items.size();
  return a.items < b.items;
}

// A partial solution: k parts kept in non-increasing order.
struct State {
  std::vector<Part> parts;
  int64_t spread() const { return parts.front().sum - parts.back().sum; }
  void sort_parts() {
    // Descending, keeping equal parts in their current order (Python's sorted(reverse=True) is stable).
    std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return part_less(b, a); });
  }
  // Largest differencing: pair this state's largest part with the other's smallest, and so on.
  void merge(State& other) {
    const size_t k = parts.size();
    for (size_t i = 0; i < k; ++i) {
      Part& mine = parts[i];
      Part& theirs = other.parts[k - 1 - i];
      mine.items.insert(mine.items.end(), theirs.items.begin(), theirs.items.end());
      mine.sum += theirs.sum;
    }
    sort_parts();
  }
};

// Heap order: the state with the largest spread comes first; on equal spread, the one whose largest part is
// larger.
bool state_less(const State& a, const State& b) {
  const int64_t sa = a.spread(), sb = b.spread();
  if (sa != sb) return sa > sb;
  return part_less(b.parts.front(), a.parts.front());
}

// A binary min-heap with exactly the sift rules of Python's heapq, so ties resolve as in verl.
class StateHeap {
 public:
  size_t size() const { return heap_.size(); }
  void push(State s) {
    heap_.push_back(std::move(s));
    sift_down(0, heap_.size() - 1);
  }
  State pop() {
    State last = std::move(heap_.back());
    heap_.pop_back();
    if (heap_.empty()) return last;
    State top = std::move(heap_.front());
    heap_.front() = std::move(last);
    sift_up(0);
    return top;
  }

 private:
  // Moves the item at `pos` towards the root while it is smaller than its parent.
  void sift_down(size_t start, size_t pos) {
    State item = std::move(heap_[pos]);
    while (pos > start) {
      const size_t parent = (pos - 1) >> 1;
      if (state_less(item, heap_[parent])) {
        heap_[pos] = std::move(heap_[parent]);
        pos = parent;
        continue;
      }
      break;
    }
    heap_[pos] = std::move(item);
  }
  // Moves the smaller child up until a leaf is reached, puts the item there, then sifts it back down.
  void sift_up(size_t pos) {
    const size_t end = heap_.size();
    const size_t start = pos;
    State item = std::move(heap_[pos]);
    size_t child = 2 * pos + 1;
    while (child < end) {
      const size_t right = child + 1;
      if (right < end && !state_less(heap_[child], heap_[right])) child = right;
      heap_[pos] = std::move(heap_[child]);
      pos = child;
      child = 2 * pos + 1;
    }
    heap_[pos] = std::move(item);
    sift_down(start, pos);
  }
  std::vector<State> heap_;
};

State make_state(const std::vector<std::pair<int64_t, int64_t>>& items, int64_t k) {
  State s;
  s.parts.resize(static_cast<size_t>(k));
  for (size_t i = 0; i < items.size(); ++i) {
    s.parts[i].items.push_back(items[i]);
    s.parts[i].sum += items[i].second;
  }
  s.sort_parts();
  return s;
}

std::vector<std::vector<int64_t>> karmarkar_karp(const std::vector<int64_t>& seqlens, int64_t k, bool equal_size) {
  // (value, index) ascending.
  std::vector<std::pair<int64_t, int64_t>> sorted;
  sorted.reserve(seqlens.size());
  for (size_t i = 0; i < seqlens.size(); ++i) sorted.emplace_back(seqlens[i], static_cast<int64_t>(i));
  std::sort(sorted.begin(), sorted.end());
  StateHeap heap;
  if (equal_size) {
    for (size_t off = 0; off < sorted.size(); off += static_cast<size_t>(k)) {
      std::vector<std::pair<int64_t, int64_t>> items;
      for (int64_t i = 0; i < k; ++i) {
        const auto& [value, index] = sorted[off + static_cast<size_t>(i)];
        items.emplace_back(index, value);
      }
      heap.push(make_state(items, k));
    }
  } else {
    for (const auto& [value, index] : sorted) heap.push(make_state({{index, value}}, k));
  }
  while (heap.size() > 1) {
    State a = heap.pop();
    State b = heap.pop();
    a.merge(b);
    heap.push(std::move(a));
  }
  State final_state = heap.pop();
  std::vector<std::vector<int64_t>> partitions;
  for (const Part& part : final_state.parts) {
    std::vector<int64_t> idx;
    for (const auto& item : part.items) idx.push_back(item.first);
    partitions.push_back(std::move(idx));
  }
  return partitions;
}

}  // namespace

int64_t sequence_workload(int64_t length) { return 24576 * length + length * length; }

std::vector<std::vector<int64_t>> get_seqlen_balanced_partitions(const std::vector<int64_t>& seqlens, int64_t k,
                                                                 bool equal_size) {
  VERL_CHECK(k >= 1, kSeqlenBalancingComponent, "number of partitions must be at least 1, got ", k);
  VERL_CHECK(static_cast<int64_t>(seqlens.size()) >= k, kSeqlenBalancingComponent, "number of items (", seqlens.size(),
             ") is smaller than the number of partitions (", k, ")");
  if (equal_size) {
    VERL_CHECK(static_cast<int64_t>(seqlens.size()) % k == 0, kSeqlenBalancingComponent,
               "equal-size partitioning needs the item count (", seqlens.size(),
               ") to be a multiple of the number of partitions (", k, ")");
  }
  auto partitions = karmarkar_karp(seqlens, k, equal_size);
  std::vector<bool> seen(seqlens.size(), false);
  for (auto& part : partitions) {
    VERL_ASSERT(!part.empty(), kSeqlenBalancingComponent, "an empty partition");
    if (equal_size) {
      VERL_ASSERT(static_cast<int64_t>(part.size()) * k == static_cast<int64_t>(seqlens.size()),
                  kSeqlenBalancingComponent, "unequal partition sizes");
    }
    std::sort(part.begin(), part.end());
    for (int64_t i : part) seen[static_cast<size_t>(i)] = true;
  }
  VERL_ASSERT(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }), kSeqlenBalancingComponent,
              "an item was dropped");
  return partitions;
}

MicroBatchPlan rearrange_micro_batches(const torch::Tensor& attention_mask, int64_t max_token_len,
                                       int64_t min_num_micro_batches) {
  VERL_CHECK(attention_mask.dim() == 2, kSeqlenBalancingComponent, "attention_mask must be [batch, seq_len]");
  const int64_t B = attention_mask.size(0);
  VERL_CHECK(B > 0, kSeqlenBalancingComponent, "cannot split an empty batch into micro-batches");
  VERL_CHECK(max_token_len >= attention_mask.size(1), kSeqlenBalancingComponent, "max_token_len (", max_token_len,
             ") must be at least the sequence length (", attention_mask.size(1),
             "): raise ppo_max_token_len_per_gpu / log_prob_max_token_len_per_gpu");
  auto lens_t = attention_mask.to(torch::kCPU).to(torch::kInt64).sum(1).contiguous();
  std::vector<int64_t> lens(lens_t.data_ptr<int64_t>(), lens_t.data_ptr<int64_t>() + B);
  const int64_t total = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  int64_t count = std::min<int64_t>(B, (total + max_token_len - 1) / max_token_len);
  count = std::max<int64_t>(count, std::max<int64_t>(min_num_micro_batches, 1));
  VERL_CHECK(count <= B, kSeqlenBalancingComponent, "cannot make ", count, " micro-batches from ", B, " rows");
  std::vector<int64_t> workloads(lens.size());
  for (size_t i = 0; i < lens.size(); ++i) workloads[i] = sequence_workload(lens[i]);
  auto parts = get_seqlen_balanced_partitions(workloads, count, /*equal_size=*/false);

  // Heaviest first (ties: larger first index first), then even positions reversed + odd positions.
  auto weight = [&](const std::vector<int64_t>& p) {
    int64_t s = 0;
    for (int64_t i : p) s += workloads[static_cast<size_t>(i)];
    return s;
  };
  std::stable_sort(parts.begin(), parts.end(), [&](const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    const int64_t wa = weight(a), wb = weight(b);
    if (wa != wb) return wa > wb;
    return a.front() > b.front();
  });
  MicroBatchPlan plan;
  std::vector<std::vector<int64_t>> evens, odds;
  for (size_t i = 0; i < parts.size(); ++i) (i % 2 == 0 ? evens : odds).push_back(parts[i]);
  std::reverse(evens.begin(), evens.end());
  plan.micro_batches = evens;
  plan.micro_batches.insert(plan.micro_batches.end(), odds.begin(), odds.end());

  plan.restore_order.assign(static_cast<size_t>(B), -1);
  int64_t pos = 0;
  for (const auto& mb : plan.micro_batches) {
    for (int64_t i : mb) plan.restore_order[static_cast<size_t>(i)] = pos++;
  }
  return plan;
}

}  // namespace verl::workers
