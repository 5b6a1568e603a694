// AVX2 + FMA (and AVX-512F) building blocks shared by the CPU decode kernels (decode_attention.cpp,
// decode_kernels.cpp). Private to src/model: each function carries its target attribute, so the files compile
// for any x86-64 CPU and call these only after cpu_has_avx2_fma() / cpu_has_avx512f() said yes at run time.
#pragma once

#include <immintrin.h>

#include <cstdlib>
#include <cstring>

namespace verl::model::simd {

#define VERL_AVX2 __attribute__((target("avx2,fma")))

inline bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// VERL_DECODE_KERNELS=0 turns the hand-written decode kernels off, and the decode step runs LibTorch's ops: to
// measure them against LibTorch (bench/RESULTS.md), and a way out should one misbehave on some CPU.
inline bool decode_kernels_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("VERL_DECODE_KERNELS");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

// 512-bit kernels (AVX-512F; AVX2 code inlines into them). On a CPU with full-width AVX-512 they do twice the
// multiply-adds per instruction of the AVX2 ones.
#define VERL_AVX512 __attribute__((target("avx512f,avx2,fma")))

inline bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f") && cpu_has_avx2_fma();
  return has;
}

// exp for 8 or 16 floats: Cephes' polynomial on x - n*ln2, scaled by 2^n through the exponent bits (relative
// error ~1e-7). Inputs below -87.3 (the masked positions' bias and anything that underflows fp32) give exactly 0.
// Both widths take their constants from here, so they give the same values lane for lane.
namespace exp_poly {
constexpr float kLow = -87.3f, kHigh = 88.3f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;  // ln 2 in two parts, for exact n * ln2
constexpr float kCoefficients[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                    4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace exp_poly

VERL_AVX2 inline __m256 exp8(__m256 x) {
  using namespace exp_poly;
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_GT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLow)), _mm256_set1_ps(kHigh));
  __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), x);
  __m256 y = _mm256_set1_ps(kCoefficients[0]);
  for (int i = 1; i < 6; ++i) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(kCoefficients[i]));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(pow2n)), underflow);
}

VERL_AVX512 inline __m512 exp16(__m512 x) {
  using namespace exp_poly;
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLow), _CMP_GT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kLow)), _mm512_set1_ps(kHigh));
  __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                                  _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), x);
  __m512 y = _mm512_set1_ps(kCoefficients[0]);
  for (int i = 1; i < 6; ++i) y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(kCoefficients[i]));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  const __m512i pow2n = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_maskz_mov_ps(underflow, _mm512_mul_ps(y, _mm512_castsi512_ps(pow2n)));
}

VERL_AVX2 inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace verl::model::simd
