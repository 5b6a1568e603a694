// Three PPO updates of ActorRolloutRefWorker (role actor_rollout_ref) on a fixed batch against
// tests/golden/workers/gen_actor_golden.py, an independent float64 PyTorch implementation of verl's actor
// update loop (per-row unpadded forward, torch.optim.AdamW, torch.nn.utils.clip_grad_norm_). The batch has
// ragged prompts and responses, two mini-batches of two micro-batches each (off-policy path), asymmetric
// clipping with dual clip, an entropy bonus, the low_var_kl KL loss, temperature 0.7 and grad clipping.
// Runs under the test-only Python (.venv/test, torch from PyPI).
// Tolerances (C++ runs fp32): log-probs / entropy 2e-5 abs; pg_loss, ppo_kl, entropy, kl_loss, grad_norm
// 1e-4 relative + 1e-6 abs; clip fractions 1e-6 abs (exact token counts); final parameters 2e-5 abs.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/actor_fixture.h"
#include "support/run_command.h"
#include "support/tensor_compare.h"
#include "support/test_python.h"
#include "verl/model/weights.h"
#include "verl/workers/actor_rollout_ref_worker.h"

namespace verl::test {
namespace {

using protocol::DataProto;

torch::Tensor to_tensor(const std::vector<std::vector<double>>& rows) {
  std::vector<torch::Tensor> out;
  for (const auto& r : rows) out.push_back(torch::tensor(r, torch::kFloat64));
  return torch::stack(out);
}

nlohmann::json rows_json(const torch::Tensor& t) {
  auto c = t.to(torch::kFloat64).contiguous();
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < c.size(0); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t j = 0; j < c.size(1); ++j) row.push_back(c[i][j].item<double>());
    out.push_back(row);
  }
  return out;
}

void expect_close_list(const nlohmann::json& got, const torch::Tensor& ref, double rel, double abs,
                       const std::string& what) {
  ASSERT_TRUE(got.is_array()) << what;
  ASSERT_EQ(static_cast<int64_t>(got.size()), ref.numel()) << what;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref[i].item<double>(), g = got[static_cast<size_t>(i)].get<double>();
    EXPECT_NEAR(g, r, abs + rel * std::abs(r)) << what << "[" << i << "]";
  }
}

TEST(ActorGolden, ThreePpoUpdatesMatchIndependentReference) {
  if (!test_python_imports("torch")) FAIL() << test_python_missing_hint();
  const std::string dir = make_temp_dir("actor_golden");
  const std::string model_dir = make_tiny_model(dir + "/model");
  auto cfg = tiny_ppo_config(model_dir, {"actor_rollout_ref.rollout.temperature=0.7",
                                         "actor_rollout_ref.actor.clip_ratio_low=0.2",
                                         "actor_rollout_ref.actor.clip_ratio_high=0.28",
                                         "actor_rollout_ref.actor.clip_ratio_c=3.0",
                                         "actor_rollout_ref.actor.entropy_coeff=0.01",
                                         "actor_rollout_ref.actor.use_kl_loss=true",
                                         "actor_rollout_ref.actor.kl_loss_coef=0.1",
                                         "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
                                         "actor_rollout_ref.actor.grad_clip=1.0",
                                         "actor_rollout_ref.actor.optim.lr=0.001"});
  workers::ActorRolloutRefWorker worker({0, 1, "golden"}, cfg, "actor_rollout_ref");
  worker.init_model(DataProto());

  // Ragged batch: B=8, P=5, R=6.
  const int64_t B = 8, P = 5, R = 6;
  const std::vector<int64_t> plen = {5, 3, 1, 4, 2, 5, 3, 4}, rlen = {6, 2, 4, 1, 6, 3, 5, 6};
  auto input_ids = torch::zeros({B, P + R}, torch::kInt64);
  auto attention_mask = torch::zeros({B, P + R}, torch::kInt64);
  std::vector<std::vector<double>> adv(B, std::vector<double>(R)), delta(B, std::vector<double>(R));
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t j = P - plen[i]; j < P + rlen[i]; ++j) {
      input_ids[i][j] = (i * 7 + j * 3 + 1) % 64;
      attention_mask[i][j] = 1;
    }
    for (int64_t t = 0; t < R; ++t) {
      adv[i][t] = 1.5 * std::cos(0.7 * i + 1.3 * t);
      // Mostly small ratio offsets (PPO clipping); a few large ones (ratio > clip_ratio_c: dual clip).
      delta[i][t] = 0.3 * std::sin(1.1 * i + 0.6 * t + 0.5) + ((i * 5 + t) % 7 == 0 ? -1.3 : 0.0);
    }
  }
  auto response_mask = attention_mask.narrow(1, P, R).clone();
  auto batch = DataProto::from_dict({{"input_ids", input_ids},
                                     {"attention_mask", attention_mask},
                                     {"position_ids", model::position_ids_from_mask(attention_mask)},
                                     {"responses", input_ids.narrow(1, P, R).clone()},
                                     {"response_mask", response_mask}});

  nlohmann::json spec;
  spec["input_ids"] = rows_json(input_ids);
  spec["attention_mask"] = rows_json(attention_mask);
  spec["response_mask"] = rows_json(response_mask);
  spec["advantages"] = adv;
  spec["delta"] = delta;
  spec["prompt_length"] = P;
  spec["temperature"] = 0.7;
  spec["updates"] = 3;
  const auto& a = cfg->actor_rollout_ref.actor;
  spec["config"] = {{"ppo_mini_batch_size", 4}, {"ppo_micro_batch_size_per_gpu", 2}, {"ppo_epochs", 1},
                    {"clip_ratio_low", a.clip_ratio_low}, {"clip_ratio_high", a.clip_ratio_high},
                    {"clip_ratio_c", a.clip_ratio_c}, {"entropy_coeff", a.entropy_coeff},
                    {"use_kl_loss", true}, {"kl_loss_coef", a.kl_loss_coef}, {"grad_clip", a.grad_clip},
                    {"lr", a.optim.lr}, {"weight_decay", a.optim.weight_decay}, {"betas", a.optim.betas}};
  write_file(dir + "/spec.json", spec.dump());
  auto ref = run_command(test_python() + std::string(VERL_SOURCE_DIR_FOR_TESTS) +
                         "/tests/golden/workers/gen_actor_golden.py " + model_dir + " " + dir + "/spec.json " + dir +
                         "/ref.safetensors");
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  std::map<std::string, torch::Tensor> g;
  for (auto& [k, v] : model::load_tensors(dir + "/ref.safetensors")) g[k] = v;

  // Old and reference log-probs.
  auto old = worker.compute_log_prob(batch);
  auto refp = worker.compute_ref_log_prob(batch);
  auto m = response_mask.to(torch::kFloat64);
  const double lp_diff = max_abs_diff(old.tensor("old_log_probs") * m, g.at("old_log_probs0"));
  const double ent_diff = max_abs_diff(old.tensor("entropys") * m, g.at("entropy0"));
  EXPECT_LE(lp_diff, 2e-5);
  EXPECT_LE(ent_diff, 2e-5);
  // Same weights, other micro-batch shapes: the BLAS blocks the GEMMs differently, so fp32 rounding differs.
  EXPECT_LE(max_abs_diff(refp.tensor("ref_log_prob"), old.tensor("old_log_probs")), 1e-5);
  std::cout << "[golden] log-prob max diff " << lp_diff << ", entropy max diff " << ent_diff << "\n";

  batch.batch["old_log_probs"] = (old.tensor("old_log_probs").to(torch::kFloat64) + to_tensor(delta)).to(torch::kFloat32);
  batch.batch["ref_log_prob"] = refp.tensor("ref_log_prob");
  batch.batch["advantages"] = to_tensor(adv).to(torch::kFloat32);
  batch.meta_info["temperature"] = 0.7;
  for (int k = 1; k <= 3; ++k) {
    auto out = worker.update_actor(batch);
    const auto& mt = out.meta_info["metrics"];
    const std::string u = "u" + std::to_string(k) + ".";
    expect_close_list(mt["actor/pg_loss"], g.at(u + "pg_loss"), 1e-4, 1e-6, u + "pg_loss");
    expect_close_list(mt["actor/kl_loss"], g.at(u + "kl_loss"), 1e-4, 1e-6, u + "kl_loss");
    expect_close_list(mt["actor/ppo_kl"], g.at(u + "ppo_kl"), 1e-4, 1e-6, u + "ppo_kl");
    expect_close_list(mt["actor/entropy_loss"], g.at(u + "entropy_loss"), 1e-4, 1e-6, u + "entropy_loss");
    expect_close_list(mt["actor/grad_norm"], g.at(u + "grad_norm"), 1e-4, 1e-6, u + "grad_norm");
    expect_close_list(mt["actor/pg_clipfrac"], g.at(u + "pg_clipfrac"), 0, 1e-6, u + "pg_clipfrac");
    expect_close_list(mt["actor/pg_clipfrac_lower"], g.at(u + "pg_clipfrac_lower"), 0, 1e-6, u + "pg_clipfrac_lower");
    EXPECT_DOUBLE_EQ(mt["actor/lr"][0].get<double>(), 0.001);
    std::cout << "[golden] update " << k << ": pg_loss " << mt["actor/pg_loss"][0] << " vs "
              << g.at(u + "pg_loss")[0].item<double>() << ", grad_norm " << mt["actor/grad_norm"] << " vs "
              << g.at(u + "grad_norm") << "\n";
  }
  // Some clipping happened (the test exercises the clip paths).
  double clipped = 0;
  for (int k = 1; k <= 3; ++k) clipped += g.at("u" + std::to_string(k) + ".pg_clipfrac").sum().item<double>();
  EXPECT_GT(clipped, 0.0);
  double lower = 0;
  for (int k = 1; k <= 3; ++k) lower += g.at("u" + std::to_string(k) + ".pg_clipfrac_lower").sum().item<double>();
  EXPECT_GT(lower, 0.0);

  double max_param_diff = 0, max_param_change = 0;
  auto initial = model::load_tensors(model_dir);
  std::map<std::string, torch::Tensor> init_map(initial.begin(), initial.end());
  for (const auto& item : worker.actor_module()->named_parameters()) {
    const auto& r = g.at("param." + item.key());
    max_param_diff = std::max(max_param_diff, max_abs_diff(item.value().detach(), r));
    max_param_change = std::max(max_param_change, max_abs_diff(init_map.at(item.key()), r));
  }
  std::cout << "[golden] final parameters: max |C++ - ref| " << max_param_diff << ", max change from init "
            << max_param_change << "\n";
  // Adam divides by sqrt(v): for entries whose gradient is near zero, fp32 rounding differences in the
  // gradient become step-sized differences, so the bound is 1e-4 (the losses and grad norms above are tighter).
  EXPECT_LE(max_param_diff, 1e-4);
  EXPECT_GT(max_param_change, 1e-3);
}

}  // namespace
}  // namespace verl::test
