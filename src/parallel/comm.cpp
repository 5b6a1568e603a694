#include "verl/parallel/comm.h"

#include <functional>
#include <map>
#include <tuple>

#include "verl/common/error.h"

namespace verl::parallel {

namespace {

// One rank: every collective leaves its input as it is.
class SingleProcessComm : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single"; }
  void all_reduce(torch::Tensor&, ReduceOp) override {}
  torch::Tensor all_gather(const torch::Tensor& tensor) override { return tensor.clone(); }
  torch::Tensor reduce_scatter(const torch::Tensor& tensor, ReduceOp) override { return tensor.clone(); }
  void broadcast(torch::Tensor&, int root) override {
    VERL_CHECK(root == 0, "comm", "broadcast root ", root, " is not a rank of a 1-rank communicator");
  }
  void barrier() override {}
  std::shared_ptr<Comm> split(int, int) override { return std::make_shared<SingleProcessComm>(); }
  void broadcast_bytes(std::string&, int root) override {
    VERL_CHECK(root == 0, "comm", "broadcast root ", root, " is not a rank of a 1-rank communicator");
  }
};

}  // namespace

torch::Tensor reduce_in_rank_order(const std::vector<torch::Tensor>& parts, ReduceOp op) {
  VERL_ASSERT(!parts.empty(), "comm", "a reduction of no ranks");
  torch::Tensor acc = parts[0].clone();
  for (size_t q = 1; q < parts.size(); ++q) {
    if (op == ReduceOp::Max) {
      acc = torch::maximum(acc, parts[q]);
    } else {
      acc.add_(parts[q]);
    }
  }
  if (op == ReduceOp::Average) {
    VERL_CHECK(acc.is_floating_point(), "comm", "average of a ", acc.scalar_type(), " tensor: needs a float dtype");
    acc.div_(static_cast<double>(parts.size()));
  }
  return acc;
}

torch::Tensor Comm::all_to_all(const torch::Tensor& tensor) {
  VERL_CHECK(tensor.dim() >= 1 && tensor.size(0) % size() == 0, "comm", "all_to_all needs dim 0 (",
             tensor.dim() >= 1 ? tensor.size(0) : 0, ") divisible by the communicator size ", size());
  if (size() == 1) return tensor.clone();
  // Every rank's whole tensor, [size (from), size (chunk), rows / size, ...]: keep the chunks addressed to us.
  std::vector<int64_t> shape = {size(), size(), tensor.size(0) / size()};
  for (int64_t d = 1; d < tensor.dim(); ++d) shape.push_back(tensor.size(d));
  return all_gather(tensor.contiguous()).view(shape).select(1, rank()).reshape(tensor.sizes()).contiguous();
}

std::shared_ptr<Comm> single_process_comm() { return std::make_shared<SingleProcessComm>(); }

namespace {

// Cuts `tensors` into flat buffers of at most bucket_bytes and calls `collective` on each, then copies the
// buffer back into the tensors. Tensors are grouped by (dtype, device) in first-seen order (a tensor larger
// than a bucket gets one of its own); the grouping depends only on the tensor list, so every rank forms the
// same buckets.
void for_each_bucket(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes, const char* what,
                     const std::function<void(torch::Tensor&)>& collective) {
  VERL_CHECK(bucket_bytes > 0, "comm", "bucket size must be > 0 bytes, got ", bucket_bytes);
  torch::NoGradGuard no_grad;  // parameters are leaves that require grad; the copy-back is not part of a graph
  std::vector<std::vector<size_t>> groups;
  std::map<std::tuple<int, int, int>, size_t> group_of;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const torch::Tensor& t = tensors[i];
    VERL_ASSERT(t.defined(), "comm", what, " got an undefined tensor at index ", i);
    auto key = std::make_tuple(static_cast<int>(t.scalar_type()), static_cast<int>(t.device().type()),
                               static_cast<int>(t.device().index()));
    auto [it, inserted] = group_of.emplace(key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  auto flush = [&](const std::vector<size_t>& bucket) {
    if (bucket.empty()) return;
    std::vector<torch::Tensor> flat;
    for (size_t i : bucket) flat.push_back(tensors[i].reshape({-1}));
    torch::Tensor buffer = torch::cat(flat);
    collective(buffer);
    int64_t offset = 0;
    for (size_t i : bucket) {
      const int64_t n = tensors[i].numel();
      tensors[i].copy_(buffer.narrow(0, offset, n).view(tensors[i].sizes()));
      offset += n;
    }
  };
  for (const auto& group : groups) {
    std::vector<size_t> bucket;
    int64_t bytes = 0;
    for (size_t i : group) {
      const int64_t size = tensors[i].numel() * static_cast<int64_t>(tensors[i].element_size());
      if (!bucket.empty() && bytes + size > bucket_bytes) {
        flush(bucket);
        bucket.clear();
        bytes = 0;
      }
      bucket.push_back(i);
      bytes += size;
    }
    flush(bucket);
  }
}

}  // namespace

void all_reduce_coalesced(Comm& comm, const std::vector<torch::Tensor>& tensors, ReduceOp op, int64_t bucket_bytes) {
  if (comm.size() == 1 || tensors.empty()) return;
  for_each_bucket(tensors, bucket_bytes, "all_reduce_coalesced",
                  [&](torch::Tensor& buffer) { comm.all_reduce(buffer, op); });
}

void broadcast_coalesced(Comm& comm, const std::vector<torch::Tensor>& tensors, int root, int64_t bucket_bytes) {
  if (comm.size() == 1 || tensors.empty()) return;
  for_each_bucket(tensors, bucket_bytes, "broadcast_coalesced",
                  [&](torch::Tensor& buffer) { comm.broadcast(buffer, root); });
}

}  // namespace verl::parallel
