#include "verl/model/top_k_log_probs.h"

#include "verl/common/error.h"

namespace verl::model {

TopKLogProbs top_k_log_probs(const torch::Tensor& logits, double temperature, const TopKQuery& query) {
  const int64_t vocab = logits.size(-1);
  VERL_CHECK(query.top_k <= vocab, "model", "top-k log-probs: k=", query.top_k, " is larger than the vocabulary (",
             vocab, " tokens)");
  TopKLogProbs out;
  const torch::Tensor z = logits.to(torch::kFloat32) / temperature;
  const torch::Tensor lse = torch::logsumexp(z, -1, /*keepdim=*/true);
  if (query.gather_ids.defined()) {
    VERL_CHECK(query.gather_ids.dim() == logits.dim() &&
                   query.gather_ids.sizes().slice(0, logits.dim() - 1) == logits.sizes().slice(0, logits.dim() - 1),
               "model", "top-k log-probs: token ids ", query.gather_ids.sizes(), " do not match the logits ",
               logits.sizes(), " ([..., K] against [..., V])");
    const torch::Tensor ids = query.gather_ids.to(z.device()).to(torch::kInt64);
    // One device-to-host copy for both ends of the range (a GPU's gather would fault on a bad id, not throw).
    const torch::Tensor range =
        ids.numel() > 0 ? torch::stack({ids.min(), ids.max()}).cpu() : torch::zeros({2}, torch::kInt64);
    const int64_t smallest = range[0].item<int64_t>(), largest = range[1].item<int64_t>();
    VERL_CHECK(smallest >= 0 && largest < vocab, "model", "top-k log-probs: token id ",
               smallest < 0 ? smallest : largest, " is outside the vocabulary (", vocab,
               " tokens): the teacher and the student must share a tokenizer");
    out.gathered_log_probs = z.gather(-1, ids) - lse;
  }
  if (query.top_k > 0) {
    // log-softmax is monotonic: the largest logits are the most likely tokens.
    torch::NoGradGuard no_grad;
    auto [values, ids] = z.detach().topk(query.top_k, -1, /*largest=*/true, /*sorted=*/true);
    out.top_k_log_probs = values - lse.detach();
    out.top_k_ids = ids;
  }
  return out;
}

}  // namespace verl::model
