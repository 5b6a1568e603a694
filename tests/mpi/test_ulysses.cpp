// Ulysses sequence parallelism (parallel/ulysses.h, model::set_sequence_parallel) with the whole MPI world as one
// sequence-parallel group (ctest runs 2 and 3 ranks):
//   - the exchanges against closed forms: all_to_all delivers chunk r to rank r; gathering the sequence and
//     scattering heads gives this rank's heads of the whole tensor, and back; their gradients are the slices of
//     the loss's weights (times sp for gather_sequence, verl's grad_scaler);
//   - the model: log-probs, entropy, sum_pi_squared and values of a sequence split across the ranks equal those of
//     the whole model on one rank, and the gradients, averaged over the ranks as the trainer does, equal its
//     gradients. Sequences of 11 tokens (not a multiple of 2 or 3: padded), left and right padding; KV heads that
//     divide the group and a single KV head (repeated), Qwen3's q_norm / k_norm, gradient checkpointing.
// EXPECT_*, not ASSERT_*, before a collective: a rank that returned early would leave the others waiting.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <string>

#include "mpi/mpi_test_env.h"
#include "support/tiny_model.h"
#include "verl/common/error.h"
#include "verl/model/transformer.h"
#include "verl/parallel/ulysses.h"

namespace verl::test {
namespace {

using model::Arch;
using model::CausalLM;
using model::HeadKind;

TEST(Ulysses, AllToAllDeliversChunkRToRankR) {
  auto world = mpi_world();
  const int n = world->size(), r = world->rank();
  // Rank r's chunk q (2 rows) holds 100 r + 10 q + row.
  torch::Tensor t = torch::empty({2 * n, 3}, torch::kFloat64);
  for (int q = 0; q < n; ++q) {
    for (int row = 0; row < 2; ++row) t[2 * q + row].fill_(100.0 * r + 10.0 * q + row);
  }
  torch::Tensor got = world->all_to_all(t);
  for (int q = 0; q < n; ++q) {
    for (int row = 0; row < 2; ++row) {
      EXPECT_TRUE(torch::equal(got[2 * q + row], torch::full({3}, 100.0 * q + 10.0 * r + row, torch::kFloat64)))
          << "chunk " << q << " row " << row;
    }
  }
}

// The same seeded tensor on every rank.
torch::Tensor seeded(std::vector<int64_t> shape, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return torch::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat64));
}

TEST(Ulysses, SequenceHeadExchangesAndTheirGradientsAreSlicesOfTheWhole) {
  auto world = mpi_world();
  const int64_t n = world->size(), r = world->rank();
  // full [B=2, S=3n, H=2n, D=4]: rank r holds positions [3r, 3r+3) of every head, and after the exchange every
  // position of heads [2r, 2r+2).
  const torch::Tensor full = seeded({2, 3 * n, 2 * n, 4}, 7);
  const torch::Tensor weight = seeded({2, 3 * n, 2 * n, 4}, 8);
  torch::Tensor x = full.narrow(1, 3 * r, 3).clone().requires_grad_(true);
  torch::Tensor y = parallel::gather_seq_scatter_heads(x, /*seq_dim=*/1, /*head_dim=*/2, world);
  EXPECT_TRUE(torch::equal(y, full.narrow(2, 2 * r, 2)));
  EXPECT_TRUE(torch::equal(parallel::gather_heads_scatter_seq(y, 2, 1, world), x));
  // sum over ranks of <y_r, W_r> is <full, W>: its gradient at rank r's x is rank r's slice of W.
  (y * weight.narrow(2, 2 * r, 2)).sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), weight.narrow(1, 3 * r, 3)));

  // gather_sequence: every rank computes the same loss on the whole; the gradient is its slice times n.
  torch::Tensor part = full.narrow(1, 3 * r, 3).clone().requires_grad_(true);
  torch::Tensor whole = parallel::gather_sequence(part, 1, world);
  EXPECT_TRUE(torch::equal(whole, full));
  (whole * weight).sum().backward();
  EXPECT_TRUE(torch::allclose(part.grad(), weight.narrow(1, 3 * r, 3) * static_cast<double>(n)));
}

struct Case {
  Arch arch;
  bool single_kv_head;  // 1 KV head (repeated for the group) instead of one per rank
  bool checkpointing;
};

model::HFConfig config_for(const Case& c, int64_t n) {
  model::HFConfig cfg = tiny_config(c.arch);
  cfg.num_attention_heads = 6;  // divisible by 2 and 3
  cfg.num_key_value_heads = c.single_kv_head ? 1 : n;
  cfg.hidden_size = 48;
  return cfg;
}

CausalLM make_model(const model::HFConfig& cfg, HeadKind head) {
  CausalLM m(cfg, head);
  model::init_weights(m, 11, /*perturb_norms_and_biases=*/true);
  m->train();
  return m;
}

struct Batch {
  torch::Tensor input_ids, attention_mask, position_ids, responses;
};
// 3 rows of 11 tokens, the last 4 the responses; row 1 and 2 left-padded, row 0's last response token padding.
Batch make_batch(int64_t vocab) {
  auto gen = at::detail::createCPUGenerator(3);
  Batch b;
  b.input_ids = torch::randint(0, vocab - 2, {3, 11}, gen, torch::kInt64);
  b.attention_mask = torch::ones({3, 11}, torch::kInt64);
  b.attention_mask.index_put_({1, torch::indexing::Slice(0, 2)}, 0);
  b.attention_mask.index_put_({2, torch::indexing::Slice(0, 5)}, 0);
  b.attention_mask.index_put_({0, 10}, 0);
  b.position_ids = model::position_ids_from_mask(b.attention_mask);
  b.responses = b.input_ids.narrow(1, 7, 4);
  return b;
}

// Largest |a - b| over max(|b|, 1e-2), so a near-zero reference does not inflate rounding.
double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs() / b.abs().clamp_min(1e-2)).max().item<double>();
}

// Each gradient of `split` averaged over the world (the trainer's all-reduce) against `whole`'s.
void expect_same_gradients(CausalLM& split, CausalLM& whole, parallel::Comm& world, const std::string& what) {
  auto a = split->named_parameters(), b = whole->named_parameters();
  for (const auto& item : a) {
    torch::Tensor g = item.value().grad().defined() ? item.value().grad().clone() : torch::zeros_like(item.value());
    world.all_reduce(g, parallel::ReduceOp::Average);
    const torch::Tensor expected = b[item.key()].grad();
    // float32: the shards take other GEMM shapes than the whole sequence, whose rounding varies with the CPU
    // (1.4e-4 measured on a 2-core AMD EPYC); a misaligned gather is off by O(1).
    EXPECT_LT(relative_difference(g, expected), 5e-4) << what << ": " << item.key();
  }
}

class UlyssesModel : public ::testing::TestWithParam<Case> {};

TEST_P(UlyssesModel, LogProbsValuesAndGradientsEqualTheWholeSequence) {
  auto world = mpi_world();
  const int64_t n = world->size();
  const model::HFConfig cfg = config_for(GetParam(), n);
  const Batch b = make_batch(cfg.vocab_size);
  const torch::Tensor w1 = seeded({3, 4}, 21).to(torch::kFloat32), w2 = seeded({3, 4}, 22).to(torch::kFloat32),
                      w3 = seeded({3, 4}, 23).to(torch::kFloat32);

  CausalLM whole = make_model(cfg, HeadKind::LM), split = make_model(cfg, HeadKind::LM);
  model::set_sequence_parallel(split, world, "test.ulysses_sequence_parallel_size");
  whole->model->gradient_checkpointing = split->model->gradient_checkpointing = GetParam().checkpointing;
  // forward_kl_topk's reads (model/top_k_log_probs.h): the ids sit at the response positions, split across ranks.
  model::TopKQuery query;
  query.top_k = 2;
  query.gather_ids = (b.responses.unsqueeze(-1) + torch::tensor(std::vector<int64_t>{0, 5})) % cfg.vocab_size;
  const torch::Tensor w4 = seeded({3, 4, 2}, 24).to(torch::kFloat32);
  auto run = [&](CausalLM& m) {
    auto out =
        model::response_log_probs(m, b.input_ids, b.attention_mask, b.position_ids, b.responses,
                                  /*temperature=*/0.7, /*with_entropy=*/true, /*with_sum_pi_squared=*/true, query);
    ((out.log_probs * w1).sum() + (out.entropy * w2).sum() + (out.sum_pi_squared * w3).sum() +
     (out.top_k.gathered_log_probs * w4).sum())
        .backward();
    return out;
  };
  const auto expected = run(whole);
  const auto got = run(split);
  EXPECT_EQ(got.log_probs.sizes(), expected.log_probs.sizes());
  EXPECT_LT(relative_difference(got.log_probs.detach(), expected.log_probs.detach()), 1e-5);
  EXPECT_LT(relative_difference(got.entropy.detach(), expected.entropy.detach()), 1e-5);
  EXPECT_LT(relative_difference(got.sum_pi_squared.detach(), expected.sum_pi_squared.detach()), 1e-5);
  EXPECT_LT(relative_difference(got.top_k.gathered_log_probs.detach(), expected.top_k.gathered_log_probs.detach()),
            1e-5);
  EXPECT_LT(relative_difference(got.top_k.top_k_log_probs, expected.top_k.top_k_log_probs), 1e-5);
  EXPECT_TRUE(torch::equal(got.top_k.top_k_ids, expected.top_k.top_k_ids));
  expect_same_gradients(split, whole, *world, "actor");

  CausalLM whole_critic = make_model(cfg, HeadKind::Value), split_critic = make_model(cfg, HeadKind::Value);
  model::set_sequence_parallel(split_critic, world, "test.ulysses_sequence_parallel_size");
  auto values = [&](CausalLM& m) {
    auto v = model::response_values(m, b.input_ids, b.attention_mask, b.position_ids, 4);
    (v * w1).sum().backward();
    return v.detach();
  };
  EXPECT_LT(relative_difference(values(split_critic), values(whole_critic)), 1e-5);
  expect_same_gradients(split_critic, whole_critic, *world, "critic");
}

INSTANTIATE_TEST_SUITE_P(Shapes, UlyssesModel,
                         ::testing::Values(Case{Arch::Llama, false, false}, Case{Arch::Qwen2, true, false},
                                           Case{Arch::Qwen3, false, true}));

TEST(Ulysses, HeadsThatDoNotSplitAreOneErrorNamingTheKey) {
  auto world = mpi_world();
  const int64_t n = world->size();
  model::HFConfig cfg = tiny_config(Arch::Llama);
  cfg.num_attention_heads = 6 * n + 1;
  cfg.num_key_value_heads = 6 * n + 1;
  cfg.head_dim = 8;
  CausalLM m(cfg, HeadKind::LM);
  std::string message;
  try {
    model::set_sequence_parallel(m, world, "critic.ulysses_sequence_parallel_size");
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("critic.ulysses_sequence_parallel_size=" + std::to_string(n) + " must divide config.json's "
                         "num_attention_heads (" + std::to_string(6 * n + 1) + ")"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace verl::test
