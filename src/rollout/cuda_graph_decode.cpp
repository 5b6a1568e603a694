#include "verl/rollout/cuda_graph_decode.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdlib>
#include <cstring>

#include "verl/common/error.h"
#include "verl/model/mixed_precision.h"
#include "verl/runtime/cuda_device.h"

namespace verl::rollout {
namespace {

constexpr const char* kCudaGraphDecodeComponent = "rollout";

}  // namespace

bool cuda_graph_decode_applies(const model::CausalLM& model, const torch::Device& device) {
  // Sliding layers need a second mask, which the graph's one bias over the cache does not hold; experts are chosen
  // per token, so which of them run (and on how many tokens) changes from step to step.
  if (model->tp.active() || model->head != model::HeadKind::LM || !model->config.sliding_layers.empty() ||
      model->config.moe.enabled) {
    return false;
  }
  const char* flag = std::getenv("VERL_CUDA_GRAPHS");
  // "force": the fixed-shape step on any device, captured only on CUDA (the CPU tests check its logic).
  if (flag != nullptr && std::strcmp(flag, "force") == 0) return true;
  return device.is_cuda() && (flag == nullptr || std::strcmp(flag, "0") != 0);
}

struct CudaGraphDecode::State {
  model::CausalLM model;
  model::KVCache* cache = nullptr;
  int64_t prompt_length = 0;
  torch::Tensor tokens, positions, bias, write_index;  // the graph's inputs [N,1], [N,1], [N,capacity], [1]
  torch::Tensor logits;                                // its output [N,V] fp32
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // made at the first CUDA step (its constructor needs CUDA)

  explicit State(model::CausalLM m) : model(std::move(m)) {}

  void run_step() {
    auto h = model->model->decode_step_static(tokens, positions, bias, *cache);
    logits.copy_(model->logits(h.squeeze(1)));
  }
};

CudaGraphDecode::CudaGraphDecode(model::CausalLM& model, model::KVCache& cache, const torch::Tensor& prompt_mask,
                                 const torch::Tensor& positions)
    : state_(std::make_unique<State>(model)) {
  State& s = *state_;
  const auto device = cache.k.at(0).device();
  const auto dtype = cache.k.at(0).scalar_type();
  const int64_t N = prompt_mask.size(0), P = prompt_mask.size(1), capacity = cache.capacity;
  VERL_ASSERT(cache.batch() == N && cache.length == P && positions.size(0) == N, kCudaGraphDecodeComponent,
              "graph decode needs the prefilled cache of the batch's rows");
  s.cache = &cache;
  s.prompt_length = P;
  const auto ids = torch::TensorOptions().dtype(torch::kInt64).device(device);
  s.tokens = torch::zeros({N, 1}, ids);
  s.positions = positions.to(device, torch::kInt64).reshape({N, 1}).clone();
  s.write_index = torch::full({1}, P, ids);
  // Prompt positions open where the prompt mask is 1; every response position closed until its step.
  s.bias = torch::full({N, capacity}, model::masked_bias_value(dtype), torch::TensorOptions().dtype(dtype).device(device));
  s.bias.narrow(1, 0, P).masked_fill_(prompt_mask.to(device).to(torch::kBool), 0.0);
  s.logits = torch::empty({N, model->config.vocab_size}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  cache.write_index = s.write_index;
}

CudaGraphDecode::~CudaGraphDecode() {
  if (state_ && state_->cache) state_->cache->write_index = torch::Tensor();
}

torch::Tensor CudaGraphDecode::step(const torch::Tensor& active, const torch::Tensor& tokens, int64_t t) {
  State& s = *state_;
  const int64_t position = s.prompt_length + t;
  VERL_ASSERT(position < s.cache->capacity, kCudaGraphDecodeComponent, "KV cache overflow");
  // Inputs in place (the graph reads these addresses): tokens of the active rows, the newly opened column, the
  // write position. Positions advance by one per step inside the step's own arithmetic below.
  s.tokens.index_copy_(0, active, tokens.reshape({-1, 1}));
  s.bias.narrow(1, position, 1).zero_();
  s.write_index.fill_(position);
  if (!s.tokens.is_cuda()) {
    s.run_step();  // VERL_CUDA_GRAPHS=force on the CPU: the same step, run eagerly
  } else if (!s.graph) {
    // Step 0 runs eagerly on a side stream (warming cuBLAS and the allocator there), then the same work is
    // captured on that stream; later steps replay it.
    const auto device = s.tokens.device();
    auto stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    runtime::synchronize(device);
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      s.run_step();
      stream.synchronize();
      s.graph = std::make_unique<at::cuda::CUDAGraph>();
      s.graph->capture_begin();
      s.run_step();
      s.graph->capture_end();
    }
    runtime::synchronize(device);
  } else {
    s.graph->replay();
  }
  s.positions.add_(1);
  return s.logits.index_select(0, active);
}

}  // namespace verl::rollout
