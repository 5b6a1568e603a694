// The tiny model config the model tests build on (two layers, hidden 32, GQA 4 / 2 heads, head size 8, or
// 16 for Qwen3 so q_norm / k_norm see more than one pair per head). Tests that need more layers, biases or a
// larger init change the fields they need.
#pragma once

#include "verl/model/hf_config.h"

namespace verl::test {

inline model::HFConfig tiny_config(model::Arch arch) {
  model::HFConfig c;
  c.arch = arch;
  c.vocab_size = 40;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = arch == model::Arch::Qwen3 ? 16 : 8;
  c.rms_norm_eps = 1e-6;
  c.eos_token_ids = {38};
  c.pad_token_id = 39;
  return c;
}

}  // namespace verl::test
