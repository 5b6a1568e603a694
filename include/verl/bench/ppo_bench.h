// `verl bench ppo`: one PPO step through the real workers (ActorRolloutRefWorker as actor_rollout_ref,
// CriticWorker), in verl's order: generate_sequences -> compute_log_prob (old) -> compute_ref_log_prob ->
// compute_values -> GAE on the controller -> update_critic -> update_actor. Random weights of a preset shape
// (written to a temporary HF folder, as the workers load from a path) or a given model folder; random prompts
// of full length (or, with prompt_tokens, of a drawn length left-padded as verl pads to data.max_prompt_length)
// and responses generated to full length (ignore_eos; with response_tokens, each then ended at a drawn length as
// an EOS would end it, the padding after it masked, before the log-prob, value and update passes).
// Per phase: wall and CPU time, tokens/s (attention-mask tokens; generated tokens for generation) and MFU
// = model FLOPs / wall / the GEMM peak measured in this process just before the step (bench/model_flops.h
// says what is counted). Tokens and FLOPs count the prompts' real tokens only: padding is not work.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "verl/bench/roofline.h"

namespace verl::bench {

struct PpoBenchOptions {
  std::string model = "qwen2-25m";  // preset (bench/model_presets.h)
  std::string model_dir;            // an HF model folder instead
  int64_t batch_size = 16;          // prompts (data.train_batch_size = ppo_mini_batch_size: one update step)
  int64_t n = 4;                    // responses per prompt (actor_rollout_ref.rollout.n)
  int64_t prompt_length = 64;
  // > 0: prompt i has a length drawn uniformly from [ceil(prompt_tokens / 2), prompt_tokens] (seeded), left-padded
  // to prompt_length, the shape of a real dataset's batch; 0: every prompt fills prompt_length.
  int64_t prompt_tokens = 0;
  int64_t response_length = 64;
  // > 0: after generation, response i keeps a length drawn uniformly from [ceil(response_tokens / 2),
  // response_tokens] (seeded) and is right-padded to response_length, the ragged responses of a real run (random
  // weights never sample EOS); 0: every response fills response_length.
  int64_t response_tokens = 0;
  int64_t micro_batch_size = 16;    // per-device micro batch of every log-prob / value / update pass
  bool gradient_checkpointing = false;
  uint64_t seed = 0;
  int repeats = 1;                     // > 1: an untimed warm-up step, then this many timed steps
  std::string device = "cpu";          // cpu | cuda: trainer.device, and where the roofline is measured
  std::vector<std::string> overrides;  // more verl config keys (key=value), applied last
  RooflineOptions roofline;            // GEMM peak measured right before the step
};

struct PpoPhase {
  std::string name;  // gen, old_log_prob, ref, values, adv, update_critic, update_actor
  double seconds = 0, cpu_seconds = 0;
  double tokens = 0;
  double flops = 0;  // 0 where no model runs (adv)
  int64_t peak_rss_bytes = -1;  // the process's peak resident memory during the phase (-1: not measured)
};

struct PpoBenchResult {
  Roofline roofline;
  PpoBenchOptions options;
  double params = 0;
  std::vector<PpoPhase> phases;                   // the fastest timed step's
  std::vector<std::vector<PpoPhase>> all_steps;   // every timed step's (repeats)
  int64_t peak_memory_bytes = 0;  // CUDA: the caching allocator's peak over the step (all roles, one device)
  std::string compute_dtype = "fp32";  // the actor's forward precision (mixed_precision.param_dtype, resolved):
                                       // MFU is against the bf16 GEMM peak when it is bf16
  std::vector<std::string> roles;      // the models the step held: actor (with its rollout), ref, critic
};

PpoBenchResult run_ppo_bench(const PpoBenchOptions& options);

nlohmann::json to_json(const PpoBenchResult& result);
std::string format_ppo_bench(const PpoBenchResult& result);

}  // namespace verl::bench
