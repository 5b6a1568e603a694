#include "verl/parallel/context_parallel.h"

#include "autograd_comm.h"
#include "verl/common/error.h"

namespace verl::parallel {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct GatherContext : public torch::autograd::Function<GatherContext> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t dim, Comm* comm) {
    detail::save_comm(ctx, comm);
    ctx->saved_data["dim"] = dim;
    return detail::all_gather_along(x, dim, *comm);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    Comm& comm = detail::saved_comm(ctx);
    const int64_t dim = ctx->saved_data["dim"].toInt();
    torch::Tensor mine = comm.reduce_scatter(grad[0].movedim(dim, 0).contiguous()).movedim(0, dim).contiguous();
    return {mine, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor gather_context(const torch::Tensor& x, int64_t dim, const std::shared_ptr<Comm>& comm) {
  VERL_CHECK(comm != nullptr, "context_parallel",
             "context parallelism needs the context-parallel group's communicator");
  if (comm->size() == 1) return x;
  return GatherContext::apply(x, dim < 0 ? dim + x.dim() : dim, comm.get());
}

}  // namespace verl::parallel
