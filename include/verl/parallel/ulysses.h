// Ulysses sequence parallelism (DeepSpeed-Ulysses, verl's verl/utils/ulysses.py) over a Comm: the sp ranks of one
// group get the same rows, each runs the model on its 1/sp of the sequence, and attention, which needs the whole
// sequence, exchanges heads for sequence around it. All of these carry autograd.
//
//   gather_seq_scatter_heads(x, s, h)   [.., S/sp (dim s), H (dim h), ..] -> [.., S, H/sp, ..] (all-to-all);
//                                       backward: the reverse exchange
//   gather_heads_scatter_seq(x, h, s)   the inverse: [.., S, H/sp, ..] -> [.., S/sp, H, ..]
//   gather_sequence(x, dim)             every rank's shard concatenated along dim (rank order); backward: this
//                                       rank's slice of the gradient times sp. Every rank of the group computes
//                                       the same loss on the gathered tensor, and gradients are then averaged over
//                                       all dp x sp ranks (as FSDP over the whole world does): the factor sp
//                                       turns that average back into the mean over the dp ranks (verl's
//                                       Gather with grad_scaler=True)
//   slice_sequence(x, dim)              this rank's 1/sp of x along dim (inputs: no gradient)
//   ulysses_mesh(group, sp)             the group split into dp x sp, SP ranks consecutive (verl's mesh
//                                       ("dp", "sp")): rank = dp_rank * sp + sp_rank
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "verl/parallel/comm.h"

namespace verl::parallel {

torch::Tensor gather_seq_scatter_heads(const torch::Tensor& x, int64_t seq_dim, int64_t head_dim,
                                       const std::shared_ptr<Comm>& comm);
torch::Tensor gather_heads_scatter_seq(const torch::Tensor& x, int64_t head_dim, int64_t seq_dim,
                                       const std::shared_ptr<Comm>& comm);
torch::Tensor gather_sequence(const torch::Tensor& x, int64_t dim, const std::shared_ptr<Comm>& comm);
torch::Tensor slice_sequence(const torch::Tensor& x, int64_t dim, const Comm& comm);

struct UlyssesMesh {
  std::shared_ptr<Comm> sp;  // the sp ranks sharing rows, each holding a part of the sequence
  int sp_rank = 0;
  int dp_rank = 0;
};
// Collective on `group` (a split) when sp_size > 1; `key` names the config key in the error when sp_size does not
// divide the group.
UlyssesMesh ulysses_mesh(const std::shared_ptr<Comm>& group, int64_t sp_size, const std::string& key);

}  // namespace verl::parallel
