// CPU kernels for the rollout's decode step (one new token per row), fp32, AVX2 + FMA, no gradients.
//
// At batch 64 a decode step is ~50 small ops per layer on [64, hidden] tensors. Profiled on the 25M bench
// model (bench/RESULTS.md): OpenBLAS runs the [64, K] x [K, N] projections at ~110 GFLOP/s, packing the
// whole weight matrix for 64 rows each call, and LibTorch runs RMSNorm's mean, SiLU and the rotary ops one
// by one, single-threaded below 32768 elements. These kernels do the same math in fewer passes:
//   - skinny_linear: y = x W^T (+ bias) (+ residual) as dot products of 4 rows of x against 3 rows of W in
//     registers (4 x 4 with 512-bit vectors on an AVX-512 CPU when K is a multiple of 16), W read in its stored
//     layout (no packing), columns spread over the intra-op threads; several
//     projections of the same x (q, k, v; gate, up) share one parallel region.
//     While a DecodeWeightPacking is alive on the calling thread, the weights it holds run on a broadcast
//     kernel over [K][32] panels instead: an 8-row x 32-column register tile of 512-bit vectors (one 128-byte
//     line per k, no horizontal sums). Measured alone at 64 rows: 265-312 GFLOP/s against 156-185 for the
//     dot-product tile (bench/RESULTS.md).
//   - rms_norm_rows, silu_mul: one pass each (the rotary embedding runs inside decode_attention_step).
// Rounding differs from LibTorch's at the 1e-7 relative level (other summation orders); transformer.cpp
// uses them only for the decode step, where the KV-cache tests hold decode logits to the full forward's.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace verl::model {

// Whether the kernels can run on x: an AVX2 + FMA CPU, an fp32 CPU tensor whose last dimension is a multiple
// of 8, and no gradient wanted (grad mode off).
bool decode_kernels_apply(const torch::Tensor& x);

// One projection: weight [N, K] as stored by torch::nn::Linear; bias [N] or undefined.
struct SkinnyProjection {
  torch::Tensor weight;
  torch::Tensor bias;
};

// HF's RMSNorm (weight [K] fp32, contiguous; eps) for kernels that apply it to their input rows on the way in.
struct RowNorm {
  torch::Tensor weight;
  double eps = 0;
};

// x [M, K] -> one [M, N_i] output per projection: x W_i^T + b_i.
std::vector<torch::Tensor> skinny_linear(const torch::Tensor& x, const std::vector<SkinnyProjection>& projections);
// The same on rms_norm_rows(x, norm.weight, norm.eps) without materializing it: each thread normalizes the rows
// it reads (the decoder layer's input norm before q / k / v, in the same parallel region).
std::vector<torch::Tensor> skinny_linear(const torch::Tensor& x, const RowNorm& norm,
                                         const std::vector<SkinnyProjection>& projections);
// x W^T + b + residual, residual [M, N] (the decoder layer's skip connection, added in the same pass).
torch::Tensor skinny_linear(const torch::Tensor& x, const SkinnyProjection& projection, const torch::Tensor& residual);

// silu(x Wg^T + bg) * (x Wu^T + bu), the MLP's gated activation [M, N]: on packed gate and up weights one
// kernel computes both and applies the activation in registers; otherwise skinny_linear, then silu_mul.
// With a norm, x's rows are normalized on the way in, as for skinny_linear.
torch::Tensor skinny_glu(const torch::Tensor& x, const SkinnyProjection& gate, const SkinnyProjection& up,
                         const RowNorm& norm = {});

// fp32 [N, K] weights rearranged in place into skinny_linear's [K][32] panels while the object lives, in force
// on this thread (scopes nest; a weight an outer scope packed is not packed again), and put back bit for bit when
// it ends (or when its construction fails). The rearrangement is done where the weights lie, block by block, so
// it costs no memory beyond one block per thread. While packed, a weight must be read only through
// skinny_linear / skinny_glu / embedding_rows: the rollout packs what fused_decode_weights (model/transformer.h)
// names after its prefill and unpacks before anything else reads the model, and the general forward and the LM
// head check that nothing they read is packed. No other thread may read the weights meanwhile.
// Packs nothing on a CPU without AVX-512F; skips weights that are not contiguous or whose N is not a multiple of
// 32 (the dot-product kernel reads them as stored).
class DecodeWeightPacking {
 public:
  explicit DecodeWeightPacking(const std::vector<torch::Tensor>& weights);
  ~DecodeWeightPacking();
  DecodeWeightPacking(const DecodeWeightPacking&) = delete;
  DecodeWeightPacking& operator=(const DecodeWeightPacking&) = delete;
  // How many of the weights were packed.
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether `weight` is packed on this thread (its memory holds panels, not [N, K] rows).
bool packed_for_decode(const torch::Tensor& weight);

// Rows `ids` of an embedding table [N, K] (torch::embedding), read through the panels while the table is packed:
// with tie_word_embeddings the LM head's weight is also the input embedding.
torch::Tensor embedding_rows(const torch::Tensor& weight, const torch::Tensor& ids);

// HF's RMSNorm over the last dimension of x [M, H]: weight * (x * rsqrt(mean(x^2) + eps)).
torch::Tensor rms_norm_rows(const torch::Tensor& x, const torch::Tensor& weight, double eps);

// silu(gate) * up, elementwise; both [M, N].
torch::Tensor silu_mul(const torch::Tensor& gate, const torch::Tensor& up);

}  // namespace verl::model
