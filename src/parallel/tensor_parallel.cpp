#include "verl/parallel/tensor_parallel.h"

#include <cstdint>
#include <vector>

#include "autograd_comm.h"
#include "verl/common/error.h"

namespace verl::parallel {

namespace {

constexpr const char* kTensorParallelComponent = "tensor_parallel";

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using detail::save_comm;
using detail::saved_comm;

torch::Tensor all_reduced(const torch::Tensor& t, Comm& comm) {
  torch::Tensor out = t.contiguous().clone();
  comm.all_reduce(out, ReduceOp::Sum);
  return out;
}

struct CopyToRegion : public torch::autograd::Function<CopyToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Comm* comm) {
    save_comm(ctx, comm);
    return x.clone();  // a new tensor: the output of a custom function should not alias its input
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {all_reduced(grad[0], saved_comm(ctx)), torch::Tensor()};
  }
};

struct ReduceFromRegion : public torch::autograd::Function<ReduceFromRegion> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x, Comm* comm) { return all_reduced(x, *comm); }
  static variable_list backward(AutogradContext*, variable_list grad) { return {grad[0], torch::Tensor()}; }
};

struct GatherFromRegion : public torch::autograd::Function<GatherFromRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, Comm* comm) {
    save_comm(ctx, comm);
    ctx->saved_data["width"] = x.size(-1);
    // all_gather stacks along dim 0: move the last dim first, gather, move it back.
    torch::Tensor last_first = x.movedim(-1, 0).contiguous();
    return comm->all_gather(last_first).movedim(0, -1).contiguous();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const int64_t width = ctx->saved_data["width"].toInt();
    const int rank = saved_comm(ctx).rank();
    return {grad[0].narrow(-1, rank * width, width).contiguous(), torch::Tensor()};
  }
};

// Megatron's sequence parallelism: a dimension of length n cut into comm.size() chunks of ceil(n / size), the
// tensor padded with zeros at the end to size * ceil(n / size).
int64_t chunk_length(int64_t n, int size) { return (n + size - 1) / size; }

torch::Tensor padded_for_chunks(const torch::Tensor& x, int64_t dim, int size) {
  const int64_t n = x.size(dim);
  const int64_t pad = chunk_length(n, size) * size - n;
  if (pad == 0) return x;
  std::vector<int64_t> shape = x.sizes().vec();
  shape[dim] = pad;
  return torch::cat({x, torch::zeros(shape, x.options())}, dim);
}

torch::Tensor own_chunk(const torch::Tensor& x, int64_t dim, const Comm& comm) {
  const auto padded = padded_for_chunks(x, dim, comm.size());
  const int64_t chunk = padded.size(dim) / comm.size();
  return padded.narrow(dim, comm.rank() * chunk, chunk).contiguous();
}

// Rank r gets chunk r of the sum over the ranks of x (padded), along `dim`.
torch::Tensor reduce_scattered(const torch::Tensor& x, int64_t dim, Comm& comm) {
  const auto padded = padded_for_chunks(x, dim, comm.size());
  return comm.reduce_scatter(padded.movedim(dim, 0).contiguous(), ReduceOp::Sum).movedim(0, dim).contiguous();
}

// To this rank's chunk of the tokens: x's own chunk (x the same on every rank), or with `reduce` the chunk of the sum
// over the ranks (x a partial sum). Backward either way: every rank's gradient chunk gathered, back to x's length.
struct ToSequenceChunks : public torch::autograd::Function<ToSequenceChunks> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t dim, Comm* comm, bool reduce) {
    save_comm(ctx, comm);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["length"] = x.size(dim);
    return reduce ? reduce_scattered(x, dim, *comm) : own_chunk(x, dim, *comm);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const int64_t dim = ctx->saved_data["dim"].toInt();
    const auto whole = detail::all_gather_along(grad[0], dim, saved_comm(ctx));
    return {whole.narrow(dim, 0, ctx->saved_data["length"].toInt()), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

struct GatherFromSequence : public torch::autograd::Function<GatherFromSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& chunk, int64_t dim, Comm* comm,
                               bool sum_gradient) {
    save_comm(ctx, comm);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["sum_gradient"] = sum_gradient;
    return detail::all_gather_along(chunk, dim, *comm);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const int64_t dim = ctx->saved_data["dim"].toInt();
    Comm& comm = saved_comm(ctx);
    auto g =
        ctx->saved_data["sum_gradient"].toBool() ? reduce_scattered(grad[0], dim, comm) : own_chunk(grad[0], dim, comm);
    return {g, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

Comm& checked_tp_comm(const std::shared_ptr<Comm>& comm) {
  VERL_CHECK(comm != nullptr, kTensorParallelComponent,
             "tensor parallelism needs the tensor-parallel group's communicator");
  return *comm;
}

}  // namespace

torch::Tensor copy_to_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return x;
  return CopyToRegion::apply(x, &c);
}

torch::Tensor reduce_from_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return x;
  return ReduceFromRegion::apply(x, &c);
}

torch::Tensor gather_from_tp_region(const torch::Tensor& x, const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return x;
  return GatherFromRegion::apply(x, &c);
}

namespace {
int64_t checked_dim(const torch::Tensor& x, int64_t dim) {
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  VERL_CHECK(d >= 0 && d < x.dim(), kTensorParallelComponent, "no dimension ", dim, " in a tensor of shape ",
             x.sizes());
  return d;
}
}  // namespace

torch::Tensor scatter_to_sequence_parallel_region(const torch::Tensor& x, int64_t dim,
                                                  const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return x;
  return ToSequenceChunks::apply(x, checked_dim(x, dim), &c, /*reduce=*/false);
}

torch::Tensor gather_from_sequence_parallel_region(const torch::Tensor& chunk, int64_t dim,
                                                   const std::shared_ptr<Comm>& comm, bool sum_gradient) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return chunk;
  return GatherFromSequence::apply(chunk, checked_dim(chunk, dim), &c, sum_gradient);
}

torch::Tensor reduce_scatter_to_sequence_parallel_region(const torch::Tensor& x, int64_t dim,
                                                         const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  if (c.size() == 1) return x;
  return ToSequenceChunks::apply(x, checked_dim(x, dim), &c, /*reduce=*/true);
}

torch::Tensor row_parallel_linear_to_sequence_chunks(const torch::Tensor& x_shard, const torch::Tensor& weight_shard,
                                                     const torch::Tensor& bias, int64_t seq_dim,
                                                     const std::shared_ptr<Comm>& comm) {
  torch::Tensor y =
      reduce_scatter_to_sequence_parallel_region(torch::nn::functional::linear(x_shard, weight_shard), seq_dim, comm);
  return bias.defined() ? y + copy_to_tp_region(bias, comm) : y;
}

torch::Tensor tp_shard(const torch::Tensor& full, int64_t dim, const Comm& comm) {
  const int64_t d = dim < 0 ? dim + full.dim() : dim;
  VERL_CHECK(d >= 0 && d < full.dim() && full.size(d) % comm.size() == 0, kTensorParallelComponent,
             "a tensor of shape ", full.sizes(), " does not split into ", comm.size(), " equal parts along dim ", dim);
  const int64_t width = full.size(d) / comm.size();
  return full.narrow(d, comm.rank() * width, width).contiguous();
}

torch::Tensor column_parallel_linear(const torch::Tensor& x, const torch::Tensor& weight_shard,
                                     const torch::Tensor& bias_shard, const std::shared_ptr<Comm>& comm,
                                     bool gather_output) {
  torch::Tensor y = torch::nn::functional::linear(copy_to_tp_region(x, comm), weight_shard, bias_shard);
  return gather_output ? gather_from_tp_region(y, comm) : y;
}

torch::Tensor row_parallel_linear(const torch::Tensor& x_shard, const torch::Tensor& weight_shard,
                                  const torch::Tensor& bias, const std::shared_ptr<Comm>& comm) {
  torch::Tensor y = reduce_from_tp_region(torch::nn::functional::linear(x_shard, weight_shard), comm);
  return bias.defined() ? y + bias : y;
}

torch::Tensor vocab_parallel_embedding(const torch::Tensor& ids, const torch::Tensor& weight_shard,
                                       const std::shared_ptr<Comm>& comm, int64_t scatter_dim) {
  Comm& c = checked_tp_comm(comm);
  const int64_t rows = weight_shard.size(0);
  torch::Tensor local = ids - c.rank() * rows;
  torch::Tensor mine = ((local >= 0) & (local < rows)).unsqueeze(-1);
  torch::Tensor looked_up = torch::embedding(weight_shard, local.clamp(0, rows - 1)) * mine;
  if (scatter_dim >= 0) return reduce_scatter_to_sequence_parallel_region(looked_up, scatter_dim, comm);
  return reduce_from_tp_region(looked_up, comm);
}

VocabParallelLogProbs vocab_parallel_log_probs(const torch::Tensor& logits_shard, const torch::Tensor& labels,
                                               const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  VERL_CHECK(logits_shard.dim() == labels.dim() + 1 && logits_shard.sizes().slice(0, labels.dim()) == labels.sizes(),
             kTensorParallelComponent, "logits ", logits_shard.sizes(), " and labels ", labels.sizes(),
             " do not match");
  torch::Tensor logits = logits_shard.to(torch::kFloat32);
  const int64_t width = logits.size(-1);
  const int64_t vocab_start = c.rank() * width;
  // The max only shifts the exponent for stability; its gradient cancels, so it stays out of the graph.
  torch::Tensor global_max = std::get<0>(logits.detach().max(-1, /*keepdim=*/true)).contiguous();
  c.all_reduce(global_max, ReduceOp::Max);
  torch::Tensor shifted = logits - global_max;
  torch::Tensor exp = shifted.exp();
  torch::Tensor sum_exp = reduce_from_tp_region(exp.sum(-1), comm);
  torch::Tensor log_sum_exp = sum_exp.log();
  // The label's logit from the rank that holds it (zero elsewhere), summed.
  torch::Tensor local = labels - vocab_start;
  torch::Tensor mine = (local >= 0) & (local < width);
  torch::Tensor picked = shifted.gather(-1, local.clamp(0, width - 1).unsqueeze(-1)).squeeze(-1) * mine;
  torch::Tensor label_logit = reduce_from_tp_region(picked, comm);
  // entropy = log Z - sum_v p_v (logit_v - max), with p = exp / Z from every rank's slice.
  torch::Tensor expected_logit = reduce_from_tp_region((exp * shifted).sum(-1), comm) / sum_exp;
  return {label_logit - log_sum_exp, log_sum_exp - expected_logit};
}

torch::Tensor vocab_parallel_logsumexp(const torch::Tensor& logits_shard, const std::shared_ptr<Comm>& comm) {
  Comm& c = checked_tp_comm(comm);
  torch::Tensor logits = logits_shard.to(torch::kFloat32);
  // As in vocab_parallel_log_probs: the max only keeps exp in range, and stays out of the graph.
  torch::Tensor global_max = std::get<0>(logits.detach().max(-1, /*keepdim=*/true)).contiguous();
  c.all_reduce(global_max, ReduceOp::Max);
  torch::Tensor sum_exp = reduce_from_tp_region((logits - global_max).exp().sum(-1), comm);
  return global_max.squeeze(-1) + sum_exp.log();
}

}  // namespace verl::parallel
