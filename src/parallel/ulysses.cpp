#include "verl/parallel/ulysses.h"

#include <string>
#include <vector>

#include "autograd_comm.h"
#include "verl/common/error.h"

namespace verl::parallel {

namespace {

constexpr const char* kUlyssesComponent = "ulysses";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using detail::save_comm;
using detail::saved_comm;

int64_t normalised_dim(int64_t dim, const torch::Tensor& x) { return dim < 0 ? dim + x.dim() : dim; }

// x split into size equal chunks along scatter_dim, chunk q sent to rank q; the chunks received, in rank order,
// concatenated along gather_dim.
torch::Tensor exchange(const torch::Tensor& x, int64_t scatter_dim, int64_t gather_dim, Comm& comm) {
  const int64_t size = comm.size();
  VERL_CHECK(x.size(scatter_dim) % size == 0, kUlyssesComponent, "a tensor of shape ", x.sizes(),
             " does not split into ", size, " equal parts along dim ", scatter_dim);
  torch::Tensor front = x.movedim(scatter_dim, 0).contiguous();
  std::vector<int64_t> chunk = front.sizes().vec();
  chunk[0] /= size;
  chunk.insert(chunk.begin(), size);
  torch::Tensor received = comm.all_to_all(front).view(chunk);  // [from rank, chunk...]
  std::vector<torch::Tensor> parts;
  for (int64_t q = 0; q < size; ++q) parts.push_back(received.select(0, q).movedim(0, scatter_dim));
  return torch::cat(parts, gather_dim).contiguous();
}

struct SeqAllToAll : public torch::autograd::Function<SeqAllToAll> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t scatter_dim, int64_t gather_dim,
                               Comm* comm) {
    save_comm(ctx, comm);
    ctx->saved_data["scatter"] = scatter_dim;
    ctx->saved_data["gather"] = gather_dim;
    return exchange(x, scatter_dim, gather_dim, *comm);
  }
  // The exchange is a permutation of elements across ranks; its adjoint is the inverse permutation: the
  // exchange with the two dims swapped.
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {exchange(grad[0], ctx->saved_data["gather"].toInt(), ctx->saved_data["scatter"].toInt(), saved_comm(ctx)),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct GatherSequence : public torch::autograd::Function<GatherSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t dim, Comm* comm) {
    save_comm(ctx, comm);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["width"] = x.size(dim);
    return detail::all_gather_along(x, dim, *comm);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Comm& comm = saved_comm(ctx);
    const int64_t dim = ctx->saved_data["dim"].toInt(), width = ctx->saved_data["width"].toInt();
    torch::Tensor mine = grad[0].narrow(dim, comm.rank() * width, width) * static_cast<double>(comm.size());
    return {mine.contiguous(), torch::Tensor(), torch::Tensor()};
  }
};

Comm& checked_sp_comm(const std::shared_ptr<Comm>& comm) {
  VERL_CHECK(comm != nullptr, kUlyssesComponent,
             "sequence parallelism needs the sequence-parallel group's communicator");
  return *comm;
}

}  // namespace

torch::Tensor gather_seq_scatter_heads(const torch::Tensor& x, int64_t seq_dim, int64_t head_dim,
                                       const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_sp_comm(comm);
  if (c.size() == 1) return x;
  return SeqAllToAll::apply(x, normalised_dim(head_dim, x), normalised_dim(seq_dim, x), &c);
}

torch::Tensor gather_heads_scatter_seq(const torch::Tensor& x, int64_t head_dim, int64_t seq_dim,
                                       const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_sp_comm(comm);
  if (c.size() == 1) return x;
  return SeqAllToAll::apply(x, normalised_dim(seq_dim, x), normalised_dim(head_dim, x), &c);
}

torch::Tensor gather_sequence(const torch::Tensor& x, int64_t dim, const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_sp_comm(comm);
  if (c.size() == 1) return x;
  return GatherSequence::apply(x, normalised_dim(dim, x), &c);
}

torch::Tensor slice_sequence(const torch::Tensor& x, int64_t dim, const Comm& comm) {
  const int64_t d = normalised_dim(dim, x);
  VERL_CHECK(x.size(d) % comm.size() == 0, kUlyssesComponent, "a sequence of length ", x.size(d),
             " does not split into ", comm.size(), " equal parts (pad it to a multiple first)");
  const int64_t width = x.size(d) / comm.size();
  return x.narrow(d, comm.rank() * width, width).contiguous();
}

UlyssesMesh ulysses_mesh(const std::shared_ptr<Comm>& group, int64_t sp_size, const std::string& key) {
  Comm& c = checked_sp_comm(group);
  VERL_CHECK(sp_size >= 1 && c.size() % sp_size == 0, "config", key, "=", sp_size, " must divide the worker group's ",
             c.size(), " ranks");
  UlyssesMesh mesh;
  mesh.sp_rank = c.rank() % static_cast<int>(sp_size);
  mesh.dp_rank = c.rank() / static_cast<int>(sp_size);
  mesh.sp = sp_size == 1 ? single_process_comm() : group->split(mesh.dp_rank, mesh.sp_rank);
  return mesh;
}

}  // namespace verl::parallel
