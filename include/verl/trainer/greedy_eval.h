// Greedy accuracy of a policy on rule-scored prompts: the rollout engine generates greedily (batched, KV cache,
// stop at the tokenizer's eos ids), responses are decoded without special tokens (as verl's reward manager
// decodes them) and scored by default_compute_score(data_source, response, ground_truth); a score of 1 counts
// as correct. Used by `verl demo` to measure the SFT warm start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verl/model/transformer.h"
#include "verl/tokenizer/tokenizer.h"

namespace verl::trainer {

struct GreedyEvalResult {
  double accuracy = 0;
  int64_t correct = 0;
  int64_t total = 0;
  std::vector<std::string> responses;  // decoded, in prompt order
};

GreedyEvalResult greedy_accuracy(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                 const std::vector<std::vector<int32_t>>& prompt_ids,
                                 const std::vector<std::string>& ground_truths, const std::string& data_source,
                                 int64_t max_response_length, int64_t batch_size = 256);

}  // namespace verl::trainer
