// Pipeline parallelism (Megatron-LM's pipeline_model_parallel_size) over a Comm: the P stages of one model copy each
// hold a run of its layers; a forward passes the hidden states from stage to stage and the last stage's outputs
// (log-probs, values) are broadcast to every stage, so every stage computes the same loss from the same batch, as
// the ranks of a tensor-parallel group do. Its backward runs the other way: each stage sends the gradient of the
// hidden states it received back to the stage before.
//
//   receive_activation(links, grad)        forward: the previous stage's hidden states;
//                                          backward: their gradient sent back to it
//   send_activation(h, links)              forward: h to the next stage, returns a scalar 0 to add to this stage's
//                                          outputs (so the loss reaches the send); backward: h's gradient received
//                                          from the next stage
//   broadcast_outputs(outputs, links)      the last stage's outputs on every stage (undefined entries stay undefined)
//
// The stages take turns (one micro-batch passes through them at a time; Megatron's 1F1B schedule overlaps them):
// pipeline parallelism here divides the model's memory, not its time. Transfers go over a communicator of the
// two neighbouring stages; each carries a small header (dtype and shape) before the data.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "verl/parallel/comm.h"

namespace verl::parallel {

struct PipelineLinks {
  std::shared_ptr<Comm> stages;    // the P stages of one model copy, rank = stage
  std::shared_ptr<Comm> previous;  // stages (s-1, s), this stage rank 1; on the first stage null, or (P-1, 0) in a ring
  std::shared_ptr<Comm> next;      // stages (s, s+1), this stage rank 0; on the last stage null, or (P-1, 0) in a ring
  std::shared_ptr<Comm> embedding;  // the first and last stages (tied word embeddings); null on the others
  int stage() const { return stages ? stages->rank() : 0; }
  int count() const { return stages ? stages->size() : 1; }
  bool first() const { return stage() == 0; }
  bool last() const { return stage() == count() - 1; }
};
// Collective over `stages`. `ring`: the last stage links on to the first (virtual stages: a forward goes round
// several times).
std::shared_ptr<PipelineLinks> pipeline_links(const std::shared_ptr<Comm>& stages, bool ring = false);

// The mesh of stages, tensor- and context-parallel ranks: parallel/model_parallel_mesh.h.

// The layers of each run when `num_layers` split evenly into stages x virtual_stages runs (Megatron's default
// layout); an error naming `key` (and `virtual_key`) when they do not divide.
int64_t pipeline_chunk_layers(int64_t num_layers, int64_t stages, int64_t virtual_stages, const std::string& key,
                              const std::string& virtual_key);

// See the top of this file. `requires_grad`: whether this forward will be backpropagated (the same on every stage).
torch::Tensor receive_activation(const std::shared_ptr<PipelineLinks>& links, const torch::Device& device,
                                 bool requires_grad);
torch::Tensor send_activation(const torch::Tensor& h, const std::shared_ptr<PipelineLinks>& links);
std::vector<torch::Tensor> broadcast_outputs(const std::vector<torch::Tensor>& outputs, const PipelineLinks& links,
                                             const torch::Device& device);

}  // namespace verl::parallel
