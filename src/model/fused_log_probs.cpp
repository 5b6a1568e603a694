#include "verl/model/fused_log_probs.h"

#include <algorithm>

#include "verl/common/error.h"

namespace verl::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per chunk: about 64M fp32 elements (256 MB) of the vocabulary-wide temporaries at a time.
int64_t chunk_rows(int64_t vocab) { return std::max<int64_t>(1, (int64_t{1} << 26) / std::max<int64_t>(1, vocab)); }

class FusedLogProbFunction : public torch::autograd::Function<FusedLogProbFunction> {
 public:
  // logits [N, V], tokens [N]; returns {log_probs [N], entropy [N] (empty when not asked)}.
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& tokens,
                               double temperature, bool with_entropy, int64_t step) {
    const int64_t N = logits.size(0);
    const auto fp32 = logits.options().dtype(torch::kFloat32);
    ctx->set_materialize_grads(false);  // an output the loss does not use gets no gradient work
    torch::Tensor lse = torch::empty({N}, fp32), log_probs = torch::empty({N}, fp32);
    torch::Tensor entropy = with_entropy ? torch::empty({N}, fp32) : torch::empty({0}, fp32);
    for (int64_t start = 0; start < N; start += step) {
      const int64_t n = std::min(step, N - start);
      const torch::Tensor z = logits.narrow(0, start, n).to(torch::kFloat32) / temperature;
      const torch::Tensor l = torch::logsumexp(z, -1);
      lse.narrow(0, start, n).copy_(l);
      log_probs.narrow(0, start, n).copy_(z.gather(-1, tokens.narrow(0, start, n).unsqueeze(-1)).squeeze(-1) - l);
      if (with_entropy) {
        // p = exp(z - lse) from the lse just taken (softmax would reduce over the row again).
        entropy.narrow(0, start, n).copy_(l - ((z - l.unsqueeze(-1)).exp_() * z).sum(-1));
      }
    }
    ctx->save_for_backward({logits, tokens, lse, entropy});
    ctx->saved_data["temperature"] = temperature;
    ctx->saved_data["with_entropy"] = with_entropy;
    ctx->saved_data["step"] = step;
    return {log_probs, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &logits = saved[0], &tokens = saved[1], &lse = saved[2], &entropy = saved[3];
    const double temperature = ctx->saved_data["temperature"].toDouble();
    const bool with_entropy = ctx->saved_data["with_entropy"].toBool();
    const torch::Tensor& g_log_probs = grads[0];
    const torch::Tensor g_entropy = with_entropy && grads.size() > 1 ? grads[1] : torch::Tensor();
    const int64_t N = logits.size(0), step = ctx->saved_data["step"].toInt();
    if (!g_log_probs.defined() && !g_entropy.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    torch::Tensor grad = torch::empty_like(logits);
    for (int64_t start = 0; start < N; start += step) {
      const int64_t n = std::min(step, N - start);
      const torch::Tensor z = logits.narrow(0, start, n).to(torch::kFloat32) / temperature;
      const torch::Tensor log_p = z - lse.narrow(0, start, n).unsqueeze(-1);
      const torch::Tensor p = log_p.exp();
      // dL/dz = p * (-g_lp - g_H (log p + H)) + g_lp at the token: one vocabulary-wide product per chunk.
      torch::Tensor coefficient;
      if (g_entropy.defined()) {
        const torch::Tensor ge = g_entropy.narrow(0, start, n).unsqueeze(-1);
        coefficient = (log_p + entropy.narrow(0, start, n).unsqueeze(-1)).mul_(-ge);
        if (g_log_probs.defined()) coefficient.sub_(g_log_probs.narrow(0, start, n).unsqueeze(-1));
      } else {
        coefficient = -g_log_probs.narrow(0, start, n).unsqueeze(-1);
      }
      torch::Tensor g = p * coefficient;
      if (g_log_probs.defined()) {
        g.scatter_add_(-1, tokens.narrow(0, start, n).unsqueeze(-1), g_log_probs.narrow(0, start, n).unsqueeze(-1));
      }
      grad.narrow(0, start, n).copy_(g.div_(temperature));
    }
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

FusedLogProbs fused_log_probs(const torch::Tensor& logits, const torch::Tensor& tokens, double temperature,
                              bool with_entropy, int64_t rows_per_chunk) {
  VERL_CHECK(temperature > 0, "model", "temperature must be positive, got ", temperature);
  VERL_CHECK(logits.dim() >= 1 && tokens.sizes() == logits.sizes().slice(0, logits.dim() - 1), "model",
             "fused_log_probs: tokens ", tokens.sizes(), " must be the logits' ", logits.sizes(), " without the last dim");
  const int64_t V = logits.size(-1);
  auto flat_tokens = tokens.to(logits.device()).to(torch::kInt64).reshape({-1});
  const int64_t step = rows_per_chunk > 0 ? rows_per_chunk : chunk_rows(V);
  auto out = FusedLogProbFunction::apply(logits.reshape({-1, V}), flat_tokens, temperature, with_entropy, step);
  FusedLogProbs result;
  result.log_probs = out[0].view(tokens.sizes());
  if (with_entropy) result.entropy = out[1].view(tokens.sizes());
  return result;
}

}  // namespace verl::model
