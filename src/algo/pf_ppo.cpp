// PF-PPO reweighting, as verl's core_algos.compute_pf_ppo_reweight_data (verl 0.9.1).
#include "verl/algo/pf_ppo.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::algo {

const std::vector<std::string>& pf_ppo_reweight_method_names() {
  static const std::vector<std::string> names = {"pow", "max_min", "max_random"};
  return names;
}

// s = scores: pow w = |s|^p;  max_min w = [s == max s or s == min s];  max_random w = 0.4 if s == max s else 0.1
// (verl's torch.where over Python floats gives float32 weights for the last two).
torch::Tensor compute_pf_ppo_weights(const torch::Tensor& scores, const std::string& reweight_method,
                                     double weight_pow) {
  if (reweight_method == "pow") return torch::pow(torch::abs(scores), weight_pow);
  const auto f32 = scores.options().dtype(torch::kFloat32);
  if (reweight_method == "max_min") {
    return ((scores == scores.max()) | (scores == scores.min())).to(torch::kFloat32);
  }
  if (reweight_method == "max_random") {
    return torch::where(scores == scores.max(), torch::full_like(scores, 0.4, f32), torch::full_like(scores, 0.1, f32));
  }
  VERL_FAIL("pf_ppo", "unsupported reweight_method '", reweight_method, "'; expected one of: ",
            join(pf_ppo_reweight_method_names(), ", "));
}

std::vector<int64_t> pf_ppo_resample_rows(const torch::Tensor& token_level_scores, const std::string& reweight_method,
                                          double weight_pow, torch::Generator generator) {
  VERL_CHECK(token_level_scores.dim() == 2, "pf_ppo", "token_level_scores must be (B, R), got ",
             token_level_scores.sizes());
  const torch::Tensor scores = token_level_scores.sum(-1);
  const torch::Tensor weights = torch::clamp_min(compute_pf_ppo_weights(scores, reweight_method, weight_pow) + 1e-8, 1e-8);
  const int64_t batch_size = scores.size(0);
  const torch::Tensor rows =
      torch::multinomial(weights.cpu(), batch_size, /*replacement=*/true, generator).to(torch::kInt64).contiguous();
  return std::vector<int64_t>(rows.data_ptr<int64_t>(), rows.data_ptr<int64_t>() + rows.numel());
}

}  // namespace verl::algo
