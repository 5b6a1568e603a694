#include "verl/model/decode_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "verl/common/error.h"
#include "simd_math.h"

namespace verl::model {

namespace {

constexpr const char* kComponent = "model";
using simd::cpu_has_avx2_fma;
using simd::decode_kernels_enabled;
using simd::exp8;
using simd::hsum8;

// scores[g][s] = q[g] . k[s] * scale + bias[s] for GB query heads at once, so each key row is read once.
template <int GB>
VERL_AVX2 void block_scores(const float* Q, const float* K, int64_t ks, const float* bias, int64_t S, int64_t D,
                            float scale, float* scores, int64_t score_stride) {
  for (int64_t s = 0; s < S; ++s) {
    const float* k = K + s * ks;
    __m256 acc[GB];
    for (int g = 0; g < GB; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t d = 0; d < D; d += 8) {
      const __m256 kv = _mm256_loadu_ps(k + d);
      for (int g = 0; g < GB; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(Q + g * D + d), kv, acc[g]);
    }
    for (int g = 0; g < GB; ++g) scores[g * score_stride + s] = hsum8(acc[g]) * scale + bias[s];
  }
}

// In place: row <- softmax(row) over S values.
VERL_AVX2 void softmax_row(float* row, int64_t S) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t s = 0; s < S; ++s) m = std::max(m, row[s]);
  const __m256 mv = _mm256_set1_ps(m);
  __m256 sumv = _mm256_setzero_ps();
  int64_t s = 0;
  for (; s + 8 <= S; s += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + s), mv));
    _mm256_storeu_ps(row + s, e);
    sumv = _mm256_add_ps(sumv, e);
  }
  float sum = hsum8(sumv);
  for (; s < S; ++s) {
    row[s] = row[s] - m < -87.3f ? 0.0f : std::exp(row[s] - m);
    sum += row[s];
  }
  const float inv = 1.0f / sum;
  for (s = 0; s < S; ++s) row[s] *= inv;
}

// out[g] = sum_s p[g][s] * v[s] for GB query heads, 8 output columns per pass.
template <int GB>
VERL_AVX2 void block_values(const float* P, int64_t p_stride, const float* V, int64_t vs, int64_t S, int64_t D,
                            float* O) {
  for (int64_t d = 0; d < D; d += 8) {
    __m256 acc[GB];
    for (int g = 0; g < GB; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t s = 0; s < S; ++s) {
      const __m256 v = _mm256_loadu_ps(V + s * vs + d);
      for (int g = 0; g < GB; ++g) acc[g] = _mm256_fmadd_ps(_mm256_set1_ps(P[g * p_stride + s]), v, acc[g]);
    }
    for (int g = 0; g < GB; ++g) _mm256_storeu_ps(O + g * D + d, acc[g]);
  }
}

template <int GB>
VERL_AVX2 void head_block(const float* Q, const float* K, int64_t ks, const float* V, int64_t vs, const float* bias,
                          int64_t S, int64_t D, float scale, float* scores, float* O) {
  block_scores<GB>(Q, K, ks, bias, S, D, scale, scores, S);
  for (int g = 0; g < GB; ++g) softmax_row(scores + g * S, S);
  block_values<GB>(scores, S, V, vs, S, D, O);
}

// ---- 512-bit versions for head sizes 16, 32, 64 and 128 (DV = D / 16 vectors per head) ----

// The cache rows of one (row, kv head) lie in one block, read once each: the hardware prefetcher, which stops at
// every 4 KiB page, left the kernel waiting on memory (~10 GB/s from DRAM). Rows this far ahead are requested
// explicitly.
constexpr int64_t kPrefetchRows = 16;

template <int DV>
VERL_AVX512 inline void prefetch_row(const float* row) {
  for (int c = 0; c < DV; ++c) _mm_prefetch(reinterpret_cast<const char*>(row + c * 16), _MM_HINT_T0);
}

// As block_scores, with the GB query heads held in registers (GB x DV <= 16 vectors) while the keys stream past.
template <int GB, int DV>
VERL_AVX512 void block_scores_512(const float* Q, const float* K, int64_t ks, const float* V, int64_t vs,
                                  const float* bias, int64_t S, float scale, float* scores, int64_t score_stride) {
  constexpr int64_t D = DV * 16;
  __m512 q[GB][DV];
  for (int g = 0; g < GB; ++g)
    for (int c = 0; c < DV; ++c) q[g][c] = _mm512_loadu_ps(Q + g * D + c * 16);
  for (int64_t s = 0; s < S; ++s) {
    const float* k = K + s * ks;
    if (s + kPrefetchRows < S) prefetch_row<DV>(k + kPrefetchRows * ks);
    if (s < kPrefetchRows) prefetch_row<DV>(V + s * vs);  // the start of the values' block
    __m512 kv[DV];
    for (int c = 0; c < DV; ++c) kv[c] = _mm512_loadu_ps(k + c * 16);
    for (int g = 0; g < GB; ++g) {
      __m512 acc = _mm512_mul_ps(q[g][0], kv[0]);
      for (int c = 1; c < DV; ++c) acc = _mm512_fmadd_ps(q[g][c], kv[c], acc);
      scores[g * score_stride + s] = _mm512_reduce_add_ps(acc) * scale + bias[s];
    }
  }
}

// As block_values, with all GB x DV output vectors accumulating at once: one pass over the values, and enough
// independent sums that the multiply-adds do not wait on each other.
template <int GB, int DV>
VERL_AVX512 void block_values_512(const float* P, int64_t p_stride, const float* V, int64_t vs, int64_t S,
                                  float* O) {
  constexpr int64_t D = DV * 16;
  __m512 acc[GB][DV];
  for (int g = 0; g < GB; ++g)
    for (int c = 0; c < DV; ++c) acc[g][c] = _mm512_setzero_ps();
  for (int64_t s = 0; s < S; ++s) {
    if (s + kPrefetchRows < S) prefetch_row<DV>(V + (s + kPrefetchRows) * vs);
    __m512 v[DV];
    for (int c = 0; c < DV; ++c) v[c] = _mm512_loadu_ps(V + s * vs + c * 16);
    for (int g = 0; g < GB; ++g) {
      const __m512 p = _mm512_set1_ps(P[g * p_stride + s]);
      for (int c = 0; c < DV; ++c) acc[g][c] = _mm512_fmadd_ps(p, v[c], acc[g][c]);
    }
  }
  for (int g = 0; g < GB; ++g)
    for (int c = 0; c < DV; ++c) _mm512_storeu_ps(O + g * D + c * 16, acc[g][c]);
}

template <int GB, int DV>
VERL_AVX512 void head_block_512(const float* Q, const float* K, int64_t ks, const float* V, int64_t vs,
                                const float* bias, int64_t S, float scale, float* scores, float* O) {
  block_scores_512<GB, DV>(Q, K, ks, V, vs, bias, S, scale, scores, S);
  for (int g = 0; g < GB; ++g) softmax_row(scores + g * S, S);
  block_values_512<GB, DV>(scores, S, V, vs, S, O);
}

// One (row, kv head) with D = DV * 16: blocks of up to 4 query heads, at most 16 vectors of them in registers.
template <int DV>
VERL_AVX512 void attend_512(const float* Q, const float* K, int64_t ks, const float* V, int64_t vs,
                            const float* bias, int64_t G, int64_t S, float scale, float* scores, float* O) {
  constexpr int64_t D = DV * 16;
  constexpr int kBlock = DV <= 4 ? 4 : 2;
  int64_t g = 0;
  for (; g + kBlock <= G; g += kBlock) {
    head_block_512<kBlock, DV>(Q + g * D, K, ks, V, vs, bias, S, scale, scores, O + g * D);
  }
  switch (G - g) {
    case 3: head_block_512<3, DV>(Q + g * D, K, ks, V, vs, bias, S, scale, scores, O + g * D); break;
    case 2: head_block_512<2, DV>(Q + g * D, K, ks, V, vs, bias, S, scale, scores, O + g * D); break;
    case 1: head_block_512<1, DV>(Q + g * D, K, ks, V, vs, bias, S, scale, scores, O + g * D); break;
    default: break;
  }
}

using AttendFn = void (*)(const float*, const float*, int64_t, const float*, int64_t, const float*, int64_t, int64_t,
                          float, float*, float*);

// The 512-bit kernel for this head size, or null (then the AVX2 one runs).
AttendFn attend_512_for(int64_t D) {
  if (!simd::cpu_has_avx512f()) return nullptr;
  switch (D) {
    case 16: return attend_512<1>;
    case 32: return attend_512<2>;
    case 64: return attend_512<4>;
    case 128: return attend_512<8>;
    default: return nullptr;
  }
}

// One (row, kv head): its G query heads in blocks of up to 4.
VERL_AVX2 void attend(const float* Q, const float* K, int64_t ks, const float* V, int64_t vs, const float* bias,
                      int64_t G, int64_t S, int64_t D, float scale, float* scores, float* O) {
  int64_t g = 0;
  for (; g + 4 <= G; g += 4) head_block<4>(Q + g * D, K, ks, V, vs, bias, S, D, scale, scores, O + g * D);
  switch (G - g) {
    case 3: head_block<3>(Q + g * D, K, ks, V, vs, bias, S, D, scale, scores, O + g * D); break;
    case 2: head_block<2>(Q + g * D, K, ks, V, vs, bias, S, D, scale, scores, O + g * D); break;
    case 1: head_block<1>(Q + g * D, K, ks, V, vs, bias, S, D, scale, scores, O + g * D); break;
    default: break;
  }
}

// One (row, kv head) on the 512-bit kernel for its head size when there is one, else the AVX2 one.
void attend_any(AttendFn wide, const float* Q, const float* K, int64_t ks, const float* V, int64_t vs,
                const float* bias, int64_t G, int64_t S, int64_t D, float scale, float* scores, float* O) {
  if (wide) {
    wide(Q, K, ks, V, vs, bias, G, S, scale, scores, O);
  } else {
    attend(Q, K, ks, V, vs, bias, G, S, D, scale, scores, O);
  }
}

// HF's rotary embedding of one head: x * cos + rotate_half(x) * sin, rotate_half(x) = [-x[half:], x[:half]].
void rotate_head(const float* x, const float* c, const float* s, int64_t D, float* out) {
  const int64_t half = D / 2;
  for (int64_t d = 0; d < half; ++d) out[d] = x[d] * c[d] + (-x[d + half]) * s[d];
  for (int64_t d = half; d < D; ++d) out[d] = x[d] * c[d] + x[d - half] * s[d];
}

}  // namespace

bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& keys) {
  return decode_kernels_enabled() && cpu_has_avx2_fma() && q.device().is_cpu() && q.scalar_type() == torch::kFloat32 &&
         keys.scalar_type() == torch::kFloat32 && q.dim() == 4 && q.size(3) % 8 == 0 &&
         !(torch::GradMode::is_enabled() && (q.requires_grad() || keys.requires_grad()));
}

torch::Tensor decode_attention(const torch::Tensor& q_in, const torch::Tensor& keys, const torch::Tensor& vals,
                               const torch::Tensor& bias_in, double scaling) {
  VERL_CHECK(q_in.dim() == 4 && keys.dim() == 4 && vals.sizes() == keys.sizes(), kComponent,
             "decode attention expects q [B,Hkv,G,D] and keys / vals [B,Hkv,S,D], got ", q_in.sizes(), " and ",
             keys.sizes());
  VERL_CHECK(decode_attention_applies(q_in, keys), kComponent,
             "decode attention needs an AVX2 + FMA CPU, fp32 tensors without gradients and a head size that is a "
             "multiple of 8, got ", q_in.scalar_type(), " ", q_in.sizes());
  const int64_t B = q_in.size(0), Hkv = q_in.size(1), G = q_in.size(2), D = q_in.size(3), S = keys.size(2);
  VERL_CHECK(keys.size(0) == B && keys.size(1) == Hkv && keys.size(3) == D && keys.stride(3) == 1 &&
                 vals.stride(3) == 1,
             kComponent, "decode attention: keys / vals ", keys.sizes(), " do not match q ", q_in.sizes(),
             " or are not contiguous over the head dimension");
  VERL_CHECK(bias_in.numel() == B * S, kComponent, "decode attention: the mask bias has ", bias_in.numel(),
             " values; expected batch x keys = ", B * S);
  auto q = q_in.contiguous();
  auto bias = bias_in.to(torch::kFloat32).reshape({B, S}).contiguous();
  auto out = torch::empty_like(q);
  const float* qp = q.data_ptr<float>();
  const float* kp = keys.data_ptr<float>();
  const float* vp = vals.data_ptr<float>();
  const float* bp = bias.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t ks0 = keys.stride(0), ks1 = keys.stride(1), ks2 = keys.stride(2);
  const int64_t vs0 = vals.stride(0), vs1 = vals.stride(1), vs2 = vals.stride(2);
  const float scale = static_cast<float>(scaling);
  const AttendFn wide = attend_512_for(D);
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(4 * S));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / Hkv, h = item % Hkv;
      attend_any(wide, qp + item * G * D, kp + b * ks0 + h * ks1, ks2, vp + b * vs0 + h * vs1, vs2, bp + b * S, G, S,
                 D, scale, scores.data(), op + item * G * D);
    }
  });
  return out;
}

torch::Tensor decode_attention_step(const torch::Tensor& q_in, const torch::Tensor& k_in, const torch::Tensor& v_in,
                                    const torch::Tensor& cos_in, const torch::Tensor& sin_in, torch::Tensor& cache_k,
                                    torch::Tensor& cache_v, int64_t position, const torch::Tensor& bias_in,
                                    double scaling) {
  VERL_CHECK(cache_k.dim() == 4 && cache_v.sizes() == cache_k.sizes() && cache_k.is_contiguous() &&
                 cache_v.is_contiguous() && cache_k.scalar_type() == torch::kFloat32 &&
                 cache_v.scalar_type() == torch::kFloat32,
             kComponent, "decode attention step: the cache must be two contiguous fp32 [B, Hkv, capacity, D] tensors, "
             "got ", cache_k.sizes(), " and ", cache_v.sizes());
  const int64_t B = cache_k.size(0), Hkv = cache_k.size(1), capacity = cache_k.size(2), D = cache_k.size(3);
  VERL_CHECK(q_in.dim() == 2 && q_in.size(0) == B && q_in.size(1) % (Hkv * D) == 0 && k_in.dim() == 2 &&
                 k_in.sizes() == v_in.sizes() && k_in.size(0) == B && k_in.size(1) == Hkv * D,
             kComponent, "decode attention step: q must be [", B, ", heads x ", D, "] and k / v [", B, ", ", Hkv * D,
             "], got ", q_in.sizes(), ", ", k_in.sizes(), " and ", v_in.sizes());
  const int64_t G = q_in.size(1) / (Hkv * D), S = position + 1;
  VERL_CHECK(position >= 0 && position < capacity, kComponent, "decode attention step: position ", position,
             " is outside the cache's ", capacity, " positions");
  VERL_CHECK(decode_attention_applies(q_in.view({B, Hkv, G, D}), cache_k) && k_in.scalar_type() == torch::kFloat32 &&
                 v_in.scalar_type() == torch::kFloat32,
             kComponent, "decode attention step needs an AVX2 + FMA CPU, fp32 tensors without gradients and a head "
             "size that is a multiple of 8, got ", q_in.scalar_type(), " ", q_in.sizes());
  VERL_CHECK(cos_in.numel() == B * D && sin_in.numel() == B * D && cos_in.scalar_type() == torch::kFloat32 &&
                 sin_in.scalar_type() == torch::kFloat32,
             kComponent, "decode attention step: cos / sin must be fp32 [", B, ", ", D, "], got ", cos_in.sizes());
  VERL_CHECK(bias_in.numel() == B * S, kComponent, "decode attention step: the mask bias has ", bias_in.numel(),
             " values; expected batch x keys = ", B * S);
  const auto q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  const auto cos = cos_in.reshape({B, D}).contiguous(), sin = sin_in.reshape({B, D}).contiguous();
  const auto bias = bias_in.to(torch::kFloat32).reshape({B, S}).contiguous();
  auto out = torch::empty({B, Hkv * G * D}, q.options());
  const float* qp = q.data_ptr<float>();
  const float* knew = k.data_ptr<float>();
  const float* vnew = v.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* sp = sin.data_ptr<float>();
  const float* bp = bias.data_ptr<float>();
  float* kc = cache_k.data_ptr<float>();
  float* vc = cache_v.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t row_stride = Hkv * capacity * D, head_stride = capacity * D;
  const float scale = static_cast<float>(scaling);
  const AttendFn wide = attend_512_for(D);
  // Item (row b, kv head h) owns its cache slot and its G query heads: the rotary embedding, the cache write
  // and the attention all happen inside it, with no pass over [B, ...] tensors in between.
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(4 * S)), q_rot(static_cast<size_t>(G * D));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / Hkv, h = item % Hkv;
      float* k_block = kc + b * row_stride + h * head_stride;
      float* v_block = vc + b * row_stride + h * head_stride;
      rotate_head(knew + item * D, cp + b * D, sp + b * D, D, k_block + position * D);
      std::copy(vnew + item * D, vnew + (item + 1) * D, v_block + position * D);
      for (int64_t g = 0; g < G; ++g) rotate_head(qp + (item * G + g) * D, cp + b * D, sp + b * D, D, q_rot.data() + g * D);
      attend_any(wide, q_rot.data(), k_block, D, v_block, D, bp + b * S, G, S, D, scale, scores.data(),
                 op + item * G * D);
    }
  });
  return out;
}

}  // namespace verl::model
