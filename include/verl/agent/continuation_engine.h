// Generation for multi-turn conversations that keeps each conversation's KV cache between its turns, so that a
// turn's prefill covers only the tokens appended since the last one (tool results, an interaction's reply,
// the generation prompt), never the whole history again.
//
// Each conversation owns a SequenceCache: the keys and values of every token fed to the model so far (rotary
// positions already applied, so they can be moved between batches). A call batches the conversations given:
// their caches are laid side by side (left-padded, the padding masked), the new tokens prefilled, and each row
// decodes until an eos id or its own token budget. The last sampled token is not fed (nothing needs its K/V
// yet): the caller passes it back as the first of the next call's new tokens.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "verl/model/transformer.h"
#include "verl/rollout/generator.h"

namespace verl::agent {

struct SequenceCache {
  std::vector<torch::Tensor> k, v;  // per layer [kv_heads, length, head_dim]; empty before the first call
  int64_t length = 0;               // tokens fed (positions 0 .. length-1)
};

struct ContinueRequest {
  SequenceCache* cache = nullptr;    // read and extended
  std::vector<int64_t> new_tokens;   // the conversation's tokens after cache->length (at least one)
  int64_t max_new_tokens = 1;        // this turn's budget (>= 1)
};

struct ContinueResult {
  std::vector<int64_t> tokens;  // generated, through the first eos id (or stop id) when one came
  std::vector<float> log_probs; // with SamplingParams::calculate_log_probs
  bool ended_with_eos = false;  // the last token is an eos id (not with ignore_eos) or one of stop_token_ids
};

class ContinuationEngine {
 public:
  // `params`: temperature / top_k / top_p / do_sample, eos ids (ignore_eos), stop ids, pad id, calculate_log_probs,
  // seed and max_num_seqs (rows decoded at once; more requests go in several batches). n and max_response_length are
  // not used.
  ContinuationEngine(model::CausalLM& model, const rollout::SamplingParams& params);
  ~ContinuationEngine();

  std::vector<ContinueResult> continue_batch(std::vector<ContinueRequest>& requests);

  int64_t prefill_tokens() const { return prefill_tokens_; }  // tokens prefilled over all calls (new tokens only)

 private:
  std::vector<ContinueResult> run_batch(std::vector<ContinueRequest*>& requests);
  model::CausalLM& model_;
  rollout::SamplingParams params_;
  at::Generator generator_;
  int64_t prefill_tokens_ = 0;
};

}  // namespace verl::agent
