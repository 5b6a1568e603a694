#include "verl/model/decode_attention.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "verl/common/error.h"

namespace verl::model {

namespace {

constexpr const char* kComponent = "model";

// Eight floats as one GCC/Clang vector: AVX where the target has it, two SSE registers otherwise.
typedef float Float8 __attribute__((vector_size(32)));

inline Float8 load8(const float* p) {
  Float8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store8(float* p, Float8 v) { std::memcpy(p, &v, sizeof(v)); }

float dot(const float* a, const float* b, int64_t n) {
  Float8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc += load8(a + i) * load8(b + i);
  float sum = acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// out += scale * x
void axpy(float* out, float scale, const float* x, int64_t n) {
  const Float8 s = {scale, scale, scale, scale, scale, scale, scale, scale};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(out + i, load8(out + i) + s * load8(x + i));
  for (; i < n; ++i) out[i] += scale * x[i];
}

}  // namespace

bool decode_attention_applies(const torch::Tensor& q, const torch::Tensor& keys) {
  return q.device().is_cpu() && q.scalar_type() == torch::kFloat32 && keys.scalar_type() == torch::kFloat32 &&
         !(torch::GradMode::is_enabled() && (q.requires_grad() || keys.requires_grad()));
}

torch::Tensor decode_attention(const torch::Tensor& q_in, const torch::Tensor& keys, const torch::Tensor& vals,
                               const torch::Tensor& bias_in, double scaling) {
  VERL_CHECK(q_in.dim() == 4 && keys.dim() == 4 && vals.sizes() == keys.sizes(), kComponent,
             "decode attention expects q [B,Hkv,G,D] and keys / vals [B,Hkv,S,D], got ", q_in.sizes(), " and ",
             keys.sizes());
  const int64_t B = q_in.size(0), Hkv = q_in.size(1), G = q_in.size(2), D = q_in.size(3), S = keys.size(2);
  VERL_CHECK(keys.size(0) == B && keys.size(1) == Hkv && keys.size(3) == D && keys.stride(3) == 1 &&
                 vals.stride(3) == 1,
             kComponent, "decode attention: keys / vals ", keys.sizes(), " do not match q ", q_in.sizes(),
             " or are not contiguous over the head dimension");
  auto q = q_in.contiguous();
  auto bias = bias_in.to(torch::kFloat32).reshape({B, S}).contiguous();
  auto out = torch::zeros_like(q);
  const float* qp = q.data_ptr<float>();
  const float* kp = keys.data_ptr<float>();
  const float* vp = vals.data_ptr<float>();
  const float* bp = bias.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t ks0 = keys.stride(0), ks1 = keys.stride(1), ks2 = keys.stride(2);
  const int64_t vs0 = vals.stride(0), vs1 = vals.stride(1), vs2 = vals.stride(2);
  const float scale = static_cast<float>(scaling);
  at::parallel_for(0, B * Hkv, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(G * S));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / Hkv, h = item % Hkv;
      const float* K = kp + b * ks0 + h * ks1;
      const float* V = vp + b * vs0 + h * vs1;
      const float* mask = bp + b * S;
      const float* Q = qp + item * G * D;
      float* O = op + item * G * D;
      // Scores, key by key: each cached key row is read once for all the group's query heads.
      for (int64_t s = 0; s < S; ++s) {
        const float* k = K + s * ks2;
        for (int64_t g = 0; g < G; ++g) scores[g * S + s] = dot(Q + g * D, k, D) * scale + mask[s];
      }
      for (int64_t g = 0; g < G; ++g) {
        float* row = scores.data() + g * S;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t s = 0; s < S; ++s) m = std::max(m, row[s]);
        float sum = 0.f;
        for (int64_t s = 0; s < S; ++s) {
          row[s] = std::exp(row[s] - m);
          sum += row[s];
        }
        const float inv = 1.f / sum;
        for (int64_t s = 0; s < S; ++s) row[s] *= inv;
      }
      // Weighted values, value row by value row.
      for (int64_t s = 0; s < S; ++s) {
        const float* v = V + s * vs2;
        for (int64_t g = 0; g < G; ++g) axpy(O + g * D, scores[g * S + s], v, D);
      }
    }
  });
  return out;
}

}  // namespace verl::model
