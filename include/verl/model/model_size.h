// How big the model of a config.json is, and whether it fits: checked before a model is allocated from a
// file, so that absurd sizes are one error line instead of an allocation of their size.
#pragma once

#include <string>

#include "verl/model/hf_config.h"

namespace verl::model {

// Parameters of the model `config` describes (embeddings, layers, norms, biases, lm_head unless tied), in
// double so that absurd sizes cannot overflow.
double parameter_count(const HFConfig& config);

// The MLP parameters of decoder layer `layer`: the dense MLP's (gate, up, down; their biases), or a sparse layer's
// router, experts and shared expert with its gate. `active_only`: those one token multiplies by (the router, its
// num_experts_per_tok experts, the shared expert), for FLOP counts.
double mlp_parameter_count(const HFConfig& config, int64_t layer, bool active_only);

// Throws when the fp32 weights of `config` (4 bytes a parameter, as CausalLM allocates them) would not fit in
// this machine's physical memory, naming `source`, the sizes behind the estimate and both sizes in GiB.
void check_model_fits_in_memory(const HFConfig& config, const std::string& source);

}  // namespace verl::model
