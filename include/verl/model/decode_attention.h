// Attention for one new query token per row over the KV cache (the decode step), fp32 on the CPU.
//
// The general path (matmul + softmax + matmul) hands LibTorch [B*Hkv] tiny batched GEMMs ([groups, D] x
// [D, S]), which its CPU bmm runs one after another, selecting every batch entry as a tensor: at batch 64 that
// was a fifth of the 25M bench model's decode step, on one thread. This kernel does the same math per (row,
// kv head) in one pass over the cache, spread over the intra-op threads: AVX2 + FMA, each key row read once
// for up to four query heads of its group, a vectorized exp. Rounding differs from the matmul path at the
// 1e-6 level; masked positions (the additive mask's lowest value) get exactly zero weight.
#pragma once

#include <torch/torch.h>

namespace verl::model {

// Whether decode_attention applies: an AVX2 + FMA CPU, fp32 CPU tensors that need no gradient, q [B,Hkv,G,D]
// with D a multiple of 8.
bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& keys);

// q [B, Hkv, groups, D] (query heads grouped by the kv head they read); keys / vals [B, Hkv, S, D] with unit
// stride over D (views of the cache are fine); bias [B, S] additive mask. Returns [B, Hkv, groups, D]:
// softmax(q k^T * scaling + bias) v, softmax in fp32.
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
                               const torch::Tensor& bias, double scaling);

// The whole attention of one decode step for a KV-cache layer, in one parallel pass over (row, kv head):
// rotary embedding of this step's query and key heads, the rotated key and the value written to `position`
// of the cache, then decode_attention over positions [0, position]. q [B, Hq * D], k / v [B, Hkv * D] (the
// projections' outputs; Qwen3's q_norm / k_norm already applied), cos / sin [B, D], cache_k / cache_v the
// layer's contiguous [B, Hkv, capacity, D] cache, bias [B, position + 1]. Returns [B, Hq * D].
torch::Tensor decode_attention_step(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& cos, const torch::Tensor& sin, torch::Tensor& cache_k,
                                    torch::Tensor& cache_v, int64_t position, const torch::Tensor& bias,
                                    double scaling);

}  // namespace verl::model
