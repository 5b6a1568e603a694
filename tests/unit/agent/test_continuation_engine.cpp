// The multi-turn engine against full forwards: the greedy tokens of each turn equal stepwise argmax over the
// whole conversation (so reusing the saved KV cache changes nothing), only the appended tokens are prefilled,
// log-probs match the full forward's, eos and per-row budgets end turns, and max_num_seqs batching gives the
// same tokens.
#include <gtest/gtest.h>

#include <cmath>

#include "support/tiny_model.h"
#include "verl/agent/continuation_engine.h"
#include "verl/common/error.h"
#include "verl/model/transformer.h"

namespace verl::agent {
namespace {

using model::CausalLM;

// `window` > 0: sliding-window attention on every layer (Mistral) or on the second (Qwen2 / Qwen3).
CausalLM make_model(model::Arch arch, uint64_t seed, int64_t window = 0) {
  model::HFConfig c = test::tiny_config(arch);
  c.initializer_range = 0.3;  // peaked distributions, so argmax is not a near tie
  if (window > 0) {
    c.sliding_window = window;
    c.sliding_layers = {arch == model::Arch::Mistral, true};
  }
  CausalLM m(c);
  model::init_weights(m, seed, true);
  m->eval();
  return m;
}

// Greedy continuation of `ids` by full forwards, stopping after `steps` tokens or at an eos id.
std::vector<int64_t> reference_greedy(CausalLM& m, std::vector<int64_t> ids, int64_t steps,
                                      const std::vector<int64_t>& eos, std::vector<float>* log_probs = nullptr) {
  torch::NoGradGuard ng;
  std::vector<int64_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    auto t = torch::tensor(ids, torch::kInt64).unsqueeze(0);
    auto mask = torch::ones_like(t);
    auto logits = m->forward(t, mask, model::position_ids_from_mask(mask))[0][-1];
    const int64_t next = logits.argmax().item<int64_t>();
    if (log_probs) log_probs->push_back(torch::log_softmax(logits.to(torch::kFloat64), -1)[next].item<float>());
    out.push_back(next);
    ids.push_back(next);
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
  }
  return out;
}

rollout::SamplingParams greedy_params(std::vector<int64_t> eos = {}) {
  rollout::SamplingParams p;
  p.do_sample = false;
  p.pad_token_id = 39;
  p.eos_token_ids = std::move(eos);
  p.max_num_seqs = 0;
  return p;
}

// Three turns for three conversations of different lengths, with appended "context" between the turns.
void check_three_turns(model::Arch arch, int64_t max_num_seqs, int64_t window = 0) {
  CausalLM m = make_model(arch, 11, window);
  auto params = greedy_params();
  params.max_num_seqs = max_num_seqs;
  ContinuationEngine engine(m, params);
  std::vector<std::vector<int64_t>> convs = {{3, 4, 5}, {7}, {1, 2, 3, 4, 5, 6, 8, 9}};
  std::vector<SequenceCache> caches(convs.size());
  const std::vector<std::vector<int64_t>> contexts = {{10, 11}, {12}, {13, 14, 15, 16}};
  int64_t appended = 0;
  for (int turn = 0; turn < 3; ++turn) {
    std::vector<ContinueRequest> requests;
    std::vector<std::vector<int64_t>> expected;
    for (size_t i = 0; i < convs.size(); ++i) {
      ContinueRequest r;
      r.cache = &caches[i];
      r.new_tokens.assign(convs[i].begin() + caches[i].length, convs[i].end());
      appended += static_cast<int64_t>(r.new_tokens.size());
      r.max_new_tokens = 2 + static_cast<int64_t>(i) + turn;  // per-row budgets
      expected.push_back(reference_greedy(m, convs[i], r.max_new_tokens, {}));
      requests.push_back(std::move(r));
    }
    auto results = engine.continue_batch(requests);
    ASSERT_EQ(results.size(), convs.size());
    for (size_t i = 0; i < convs.size(); ++i) {
      EXPECT_EQ(results[i].tokens, expected[i]) << "turn " << turn << " conversation " << i;
      convs[i].insert(convs[i].end(), results[i].tokens.begin(), results[i].tokens.end());
      // Every token but the last sampled one has its K/V saved.
      EXPECT_EQ(caches[i].length, static_cast<int64_t>(convs[i].size()) - 1);
      const auto& ctx = contexts[(i + turn) % contexts.size()];
      convs[i].insert(convs[i].end(), ctx.begin(), ctx.end());
    }
  }
  // Only what was appended since each conversation's last turn was prefilled, never its history.
  EXPECT_EQ(engine.prefill_tokens(), appended);
}

TEST(ContinuationEngine, GreedyTurnsEqualFullForwardsOverTheWholeConversation) {
  for (auto arch : {model::Arch::Llama, model::Arch::Qwen2, model::Arch::Qwen3}) check_three_turns(arch, 0);
}

TEST(ContinuationEngine, MaxNumSeqsBatchesGiveTheSameTokens) { check_three_turns(model::Arch::Qwen2, 1); }

// The saved turns and the appended tokens sit apart in the engine's cache; a sliding window counts the
// conversation's tokens, so the turns still equal full forwards over the conversation.
TEST(ContinuationEngine, SlidingWindowTurnsEqualFullForwards) {
  check_three_turns(model::Arch::Mistral, 0, /*window=*/3);
  check_three_turns(model::Arch::Qwen2, 0, /*window=*/4);
}

TEST(ContinuationEngine, EosEndsATurnAndLogProbsMatchTheFullForward) {
  CausalLM m = make_model(model::Arch::Qwen2, 3);
  // The eos id is the first greedy token of the second conversation, so that row ends after one token.
  const std::vector<int64_t> second = {7, 8};
  const int64_t eos_id = reference_greedy(m, second, 1, {})[0];
  auto params = greedy_params({eos_id});
  params.calculate_log_probs = true;
  ContinuationEngine engine(m, params);
  std::vector<std::vector<int64_t>> convs = {{3, 4, 5, 6}, second};
  std::vector<SequenceCache> caches(2);
  std::vector<ContinueRequest> requests(2);
  for (size_t i = 0; i < 2; ++i) {
    requests[i].cache = &caches[i];
    requests[i].new_tokens = convs[i];
    requests[i].max_new_tokens = 6;
  }
  auto results = engine.continue_batch(requests);
  EXPECT_EQ(results[1].tokens, std::vector<int64_t>{eos_id});
  EXPECT_TRUE(results[1].ended_with_eos);
  for (size_t i = 0; i < 2; ++i) {
    std::vector<float> ref_lp;
    const auto ref = reference_greedy(m, convs[i], 6, {eos_id}, &ref_lp);
    EXPECT_EQ(results[i].tokens, ref);
    ASSERT_EQ(results[i].log_probs.size(), ref_lp.size());
    for (size_t t = 0; t < ref_lp.size(); ++t) EXPECT_NEAR(results[i].log_probs[t], ref_lp[t], 1e-4) << i << " " << t;
  }
  EXPECT_FALSE(results[0].ended_with_eos && results[0].tokens.size() == 6);
}

// ignore_eos (as vLLM's) ignores the eos ids but not the stop ids, which the tool parsers' stop tokens are.
TEST(ContinuationEngine, IgnoreEosKeepsTheStopIds) {
  CausalLM m = make_model(model::Arch::Qwen2, 3);
  const std::vector<int64_t> conv = {7, 8};
  const int64_t first = reference_greedy(m, conv, 1, {})[0];
  const auto run = [&](rollout::SamplingParams params) {
    ContinuationEngine engine(m, params);
    SequenceCache cache;
    std::vector<ContinueRequest> requests(1);
    requests[0].cache = &cache;
    requests[0].new_tokens = conv;
    requests[0].max_new_tokens = 4;
    return engine.continue_batch(requests).at(0);
  };
  auto params = greedy_params({first});
  params.ignore_eos = true;
  ContinueResult result = run(params);
  EXPECT_EQ(result.tokens, reference_greedy(m, conv, 4, {}));  // the whole budget
  EXPECT_FALSE(result.ended_with_eos);
  params.stop_token_ids = {first};
  result = run(params);
  EXPECT_EQ(result.tokens, std::vector<int64_t>{first});
  EXPECT_TRUE(result.ended_with_eos);
  params.ignore_eos = false;
  params.eos_token_ids.clear();
  result = run(params);
  EXPECT_EQ(result.tokens, std::vector<int64_t>{first});
  EXPECT_TRUE(result.ended_with_eos);
}

TEST(ContinuationEngine, RejectsEmptyRequestsAndConversationsPastThePositions) {
  CausalLM m = make_model(model::Arch::Llama, 1);
  ContinuationEngine engine(m, greedy_params());
  SequenceCache cache;
  std::vector<ContinueRequest> requests(1);
  requests[0].cache = &cache;
  EXPECT_THROW(engine.continue_batch(requests), Error);  // no new token
  requests[0].new_tokens = {1, 2};
  requests[0].max_new_tokens = m->config.max_position_embeddings;
  EXPECT_THROW(engine.continue_batch(requests), Error);
}

}  // namespace
}  // namespace verl::agent
