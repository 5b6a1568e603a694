#include "verl/trainer/greedy_eval.h"

#include "verl/common/error.h"
#include "verl/reward/scorers/default_compute_score.h"
#include "verl/rollout/generator.h"

namespace verl::trainer {

GreedyEvalResult greedy_accuracy(model::CausalLM& model, const tokenizer::Tokenizer& tokenizer,
                                 const std::vector<std::vector<int32_t>>& prompt_ids,
                                 const std::vector<std::string>& ground_truths, const std::string& data_source,
                                 int64_t max_response_length, int64_t batch_size) {
  VERL_CHECK(prompt_ids.size() == ground_truths.size(), "eval", "greedy_accuracy: ", prompt_ids.size(),
             " prompts but ", ground_truths.size(), " ground truths");
  VERL_CHECK(batch_size > 0 && max_response_length > 0, "eval", "greedy_accuracy needs positive sizes");
  std::vector<int32_t> eos32 = tokenizer.eos_token_ids();
  VERL_CHECK(!eos32.empty(), "eval", "the tokenizer has no eos token to stop generation");
  std::optional<int32_t> pad = tokenizer.pad_token_id();
  if (!pad) pad = eos32.front();

  rollout::SamplingParams params;
  params.do_sample = false;
  params.temperature = 0;
  params.n = 1;
  params.max_response_length = max_response_length;
  params.eos_token_ids.assign(eos32.begin(), eos32.end());
  params.pad_token_id = *pad;

  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  GreedyEvalResult result;
  result.total = static_cast<int64_t>(prompt_ids.size());
  for (size_t begin = 0; begin < prompt_ids.size(); begin += static_cast<size_t>(batch_size)) {
    size_t end = std::min(prompt_ids.size(), begin + static_cast<size_t>(batch_size));
    std::vector<std::vector<int64_t>> rows;
    for (size_t i = begin; i < end; ++i) rows.emplace_back(prompt_ids[i].begin(), prompt_ids[i].end());
    auto [prompts, mask] = rollout::left_pad(rows, *pad);
    rollout::GenerationOutput out = rollout::generate(model, prompts, mask, params);
    torch::Tensor responses = out.responses.contiguous();
    auto acc = responses.accessor<int64_t, 2>();
    for (size_t i = begin; i < end; ++i) {
      const int64_t row = static_cast<int64_t>(i - begin);
      const int64_t length = out.response_lengths.at(static_cast<size_t>(row));
      std::vector<int32_t> tokens(static_cast<size_t>(length));
      for (int64_t j = 0; j < length; ++j) tokens[static_cast<size_t>(j)] = static_cast<int32_t>(acc[row][j]);
      std::string text = tokenizer.decode(tokens, /*skip_special_tokens=*/true);
      if (reward::default_compute_score(data_source, text, ground_truths[i]).score == 1.0) ++result.correct;
      result.responses.push_back(std::move(text));
    }
  }
  if (was_training) model->train();
  result.accuracy = result.total == 0 ? 0.0 : static_cast<double>(result.correct) / static_cast<double>(result.total);
  return result;
}

}  // namespace verl::trainer
