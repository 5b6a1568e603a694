// The multi-turn engine under tensor parallelism (agent/tensor_parallel_turns.h), on 2 thread ranks holding slices of
// a tiny model: the first rank drives three turns of three conversations (per-row budgets, appended context
// between turns) and its tokens and log-probs are the whole model's; the other rank ran every batch with it (its
// results are the driver's, its caches hold the same lengths); ranks that sample differently are an error at the
// first step; a driver that fails between batches ends the others' wait with its error.
#include <gtest/gtest.h>

#include <cmath>

#include "support/thread_ranks.h"
#include "support/tiny_model.h"
#include "verl/agent/continuation_engine.h"
#include "verl/agent/tensor_parallel_turns.h"
#include "verl/common/error.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/transformer.h"

namespace verl::agent {
namespace {

using model::CausalLM;

CausalLM whole_model() {
  model::HFConfig c = test::tiny_config(model::Arch::Qwen2);
  c.initializer_range = 0.3;  // peaked distributions, so argmax is not a near tie between the slices' roundings
  CausalLM m(c);
  model::init_weights(m, 11, true);
  m->eval();
  return m;
}

rollout::SamplingParams sampling(bool greedy, uint64_t seed = 5) {
  rollout::SamplingParams p;
  p.do_sample = !greedy;
  p.temperature = 1.0;
  p.seed = seed;
  p.pad_token_id = 39;
  p.eos_token_ids = {38};
  p.calculate_log_probs = true;
  p.max_num_seqs = 0;
  return p;
}

// Three turns of three conversations through `generate`, context appended between turns; every turn's results.
std::vector<std::vector<ContinueResult>> three_turns(const TurnGenerator& generate) {
  std::vector<std::vector<int64_t>> convs = {{3, 4, 5}, {7}, {1, 2, 3, 4, 5, 6, 8, 9}};
  std::vector<SequenceCache> caches(convs.size());
  const std::vector<std::vector<int64_t>> contexts = {{10, 11}, {12}, {13, 14, 15, 16}};
  std::vector<std::vector<ContinueResult>> turns;
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<ContinueRequest> requests;
    for (size_t i = 0; i < convs.size(); ++i) {
      ContinueRequest r;
      r.cache = &caches[i];
      r.new_tokens.assign(convs[i].begin() + caches[i].length, convs[i].end());
      r.max_new_tokens = 2 + static_cast<int64_t>(i) + turn;
      requests.push_back(std::move(r));
    }
    turns.push_back(generate(requests));
    for (size_t i = 0; i < convs.size(); ++i) {
      const auto& tokens = turns.back()[i].tokens;
      convs[i].insert(convs[i].end(), tokens.begin(), tokens.end());
      const auto& ctx = contexts[(i + turn) % contexts.size()];
      convs[i].insert(convs[i].end(), ctx.begin(), ctx.end());
    }
  }
  return turns;
}

void expect_same_turns(const std::vector<std::vector<ContinueResult>>& got,
                       const std::vector<std::vector<ContinueResult>>& want, double log_prob_tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < want.size(); ++t) {
    ASSERT_EQ(got[t].size(), want[t].size());
    for (size_t i = 0; i < want[t].size(); ++i) {
      EXPECT_EQ(got[t][i].tokens, want[t][i].tokens) << "turn " << t << " conversation " << i;
      EXPECT_EQ(got[t][i].ended_with_eos, want[t][i].ended_with_eos);
      ASSERT_EQ(got[t][i].log_probs.size(), want[t][i].log_probs.size());
      for (size_t k = 0; k < want[t][i].log_probs.size(); ++k) {
        EXPECT_NEAR(got[t][i].log_probs[k], want[t][i].log_probs[k], log_prob_tolerance) << "turn " << t;
      }
    }
  }
}

void check_two_slices_drive_three_turns(bool greedy) {
  CausalLM whole = whole_model();
  ContinuationEngine whole_engine(whole, sampling(greedy));
  const auto expected = three_turns([&](std::vector<ContinueRequest>& r) { return whole_engine.continue_batch(r); });
  std::vector<std::vector<ContinueResult>> driven, followed;
  std::vector<int64_t> prefilled(2);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    torch::NoGradGuard no_grad;
    CausalLM part = model::shard_model(whole, model::TensorParallelGroup{comm});
    ContinuationEngine engine(part, sampling(greedy));
    std::vector<std::vector<ContinueResult>> seen;
    TensorParallelTurns turns(comm, [&](std::vector<ContinueRequest>& r) {
      seen.push_back(engine.continue_batch(r));
      return seen.back();
    });
    if (comm->rank() == 0) {
      driven = three_turns(turns.driver());
      turns.finish();
    } else {
      turns.follow();
      followed = seen;
    }
    prefilled[static_cast<size_t>(comm->rank())] = engine.prefill_tokens();
  });
  // Log-probs in fp32 from slices summed in another order: ~1e-6.
  expect_same_turns(driven, expected, 1e-4);
  expect_same_turns(followed, driven, 0.0);
  EXPECT_EQ(prefilled[0], whole_engine.prefill_tokens());
  EXPECT_EQ(prefilled[1], whole_engine.prefill_tokens());  // only the appended tokens, on the follower's caches too
}

TEST(TensorParallelTurns, TwoSlicesDriveThreeGreedyTurnsAsTheWholeModel) { check_two_slices_drive_three_turns(true); }

TEST(TensorParallelTurns, TwoSlicesSampleTheWholeModelsTokensFromTheSameSeed) {
  check_two_slices_drive_three_turns(false);
}

// Ranks of one group that sample differently (here: different seeds) would drift apart and then run different
// forwards: the engine stops at the first step with one error on every rank.
TEST(TensorParallelTurns, RanksThatChooseDifferentTokensAreAnError) {
  CausalLM whole = whole_model();
  std::vector<std::string> errors(2);
  test::on_thread_ranks(2, [&](const std::shared_ptr<parallel::Comm>& comm) {
    torch::NoGradGuard no_grad;
    CausalLM part = model::shard_model(whole, model::TensorParallelGroup{comm});
    ContinuationEngine engine(part, sampling(false, 100 + static_cast<uint64_t>(comm->rank())));
    try {
      three_turns([&](std::vector<ContinueRequest>& r) { return engine.continue_batch(r); });
    } catch (const Error& e) {
      errors[static_cast<size_t>(comm->rank())] = e.what();
    }
  });
  for (const auto& e : errors) EXPECT_NE(e.find("chose different tokens at generation step 0"), std::string::npos) << e;
}

// The driver fails between batches (a tool config, the chat template, ...): the others stop waiting and fail naming
// the driver's error, instead of waiting for a batch that never comes.
TEST(TensorParallelTurns, ADriverFailureBetweenBatchesEndsTheOthersWaitWithItsError) {
  std::vector<std::string> errors(3);
  std::vector<int> batches(3, 0);
  test::on_thread_ranks(3, [&](const std::shared_ptr<parallel::Comm>& comm) {
    const auto r = static_cast<size_t>(comm->rank());
    TensorParallelTurns turns(comm, [&](std::vector<ContinueRequest>& requests) {
      ++batches[r];
      std::vector<ContinueResult> out(requests.size());
      for (size_t i = 0; i < requests.size(); ++i) {
        out[i].tokens = {1};
        requests[i].cache->length += static_cast<int64_t>(requests[i].new_tokens.size());
      }
      return out;
    });
    try {
      if (r == 0) {
        SequenceCache cache;
        std::vector<ContinueRequest> requests(1);
        requests[0].cache = &cache;
        requests[0].new_tokens = {4, 5};
        turns.driver()(requests);
        EXPECT_FALSE(turns.failed_in_batch());
        turns.finish("chat template: 'tools' is undefined");
      } else {
        turns.follow();
      }
    } catch (const Error& e) {
      errors[r] = e.what();
    }
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(batches, (std::vector<int>{1, 1, 1}));
  for (size_t r = 1; r < 3; ++r) {
    EXPECT_NE(errors[r].find("failed on tensor-parallel rank 0"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("chat template: 'tools' is undefined"), std::string::npos) << errors[r];
  }
}

}  // namespace
}  // namespace verl::agent
