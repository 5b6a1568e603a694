// verl's use_remove_padding packing (flash-attention's unpad_input): the real tokens of a padded [B, T] batch laid
// one after another, so that the trunk's projections, norms and MLPs and the LM or value head compute only them.
// Attention scatters the packed q / k / v back into the [B, T] layout for one masked call and gathers its output:
// its cost stays the padded one, the projections' (most of the FLOPs) becomes the packed one.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace verl::model {

struct PackedTokens {
  int64_t rows = 0, width = 0;  // the padded layout [B, T]
  // [N] int64 on the model's device: b * width + t of each real token (attention_mask != 0), row after row.
  torch::Tensor positions;
  int64_t count() const { return positions.size(0); }
  // [B, T, ...] -> [N, ...]
  torch::Tensor pack(const torch::Tensor& padded) const;
  // [N, ...] -> [B, T, ...], 0 at padding; differentiable in `packed`.
  torch::Tensor unpack(const torch::Tensor& packed) const;
  // The packed index of each flat position b * width + t in `flat` [M]; every one must be a real token. One host
  // synchronisation (the check).
  torch::Tensor index_of(const torch::Tensor& flat) const;
};

// The real tokens of `attention_mask` [B, T], their positions on `device`. One host synchronisation.
PackedTokens pack_tokens(const torch::Tensor& attention_mask, const torch::Device& device);

// A [B, P+R] batch packed for a response pass: the response window's real tokens, each predicted by the hidden
// state of the token before it (the packed index just before its own, as verl's rolled packed input ids).
struct PackedResponses {
  PackedTokens tokens;
  torch::Tensor predictors;  // [M] int64: packed index of the token before each real response token
  torch::Tensor window;      // [M] int64: b * R + j, each one's place in the [B, R] output
  int64_t response_length = 0;
  // [M, ...] -> [B, R, ...], 0 at the window's padding; differentiable in `values`.
  torch::Tensor to_window(const torch::Tensor& values) const;
};

// std::nullopt where the packed pass does not apply and the caller keeps the padded layout: no response token in
// any row (the trunk must still run so that ranks keep their collectives in step), or a response token whose
// preceding column is padding (a hole in the mask, or an empty prompt). One host synchronisation.
std::optional<PackedResponses> pack_responses(const torch::Tensor& attention_mask, int64_t response_length,
                                              const torch::Device& device);

}  // namespace verl::model
