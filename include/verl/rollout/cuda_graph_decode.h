// The rollout's decode step on a CUDA device as a CUDA graph. A decode step of a small model is hundreds of
// tiny kernels (norms, rotary, projections, attention, per layer), and launching them from the host one by one
// costs more than running them (measured on an H200: 10 ms a step for Qwen2.5-0.5B at batch 1, 2% of the
// memory bound). Captured once per generation and replayed each step, the launches cost one call.
//
// A graph needs fixed shapes and addresses, so the step runs over every row of the batch (finished rows keep
// computing; their tokens are never read) and attends over the whole KV cache capacity with an additive bias
// that opens one position per step (model::DecoderImpl::decode_step_static). The sampled tokens, positions,
// bias and write position are copied into the graph's input buffers before each replay; the host synchronises
// at most once a step (the finished-rows check, only when rows can finish). VERL_CUDA_GRAPHS=0 turns it off
// (the eager step, which compacts finished rows, runs instead); VERL_CUDA_GRAPHS=force runs the fixed-shape step
// on the CPU too, uncaptured (its logic is tested there).
#pragma once

#include <torch/types.h>

#include <memory>

#include "verl/model/transformer.h"

namespace verl::rollout {

// Whether the graph step serves `model` on `device` here: a CUDA device, no tensor parallelism, an LM head, no
// sliding layers, and VERL_CUDA_GRAPHS not 0 (or VERL_CUDA_GRAPHS=force, any device).
bool cuda_graph_decode_applies(const model::CausalLM& model, const torch::Device& device);

class CudaGraphDecode {
 public:
  // After the prefill: `cache` holds the N rows' prompts (positions [0, P)), `prompt_mask` [N,P] their masks,
  // `positions` [N,1] each row's first response position. The cache must outlive this object.
  CudaGraphDecode(model::CausalLM& model, model::KVCache& cache, const torch::Tensor& prompt_mask,
                  const torch::Tensor& positions);
  ~CudaGraphDecode();
  CudaGraphDecode(const CudaGraphDecode&) = delete;
  CudaGraphDecode& operator=(const CudaGraphDecode&) = delete;

  // Decode step t (0-based: writes cache position P + t): `active` [a] the rows still generating, `tokens` [a]
  // their last tokens. Returns the active rows' next-token logits [a,V] in fp32 (a copy, safe across steps).
  torch::Tensor step(const torch::Tensor& active, const torch::Tensor& tokens, int64_t t);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace verl::rollout
