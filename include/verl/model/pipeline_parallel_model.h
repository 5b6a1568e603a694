// The megatron strategy's pipeline stages on the model side (pipeline_model_parallel_size): which stage holds which
// HF parameters, and the moves between a whole-depth model and one stage's part.
//
//   stage s of P (layers split evenly)   model.layers.<i>.* for i in [s L/P, (s+1) L/P); with V virtual stages
//                                        (interleaved), the runs s, s + P, ... of L / (P V) layers each
//   first stage                          model.embed_tokens.weight
//   last stage                           model.norm.weight, lm_head.weight or score.*, and with tied word embeddings
//                                        a copy of model.embed_tokens.weight (its gradient summed with the first
//                                        stage's before each optimizer step, as Megatron's embedding group does)
//
// A stage model composes with tensor parallelism (each stage's layers split over its TP group). Checkpoints stay in
// HF layout: a stage model is loaded whole and cut (weights.h: LoadOptions::pipeline_parallel), and its stages are
// gathered for generation and for saving.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "verl/model/transformer.h"

namespace verl::model {

// This rank's stage of `stages` for a model of `num_layers` layers in `virtual_stages` runs per stage; an error
// naming `key` (and `virtual_key`) when they do not divide the layers. Collective over `stages`; one stage (or
// none): inactive.
PipelineParallelGroup pipeline_parallel_group(const std::shared_ptr<parallel::Comm>& stages, int64_t num_layers,
                                              const std::string& key, int64_t virtual_stages = 1,
                                              const std::string& virtual_key = "virtual_pipeline_model_parallel_size");

// The stage whose model holds `name` (the first stage for the embedding, also held by the last when tied).
int pipeline_stage_of(const std::string& name, const HFConfig& config, int stages, int64_t virtual_stages = 1);

// A model holding `pp`'s stage of `whole` (same config, head, TP group, dtype, device and flags), its parameters
// copied from whole's.
CausalLM pipeline_stage_model(CausalLM& whole, const PipelineParallelGroup& pp);

// Every stage's layers on every rank: a model of the same config, head and TP group (its TP slices stay slices)
// holding all layers, for generation and saving. Collective over the stages; `model` itself without pipeline
// parallelism. Not with LoRA adapters.
CausalLM gather_pipeline_stages(CausalLM& model);

// Tied word embeddings: the first and last stages' copies of model.embed_tokens.weight get the sum of their two
// gradients, so the same optimizer step keeps them equal. Collective over those two stages; nothing otherwise.
void sum_tied_embedding_gradients(CausalLM& model);

// For each parameter (parameters() order): whether it counts in the whole model's gradient norm on this stage
// (false only for the last stage's copy of a tied embedding, the first stage's counting for both).
std::vector<bool> parameter_counts_in_norm(CausalLM& model);

}  // namespace verl::model
