// Attention for one new query token per row over the KV cache (the decode step), fp32 on the CPU.
//
// The general path (matmul + softmax + matmul) hands LibTorch [B*Hkv] tiny batched GEMMs ([groups, D] x
// [D, S]), which its CPU bmm runs one after another on one thread: at batch 64 that was ~1.2 ms per layer of a
// ~30 ms decode step of the 25M bench model. This kernel does the same math per (row, kv head) in one pass
// over the cache, spread over the intra-op threads. Rounding differs from the matmul path at the 1e-6 level.
//
// NOT WIRED INTO THE MODEL: it measured no faster than the matmul path (`verl bench generate`, qwen2-25m,
// batch 64 decode: 36.6% of the roofline with it, 34-42% without across runs); its per-dot horizontal sums
// and scalar exp are the likely cost. Kept, with its equivalence test, as the base for a blocked (several
// keys per vector pass) version; bench/RESULTS.md has the numbers.
#pragma once

#include <torch/torch.h>

namespace verl::model {

// Whether decode_attention applies: CPU fp32 tensors that need no gradient.
bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& keys);

// q [B, Hkv, groups, D] (query heads grouped by the kv head they read); keys / vals [B, Hkv, S, D] with unit
// stride over D (views of the cache are fine); bias [B, S] additive mask. Returns [B, Hkv, groups, D]:
// softmax(q k^T * scaling + bias) v, softmax in fp32.
torch::Tensor decode_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
                               const torch::Tensor& bias, double scaling);

}  // namespace verl::model
