// The rollout engine: batched prefill and decode over a preallocated KV cache, temperature / top-k /
// top-p / greedy sampling, n samples per prompt, eos ids, ignore_eos, finished rows dropped from the decode
// batch, and verl's output layout (spec §1, §7.3, §7.4): prompts left-padded to P, responses right-padded
// to R with pad id, response_mask / attention_mask 1 through the first eos, position_ids continuing past
// the last prompt position, optional per-token log-probs. Seeded: the same seed gives the same tokens.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "verl/config/ppo_config.h"
#include "verl/model/transformer.h"

namespace verl::rollout {

struct SamplingParams {
  double temperature = 1.0;  // 0 means greedy
  int64_t top_k = -1;        // <= 0: off
  double top_p = 1.0;        // 1: off
  bool do_sample = true;     // false: greedy
  int64_t n = 1;             // samples per prompt; rows come out as [x0]*n + [x1]*n + ...
  int64_t max_response_length = 16;
  std::vector<int64_t> eos_token_ids;
  int64_t pad_token_id = 0;
  bool ignore_eos = false;  // generate max_response_length tokens; every one counts in the masks
  // vLLM's stop_token_ids: ids that end a multi-turn turn even with ignore_eos (the tool parsers' stop tokens, which
  // verl's tool agent loop adds); the continuation engine reads them.
  std::vector<int64_t> stop_token_ids;
  bool calculate_log_probs = false;
  uint64_t seed = 0;
  // rollout.gpu_memory_utilization: on a CUDA device, the share of its memory this process may fill; the prompts
  // whose KV cache fits in what is left go through one pass at a time. 0: no limit (and always on the CPU).
  double gpu_memory_utilization = 0;
  // rollout.max_num_seqs (vLLM's concurrent sequences): at most this many rows (prompts x n) decode at once, more
  // prompts generate in passes. 0: no limit.
  int64_t max_num_seqs = 0;
  bool enforce_eager = false;  // rollout.enforce_eager: no CUDA graph for the decode step

  bool greedy() const { return !do_sample || temperature == 0.0; }
};

struct GenerationOutput {
  torch::Tensor prompts;            // [B*n, P] int64, left-padded
  torch::Tensor responses;          // [B*n, R] int64, right-padded with pad id
  torch::Tensor input_ids;          // [B*n, P+R]
  torch::Tensor attention_mask;     // [B*n, P+R] int64
  torch::Tensor position_ids;       // [B*n, P+R] int64
  torch::Tensor response_mask;      // [B*n, R] int64
  torch::Tensor rollout_log_probs;  // [B*n, R] fp32 (0 on padding), only with calculate_log_probs
  std::vector<int64_t> response_lengths;
  // Host-clock phase times, wall and process CPU (exact on the CPU; on CUDA, queued kernels can spill into
  // the next phase).
  double prefill_seconds = 0, prefill_cpu_seconds = 0;  // the distinct prompts and their last-position logits
  double decode_seconds = 0, decode_cpu_seconds = 0;    // sampling every response token, decode steps between
  int64_t decode_steps = 0;    // forward passes over the KV cache (at most max_response_length - 1)
};

// verl's sampling settings: actor_rollout_ref.rollout.{temperature, top_k, top_p, n, do_sample,
// response_length, ignore_eos, calculate_log_probs}, or rollout.val_kwargs for validation (spec §7.1).
SamplingParams sampling_params_from_config(const config::RolloutConfig& rollout, bool validate,
                                           std::vector<int64_t> eos_token_ids, int64_t pad_token_id, uint64_t seed);

// Probabilities the sampler draws from for fp32 logits [b, V]: softmax(logits / temperature) restricted to
// the top_k tokens, then to the smallest top set whose mass reaches top_p (the first token always stays),
// renormalised. Exposed for tests.
torch::Tensor sampling_probs(const torch::Tensor& logits, double temperature, int64_t top_k, double top_p);

// Draws one token per row from `probs` [b, V] by inverse CDF with uniforms from `generator` (CPU), so
// results do not depend on the device.
torch::Tensor sample_from_probs(const torch::Tensor& probs, at::Generator& generator);

// The decode step's logits [rows, V] from final hidden states [rows, hidden] (the skinny LM-head kernel where it
// applies, which reads a head packed by model::DecodeWeightPacking): shared with the multi-turn engine
// (agent/continuation_engine.h).
torch::Tensor decode_step_logits(model::CausalLM& model, const torch::Tensor& hidden);

// prompts [B, P] left-padded, prompt_mask [B, P] (1 = real token; each row needs at least one).
GenerationOutput generate(model::CausalLM& model, const torch::Tensor& prompts, const torch::Tensor& prompt_mask,
                          const SamplingParams& params);

// The same in passes of at most `prompts_per_pass` prompts (each with its n samples), one KV cache at a time,
// outputs concatenated in prompt order. generate() calls it with what gpu_memory_utilization allows; greedy
// decoding gives the one-pass tokens (sampling draws the same stream in another order).
GenerationOutput generate_in_passes(model::CausalLM& model, const torch::Tensor& prompts,
                                    const torch::Tensor& prompt_mask, const SamplingParams& params,
                                    int64_t prompts_per_pass);

// How many prompts' KV caches (n rows of prompt_length + max_response_length positions each) fit in
// `budget_bytes`; an error naming rollout.gpu_memory_utilization when not even one does.
int64_t prompts_per_pass(const model::CausalLM& model, int64_t prompt_length, const SamplingParams& params,
                         int64_t budget_bytes);

// Left-pads ragged prompts to the longest one (or to `prompt_length` when larger) with pad_id.
std::pair<torch::Tensor, torch::Tensor> left_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad_id,
                                                 int64_t prompt_length = 0);

}  // namespace verl::rollout
