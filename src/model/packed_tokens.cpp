#include "verl/model/packed_tokens.h"

#include <vector>

#include "verl/common/error.h"

namespace verl::model {
namespace {

constexpr const char* kPackedTokensComponent = "model";

torch::Tensor index_tensor(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kInt64).to(device);
}

// The mask on the CPU as bytes, so the index is built in one host pass.
torch::Tensor host_mask(const torch::Tensor& attention_mask) {
  VERL_CHECK(attention_mask.dim() == 2, kPackedTokensComponent, "attention_mask must be [batch, seq], got ",
             attention_mask.sizes());
  return (attention_mask != 0).to(torch::kCPU).contiguous();
}

}  // namespace

torch::Tensor PackedTokens::pack(const torch::Tensor& padded) const {
  VERL_ASSERT(padded.size(0) == rows && padded.size(1) == width, kPackedTokensComponent, "pack: expected [", rows, ", ",
              width, ", ...], got ", padded.sizes());
  auto flat_shape = padded.sizes().vec();
  flat_shape.erase(flat_shape.begin());
  flat_shape[0] = rows * width;
  return padded.reshape(flat_shape).index_select(0, positions.to(padded.device()));
}

torch::Tensor PackedTokens::unpack(const torch::Tensor& packed) const {
  VERL_ASSERT(packed.size(0) == count(), kPackedTokensComponent, "unpack: expected ", count(), " tokens, got ",
              packed.size(0));
  auto shape = packed.sizes().vec();
  shape[0] = rows * width;
  auto padded = torch::zeros(shape, packed.options()).index_copy(0, positions, packed);
  shape[0] = width;
  shape.insert(shape.begin(), rows);
  return padded.view(shape);
}

torch::Tensor PackedTokens::index_of(const torch::Tensor& flat) const {
  const auto opts = positions.options();
  auto inverse = torch::full({rows * width}, -1, opts).index_put_({positions}, torch::arange(count(), opts));
  auto index = inverse.index_select(0, flat.to(positions.device()));
  VERL_ASSERT(index.numel() == 0 || index.min().item<int64_t>() >= 0, kPackedTokensComponent,
              "a position asked of the packed tokens is padding");
  return index;
}

PackedTokens pack_tokens(const torch::Tensor& attention_mask, const torch::Device& device) {
  const auto mask = host_mask(attention_mask);
  PackedTokens p;
  p.rows = mask.size(0);
  p.width = mask.size(1);
  const bool* m = mask.data_ptr<bool>();
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < p.rows * p.width; ++i) {
    if (m[i]) positions.push_back(i);
  }
  p.positions = index_tensor(positions, device);
  return p;
}

torch::Tensor PackedResponses::to_window(const torch::Tensor& values) const {
  VERL_ASSERT(values.size(0) == window.size(0), kPackedTokensComponent, "to_window: expected ", window.size(0),
              " values, got ", values.size(0));
  auto shape = values.sizes().vec();
  shape[0] = tokens.rows * response_length;
  auto out = torch::zeros(shape, values.options()).index_copy(0, window.to(values.device()), values);
  shape[0] = response_length;
  shape.insert(shape.begin(), tokens.rows);
  return out.view(shape);
}

std::optional<PackedResponses> pack_responses(const torch::Tensor& attention_mask, int64_t response_length,
                                              const torch::Device& device) {
  const auto mask = host_mask(attention_mask);
  const int64_t B = mask.size(0), L = mask.size(1), R = response_length, P = L - R;
  VERL_CHECK(R >= 1 && R < L, kPackedTokensComponent, "response length ", R, " must be in [1, ", L, ")");
  const bool* m = mask.data_ptr<bool>();
  std::vector<int64_t> positions, predictors, window;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < L; ++t) {
      if (!m[b * L + t]) continue;
      if (t >= P) {
        if (!m[b * L + t - 1]) return std::nullopt;  // its predictor is padding
        predictors.push_back(static_cast<int64_t>(positions.size()) - 1);
        window.push_back(b * R + (t - P));
      }
      positions.push_back(b * L + t);
    }
  }
  if (predictors.empty()) return std::nullopt;
  PackedResponses out;
  out.tokens.rows = B;
  out.tokens.width = L;
  out.tokens.positions = index_tensor(positions, device);
  out.predictors = index_tensor(predictors, device);
  out.window = index_tensor(window, device);
  out.response_length = R;
  return out;
}

}  // namespace verl::model
