#include "verl/model/decode_kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "simd_math.h"
#include "verl/common/error.h"

namespace verl::model {
namespace {

constexpr const char* kComponent = "model";
using simd::exp8;
using simd::hsum8;

// Columns of one work item of skinny_linear's dot-product tiles: 8 tiles of 3 (6 of 4 with AVX-512). Enough
// work per item to be worth a thread at decode sizes, and enough items (hidden 512 -> 22) to balance threads.
constexpr int64_t kTileColumns = 3;
constexpr int64_t kItemColumns = 8 * kTileColumns;
// Below this many multiply-adds per parallel chunk, waking the other threads costs more than it saves.
constexpr int64_t kMinParallelMacs = int64_t{1} << 18;

// C[i][j] = A[i] . W[j] (+ bias[j]) (+ R[i][j]) for MR rows of A and NR rows of W, K a multiple of 8. The
// MR x NR accumulators stay in registers (12 + 3 + 1 of AVX2's 16 at 4 x 3); each W row is read once per tile
// in its stored layout.
template <int MR, int NR>
VERL_AVX2 void dot_tile(const float* A, int64_t lda, const float* W, int64_t ldw, int64_t K, float* C, int64_t ldc,
                        const float* bias, const float* R, int64_t ldr) {
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K; k += 8) {
    __m256 w[NR];
    for (int j = 0; j < NR; ++j) w[j] = _mm256_loadu_ps(W + j * ldw + k);
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_loadu_ps(A + i * lda + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(a, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float v = hsum8(acc[i][j]);
      if (bias) v += bias[j];
      if (R) v += R[i * ldr + j];
      C[i * ldc + j] = v;
    }
  }
}

// The same tile with 512-bit vectors, 4 x 4 (16 of AVX-512's 32 registers), K a multiple of 16. On a CPU with
// full-width AVX-512 it doubles the multiply-adds per instruction: measured alone at 64 rows, 247-294 GFLOP/s
// against 155-192 for the AVX2 tile (bench/RESULTS.md).
template <int MR, int NR>
VERL_AVX512 void dot_tile_512(const float* A, int64_t lda, const float* W, int64_t ldw, int64_t K, float* C,
                              int64_t ldc, const float* bias, const float* R, int64_t ldr) {
  __m512 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; k += 16) {
    __m512 w[NR];
    for (int j = 0; j < NR; ++j) w[j] = _mm512_loadu_ps(W + j * ldw + k);
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_loadu_ps(A + i * lda + k);
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(a, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < NR; ++j) {
      float v = _mm512_reduce_add_ps(acc[i][j]);
      if (bias) v += bias[j];
      if (R) v += R[i * ldr + j];
      C[i * ldc + j] = v;
    }
  }
}

// ---- The broadcast kernel over packed panels (AVX-512F) ----

// Columns per packed panel: two 512-bit vectors.
constexpr int64_t kPanelColumns = 32;
// Rows per register tile: 8 x 2 accumulators (16 of AVX-512's 32 registers), 2 panel loads and 8 broadcasts
// per 16 multiply-adds of each k.
constexpr int64_t kPanelRows = 8;

// C[i][0..32) = A[i] . P[:, 0..32) (+ bias) (+ R[i]) for MR rows, P one panel [K][32]; only the columns set in
// m0 / m1 (the first and second 16) are read from bias / R and written.
template <int MR>
VERL_AVX512 void panel_tile(const float* A, int64_t lda, const float* P, int64_t K, float* C, int64_t ldc,
                            __mmask16 m0, __mmask16 m1, const float* bias, const float* R, int64_t ldr) {
  __m512 acc[MR][2];
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 w0 = _mm512_loadu_ps(P + k * kPanelColumns);
    const __m512 w1 = _mm512_loadu_ps(P + k * kPanelColumns + 16);
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * lda + k]);
      acc[i][0] = _mm512_fmadd_ps(a, w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(a, w1, acc[i][1]);
    }
  }
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < MR; ++i) {
    __m512 v0 = _mm512_add_ps(acc[i][0], b0), v1 = _mm512_add_ps(acc[i][1], b1);
    if (R) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, R + i * ldr));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, R + i * ldr + 16));
    }
    _mm512_mask_storeu_ps(C + i * ldc, m0, v0);
    _mm512_mask_storeu_ps(C + i * ldc + 16, m1, v1);
  }
}

// silu(x Wg^T + bg) * (x Wu^T + bu) for MR rows and one panel of each of gate (G) and up (U): 4 x MR
// accumulators, the activation applied in registers before the only store.
template <int MR>
VERL_AVX512 void glu_panel_tile(const float* A, int64_t lda, const float* G, const float* U, int64_t K, float* C,
                                int64_t ldc, __mmask16 m0, __mmask16 m1, const float* gate_bias,
                                const float* up_bias) {
  __m512 g[MR][2], u[MR][2];
  for (int i = 0; i < MR; ++i) g[i][0] = g[i][1] = u[i][0] = u[i][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const __m512 g0 = _mm512_loadu_ps(G + k * kPanelColumns), g1 = _mm512_loadu_ps(G + k * kPanelColumns + 16);
    const __m512 u0 = _mm512_loadu_ps(U + k * kPanelColumns), u1 = _mm512_loadu_ps(U + k * kPanelColumns + 16);
    for (int i = 0; i < MR; ++i) {
      const __m512 a = _mm512_set1_ps(A[i * lda + k]);
      g[i][0] = _mm512_fmadd_ps(a, g0, g[i][0]);
      g[i][1] = _mm512_fmadd_ps(a, g1, g[i][1]);
      u[i][0] = _mm512_fmadd_ps(a, u0, u[i][0]);
      u[i][1] = _mm512_fmadd_ps(a, u1, u[i][1]);
    }
  }
  const __mmask16 masks[2] = {m0, m1};
  __m512 gb[2], ub[2];
  for (int j = 0; j < 2; ++j) {
    gb[j] = gate_bias ? _mm512_maskz_loadu_ps(masks[j], gate_bias + 16 * j) : _mm512_setzero_ps();
    ub[j] = up_bias ? _mm512_maskz_loadu_ps(masks[j], up_bias + 16 * j) : _mm512_setzero_ps();
  }
  const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
  for (int i = 0; i < MR; ++i) {
    for (int j = 0; j < 2; ++j) {
      const __m512 gv = _mm512_add_ps(g[i][j], gb[j]), uv = _mm512_add_ps(u[i][j], ub[j]);
      const __m512 e = simd::exp16(_mm512_sub_ps(zero, gv));  // exp(-g)
      _mm512_mask_storeu_ps(C + i * ldc + 16 * j, masks[j], _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(one, e)), uv));
    }
  }
}

// Rows per GLU tile: 6 x 4 accumulators, 4 panel loads and 6 broadcasts per 24 multiply-adds.
constexpr int64_t kGluRows = 6;

using GluTileFn = void (*)(const float*, int64_t, const float*, const float*, int64_t, float*, int64_t, __mmask16,
                           __mmask16, const float*, const float*);

GluTileFn glu_tile_for(int64_t mr) {
  static const GluTileFn tiles[kGluRows] = {glu_panel_tile<1>, glu_panel_tile<2>, glu_panel_tile<3>,
                                            glu_panel_tile<4>, glu_panel_tile<5>, glu_panel_tile<6>};
  return tiles[mr - 1];
}

using PanelTileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, __mmask16, __mmask16,
                             const float*, const float*, int64_t);

PanelTileFn panel_tile_for(int64_t mr) {
  static const PanelTileFn tiles[kPanelRows] = {panel_tile<1>, panel_tile<2>, panel_tile<3>, panel_tile<4>,
                                                panel_tile<5>, panel_tile<6>, panel_tile<7>, panel_tile<8>};
  return tiles[mr - 1];
}

__mmask16 first_columns(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << std::max<int64_t>(n, 0)) - 1);
}

// W [N, K] <-> [N / 32, K, 32] (N a multiple of 32): panel p holds columns [32p, 32p + 32) of x W^T. Rows
// [32p, 32p + 32) of W and panel p occupy the same K * 32 floats, so packing transposes each block where it
// lies, through a per-thread scratch copy of the block: the weights are never held twice. Unpacking is the
// inverse transposition (a permutation: bit for bit).
void transpose_panels(float* data, int64_t N, int64_t K, bool to_panels) {
  at::parallel_for(0, N / kPanelColumns, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(K * kPanelColumns));
    for (int64_t p = begin; p < end; ++p) {
      float* block = data + p * K * kPanelColumns;
      std::copy(block, block + K * kPanelColumns, scratch.data());
      const float* from = scratch.data();
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t n = 0; n < kPanelColumns; ++n) {
          if (to_panels) {
            block[k * kPanelColumns + n] = from[n * K + k];
          } else {
            block[n * K + k] = from[k * kPanelColumns + n];
          }
        }
      }
    }
  });
}

struct PackedWeight {
  c10::Storage storage;  // keeps the memory alive until it is unpacked
  float* data;           // the weight's first element: panels [N / 32][K][32] while packed
  int64_t n, k;
  bool owned;  // packed by this scope; an enclosing scope's entries are only looked up
};
// Keyed by the data pointer, so every tensor over the packed memory finds it (not only the one passed in).
using PackedWeights = std::unordered_map<const void*, PackedWeight>;

// The innermost DecodeWeightPacking of this thread (thread-rank tests run several rollouts at once).
thread_local const PackedWeights* active_packing = nullptr;

const PackedWeight* packed_for(const torch::Tensor& w) {
  if (active_packing == nullptr || !w.defined() || !w.has_storage()) return nullptr;
  const auto it = active_packing->find(w.data_ptr());
  if (it == active_packing->end()) return nullptr;
  const PackedWeight& p = it->second;
  VERL_ASSERT(w.dim() == 2 && w.size(0) == p.n && w.size(1) == p.k && w.is_contiguous(), kComponent,
              "a tensor ", w.sizes(), " over a weight packed for the decode step [", p.n, ", ", p.k,
              "] was read while it is packed");
  return &p;
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t, const float*,
                        const float*, int64_t);

template <int MR>
TileFn tile_for_columns(int64_t nr, bool wide) {
  if (wide) {
    switch (nr) {
      case 4: return dot_tile_512<MR, 4>;
      case 3: return dot_tile_512<MR, 3>;
      case 2: return dot_tile_512<MR, 2>;
      default: return dot_tile_512<MR, 1>;
    }
  }
  switch (nr) {
    case 3: return dot_tile<MR, 3>;
    case 2: return dot_tile<MR, 2>;
    default: return dot_tile<MR, 1>;
  }
}

TileFn tile_for(int64_t mr, int64_t nr, bool wide) {
  switch (mr) {
    case 4: return tile_for_columns<4>(nr, wide);
    case 3: return tile_for_columns<3>(nr, wide);
    case 2: return tile_for_columns<2>(nr, wide);
    default: return tile_for_columns<1>(nr, wide);
  }
}

struct Job {
  const float* weight;
  const float* panels;    // the packed weight (panels), or null
  const float* bias;      // or null
  const float* residual;  // or null
  float* out;
  int64_t n;
};

// Panel p of a packed projection, every row of x, in tiles of kPanelRows rows.
void run_panel(const float* x, int64_t M, int64_t K, const Job& job, int64_t p) {
  const int64_t c = p * kPanelColumns, columns = std::min(kPanelColumns, job.n - c);
  const __mmask16 m0 = first_columns(columns), m1 = first_columns(columns - 16);
  const float* panel = job.panels + p * K * kPanelColumns;
  for (int64_t i = 0; i < M; i += kPanelRows) {
    panel_tile_for(std::min(kPanelRows, M - i))(x + i * K, K, panel, K, job.out + i * job.n + c, job.n, m0, m1,
                                                job.bias ? job.bias + c : nullptr,
                                                job.residual ? job.residual + i * job.n + c : nullptr, job.n);
  }
}

// Columns [c0, c1) of one projection, every row of x, in tiles of `tile_columns` (4 wide, 3 otherwise).
void run_columns(const float* x, int64_t M, int64_t K, const Job& job, int64_t c0, int64_t c1, bool wide) {
  const int64_t tile_columns = wide ? 4 : kTileColumns;
  for (int64_t c = c0; c < c1; c += tile_columns) {
    const int64_t nr = std::min(tile_columns, c1 - c);
    for (int64_t i = 0; i < M; i += 4) {
      const int64_t mr = std::min<int64_t>(4, M - i);
      tile_for(mr, nr, wide)(x + i * K, K, job.weight + c * K, K, K, job.out + i * job.n + c, job.n,
                       job.bias ? job.bias + c : nullptr, job.residual ? job.residual + i * job.n + c : nullptr,
                       job.n);
    }
  }
}

void check_projection(const torch::Tensor& x, const SkinnyProjection& p) {
  const int64_t K = x.size(1);
  VERL_CHECK(p.weight.dim() == 2 && p.weight.size(1) == K && p.weight.scalar_type() == torch::kFloat32 &&
                 p.weight.device().is_cpu(),
             kComponent, "skinny_linear: weight must be fp32 [N, ", K, "] on the CPU, got ", p.weight.scalar_type(),
             " ", p.weight.sizes());
  if (p.bias.defined()) {
    VERL_CHECK(p.bias.dim() == 1 && p.bias.size(0) == p.weight.size(0) && p.bias.scalar_type() == torch::kFloat32,
               kComponent, "skinny_linear: bias must be fp32 [", p.weight.size(0), "], got ", p.bias.sizes());
  }
}

VERL_AVX2 void rms_norm_row(const float* x, const float* w, int64_t H, float eps, float* out) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t h = 0; h < H; h += 8) {
    const __m256 v = _mm256_loadu_ps(x + h);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  const float r = 1.0f / std::sqrt(hsum8(acc) / static_cast<float>(H) + eps);
  const __m256 rv = _mm256_set1_ps(r);
  for (int64_t h = 0; h < H; h += 8) {
    _mm256_storeu_ps(out + h, _mm256_mul_ps(_mm256_loadu_ps(w + h), _mm256_mul_ps(_mm256_loadu_ps(x + h), rv)));
  }
}

// The rows the kernels read: x itself, or RMSNorm(x) written by each thread into its own buffer (every work
// item reads every row; normalizing [M, K] twice costs less than another parallel region and pass).
const float* input_rows(const float* x, int64_t M, int64_t K, const RowNorm* norm) {
  if (norm == nullptr) return x;
  thread_local std::vector<float> normed;
  normed.resize(static_cast<size_t>(M * K));
  const float* w = norm->weight.data_ptr<float>();
  const float eps = static_cast<float>(norm->eps);
  for (int64_t i = 0; i < M; ++i) rms_norm_row(x + i * K, w, K, eps, normed.data() + i * K);
  return normed.data();
}

void check_norm(const torch::Tensor& x, const RowNorm* norm) {
  if (norm == nullptr) return;
  VERL_CHECK(norm->weight.dim() == 1 && norm->weight.size(0) == x.size(1) &&
                 norm->weight.scalar_type() == torch::kFloat32 && norm->weight.is_contiguous(),
             kComponent, "input norm weight must be contiguous fp32 [", x.size(1), "], got ", norm->weight.sizes());
}

std::vector<torch::Tensor> run_skinny(const torch::Tensor& x_in, const std::vector<SkinnyProjection>& projections,
                                      const torch::Tensor& residual_in, const RowNorm* norm) {
  VERL_CHECK(x_in.dim() == 2 && decode_kernels_apply(x_in), kComponent,
             "skinny_linear needs fp32 x [M, K] on an AVX2 + FMA CPU with K a multiple of 8 and no gradients, got ",
             x_in.scalar_type(), " ", x_in.sizes());
  const auto x = x_in.contiguous();
  const int64_t M = x.size(0), K = x.size(1);
  std::vector<torch::Tensor> weights, biases, outs;
  std::vector<Job> jobs;
  // Only the one-projection overload passes a residual.
  const auto residual = residual_in.defined() ? residual_in.contiguous() : torch::Tensor();
  for (const auto& p : projections) {
    check_projection(x, p);
    weights.push_back(p.weight.contiguous());
    biases.push_back(p.bias.defined() ? p.bias.contiguous() : torch::Tensor());
    outs.push_back(torch::empty({M, p.weight.size(0)}, x.options()));
    if (residual.defined()) {
      VERL_CHECK(residual.dim() == 2 && residual.size(0) == M && residual.size(1) == p.weight.size(0) &&
                     residual.scalar_type() == torch::kFloat32,
                 kComponent, "skinny_linear: residual must be fp32 [", M, ", ", p.weight.size(0), "], got ",
                 residual.sizes());
    }
    const PackedWeight* packed = packed_for(p.weight);
    jobs.push_back({weights.back().data_ptr<float>(), packed ? packed->data : nullptr,
                    biases.back().defined() ? biases.back().data_ptr<float>() : nullptr,
                    residual.defined() ? residual.data_ptr<float>() : nullptr, outs.back().data_ptr<float>(),
                    p.weight.size(0)});
  }
  // Work items, all projections in one index space: one panel of a packed projection, or kItemColumns columns
  // of another.
  struct Item {
    size_t job;
    int64_t first, columns;
  };
  std::vector<Item> items;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int64_t step = jobs[j].panels ? kPanelColumns : kItemColumns;
    for (int64_t c = 0; c < jobs[j].n; c += step) items.push_back({j, c, std::min(step, jobs[j].n - c)});
  }
  const int64_t macs_per_item = std::max<int64_t>(1, M * kItemColumns * K);
  const int64_t grain = std::max<int64_t>(1, kMinParallelMacs / macs_per_item);
  const float* xp = x.data_ptr<float>();
  const bool wide = K % 16 == 0 && simd::cpu_has_avx512f();
  check_norm(x, norm);
  at::parallel_for(0, static_cast<int64_t>(items.size()), grain, [&](int64_t begin, int64_t end) {
    const float* rows = input_rows(xp, M, K, norm);
    for (int64_t t = begin; t < end; ++t) {
      const Item& item = items[t];
      const Job& job = jobs[item.job];
      if (job.panels) {
        run_panel(rows, M, K, job, item.first / kPanelColumns);
      } else {
        run_columns(rows, M, K, job, item.first, item.first + item.columns, wide);
      }
    }
  });
  return outs;
}

VERL_AVX2 void silu_mul_range(const float* g, const float* u, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 e = exp8(_mm256_xor_ps(gv, sign));  // exp(-g)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
  }
  for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace

struct DecodeWeightPacking::Impl {
  PackedWeights packed;
  const PackedWeights* outer;
  size_t owned = 0;

  void unpack_owned() {
    for (auto& [data, p] : packed) {
      if (p.owned) transpose_panels(p.data, p.n, p.k, /*to_panels=*/false);
    }
  }
};

DecodeWeightPacking::DecodeWeightPacking(const std::vector<torch::Tensor>& weights) : impl_(std::make_unique<Impl>()) {
  impl_->outer = active_packing;
  if (impl_->outer != nullptr) {
    for (const auto& [data, p] : *impl_->outer) impl_->packed.emplace(data, PackedWeight{p.storage, p.data, p.n, p.k, false});
  }
  active_packing = &impl_->packed;
  if (!simd::cpu_has_avx512f() || !simd::decode_kernels_enabled()) return;  // the broadcast kernel is AVX-512 only
  try {
    for (const auto& w : weights) {
      const bool packable = w.defined() && w.dim() == 2 && w.device().is_cpu() && w.scalar_type() == torch::kFloat32 &&
                            w.is_contiguous() && w.numel() > 0 && w.size(0) % kPanelColumns == 0;
      if (!packable || impl_->packed.count(w.data_ptr()) > 0) continue;  // packed already (here or by an outer scope)
      auto& p = impl_->packed[w.data_ptr()];
      p = PackedWeight{w.storage(), w.data_ptr<float>(), w.size(0), w.size(1), false};
      transpose_panels(p.data, p.n, p.k, /*to_panels=*/true);
      p.owned = true;
      ++impl_->owned;
    }
  } catch (...) {  // no weight stays packed past a failed construction
    impl_->unpack_owned();
    active_packing = impl_->outer;
    throw;
  }
}

DecodeWeightPacking::~DecodeWeightPacking() {
  impl_->unpack_owned();
  active_packing = impl_->outer;
}

size_t DecodeWeightPacking::size() const { return impl_->owned; }

bool packed_for_decode(const torch::Tensor& weight) { return packed_for(weight) != nullptr; }

torch::Tensor embedding_rows(const torch::Tensor& weight, const torch::Tensor& ids) {
  const PackedWeight* p = packed_for(weight);
  if (p == nullptr) return torch::embedding(weight, ids);
  const auto flat = ids.to(torch::kCPU, torch::kInt64).contiguous().view({-1});
  const int64_t rows = flat.size(0), K = p->k;
  auto out = torch::empty({rows, K}, weight.options().requires_grad(false));
  const int64_t* id = flat.data_ptr<int64_t>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    VERL_CHECK(id[r] >= 0 && id[r] < p->n, kComponent, "token id ", id[r], " is outside the embedding's ", p->n,
               " rows");
    // Row id is column id % 32 of panel id / 32: one float per k, 32 apart.
    const float* column = p->data + id[r] / kPanelColumns * K * kPanelColumns + id[r] % kPanelColumns;
    for (int64_t k = 0; k < K; ++k) o[r * K + k] = column[k * kPanelColumns];
  }
  auto shape = ids.sizes().vec();
  shape.push_back(K);
  return out.view(shape);
}

bool decode_kernels_apply(const torch::Tensor& x) {
  return simd::decode_kernels_enabled() && simd::cpu_has_avx2_fma() && x.defined() && x.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
         x.dim() >= 1 && x.size(-1) % 8 == 0 && !torch::GradMode::is_enabled();
}

std::vector<torch::Tensor> skinny_linear(const torch::Tensor& x, const std::vector<SkinnyProjection>& projections) {
  return run_skinny(x, projections, torch::Tensor(), nullptr);
}

std::vector<torch::Tensor> skinny_linear(const torch::Tensor& x, const RowNorm& norm,
                                         const std::vector<SkinnyProjection>& projections) {
  return run_skinny(x, projections, torch::Tensor(), &norm);
}

torch::Tensor skinny_linear(const torch::Tensor& x, const SkinnyProjection& projection, const torch::Tensor& residual) {
  return run_skinny(x, {projection}, residual, nullptr).front();
}

torch::Tensor skinny_glu(const torch::Tensor& x_in, const SkinnyProjection& gate, const SkinnyProjection& up,
                         const RowNorm& norm_in) {
  const RowNorm* norm = norm_in.weight.defined() ? &norm_in : nullptr;
  VERL_CHECK(x_in.dim() == 2 && decode_kernels_apply(x_in), kComponent,
             "skinny_glu needs fp32 x [M, K] on an AVX2 + FMA CPU with K a multiple of 8 and no gradients, got ",
             x_in.scalar_type(), " ", x_in.sizes());
  const auto x = x_in.contiguous();
  check_projection(x, gate);
  check_projection(x, up);
  VERL_CHECK(gate.weight.size(0) == up.weight.size(0), kComponent, "skinny_glu: gate ", gate.weight.sizes(),
             " and up ", up.weight.sizes(), " must have the same number of rows");
  const PackedWeight* g = packed_for(gate.weight);
  const PackedWeight* u = packed_for(up.weight);
  if (g == nullptr || u == nullptr) {
    const auto gate_up = run_skinny(x, {gate, up}, torch::Tensor(), norm);
    return silu_mul(gate_up[0], gate_up[1]);
  }
  const int64_t M = x.size(0), K = x.size(1), N = gate.weight.size(0);
  const auto gate_bias = gate.bias.defined() ? gate.bias.contiguous() : torch::Tensor();
  const auto up_bias = up.bias.defined() ? up.bias.contiguous() : torch::Tensor();
  auto out = torch::empty({M, N}, x.options());
  const float* xp = x.data_ptr<float>();
  const float* gp = g->data;
  const float* upp = u->data;
  const float* gbp = gate_bias.defined() ? gate_bias.data_ptr<float>() : nullptr;
  const float* ubp = up_bias.defined() ? up_bias.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
  const int64_t panels = (N + kPanelColumns - 1) / kPanelColumns;
  const int64_t grain = std::max<int64_t>(1, kMinParallelMacs / std::max<int64_t>(1, 2 * M * kPanelColumns * K));
  check_norm(x, norm);
  at::parallel_for(0, panels, grain, [&](int64_t begin, int64_t end) {
    const float* rows = input_rows(xp, M, K, norm);
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = p * kPanelColumns, columns = std::min(kPanelColumns, N - c);
      const __mmask16 m0 = first_columns(columns), m1 = first_columns(columns - 16);
      for (int64_t i = 0; i < M; i += kGluRows) {
        glu_tile_for(std::min(kGluRows, M - i))(rows + i * K, K, gp + p * K * kPanelColumns, upp + p * K * kPanelColumns,
                                                K, op + i * N + c, N, m0, m1, gbp ? gbp + c : nullptr,
                                                ubp ? ubp + c : nullptr);
      }
    }
  });
  return out;
}

torch::Tensor rms_norm_rows(const torch::Tensor& x_in, const torch::Tensor& weight_in, double eps) {
  VERL_CHECK(x_in.dim() == 2 && decode_kernels_apply(x_in), kComponent,
             "rms_norm_rows needs fp32 x [M, H] (H a multiple of 8) on an AVX2 + FMA CPU, got ", x_in.sizes());
  VERL_CHECK(weight_in.numel() == x_in.size(1) && weight_in.scalar_type() == torch::kFloat32, kComponent,
             "rms_norm_rows: weight must be fp32 [", x_in.size(1), "], got ", weight_in.sizes());
  const auto x = x_in.contiguous();
  const auto weight = weight_in.contiguous();
  const int64_t M = x.size(0), H = x.size(1);
  auto out = torch::empty_like(x);
  const float* xp = x.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const float e = static_cast<float>(eps);
  at::parallel_for(0, M, std::max<int64_t>(1, 65536 / H), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) rms_norm_row(xp + i * H, wp, H, e, op + i * H);
  });
  return out;
}

torch::Tensor silu_mul(const torch::Tensor& gate_in, const torch::Tensor& up_in) {
  // Any width: the tail past the last multiple of 8 is done in scalar code.
  const auto fp32_cpu = [](const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat32; };
  VERL_CHECK(gate_in.sizes() == up_in.sizes() && fp32_cpu(gate_in) && fp32_cpu(up_in) && simd::cpu_has_avx2_fma() &&
                 !torch::GradMode::is_enabled(),
             kComponent, "silu_mul needs two fp32 tensors of one shape on an AVX2 + FMA CPU, got ", gate_in.sizes(),
             " and ", up_in.sizes());
  const auto gate = gate_in.contiguous(), up = up_in.contiguous();
  auto out = torch::empty_like(gate);
  const float* g = gate.data_ptr<float>();
  const float* u = up.data_ptr<float>();
  float* o = out.data_ptr<float>();
  constexpr int64_t kChunk = 4096;  // elements per task: a multiple of 8
  const int64_t n = gate.numel(), chunks = (n + kChunk - 1) / kChunk;
  at::parallel_for(0, chunks, 16, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t start = c * kChunk;
      silu_mul_range(g + start, u + start, o + start, std::min(kChunk, n - start));
    }
  });
  return out;
}

}  // namespace verl::model
