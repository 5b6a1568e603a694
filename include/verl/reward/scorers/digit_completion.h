// The digit-completion (arithmetic sequence) toy task of verl's e2e tests (reference spec §12;
// tests/special_e2e/envs/digit_completion/task.py). A prompt "{a},{b}:{max_number},{k}" asks for the next
// k numbers of the sequence a, b, ... modulo max_number, joined by ",".
//
// The reward is dense, one value per response character (the char tokenizer makes a character a token):
//   r_i = 1/(len(gt)+1) while response[0..i] matches the ground truth's prefix, 0 from the first mismatch on
// and verl's trainer reward function extends that vector over the remaining response tokens (the EOS
// included) with its last value.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace verl::reward {

// generate_ground_truth_response(prompt): "9,10:20,2" -> "11,12". An error names a malformed prompt.
std::string digit_completion_ground_truth(const std::string& prompt);

// The expected completion for a reward_model.ground_truth that is either the completion ("11,12") or, like
// verl's compute_reward takes it, the task prompt ("9,10:20,2"; recognised by its ':').
std::string digit_completion_target(const std::string& ground_truth);

// compute_reward(prompt, response)[0], given the ground truth: one value per character of `response`.
std::vector<float> digit_completion_dense_reward(const std::string& response, const std::string& ground_truth,
                                                 float sequence_reward = 1.0f);

// The trainer's token-level reward over `num_tokens` response tokens (the decoded response has the EOS
// removed): the dense reward, then its last value repeated (an empty response repeats 1 when the ground
// truth is empty, else 0). The caller multiplies by the response mask. When the response has more characters
// than num_tokens, the first num_tokens values are returned.
std::vector<float> digit_completion_token_rewards(const std::string& response, const std::string& ground_truth,
                                                  size_t num_tokens);

// A scalar for default_compute_score: the sum of the token-level reward over the response characters and
// one EOS token. A response equal to the ground truth scores 1.0 ((len(gt)+1) shares); a wrong first
// character scores 0. `ground_truth` as digit_completion_target takes it.
double digit_completion_compute_score(const std::string& solution_str, const std::string& ground_truth);

}  // namespace verl::reward
