#include "verl/bench/model_presets.h"

#include "verl/common/error.h"
#include "verl/common/strings.h"

namespace verl::bench {
namespace {

model::HFConfig qwen2(int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads, int64_t intermediate,
                      int64_t vocab, bool tied, double rope_theta) {
  model::HFConfig c;
  c.arch = model::Arch::Qwen2;
  c.hidden_size = hidden;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.intermediate_size = intermediate;
  c.vocab_size = vocab;
  c.tie_word_embeddings = tied;
  c.rope_theta = rope_theta;
  c.rms_norm_eps = 1e-6;
  c.max_position_embeddings = 32768;
  // Special ids at the top of the vocabulary, as `verl model init` numbers them.
  c.bos_token_id = vocab - 3;
  c.eos_token_ids = {vocab - 2};
  c.pad_token_id = vocab - 1;
  c.validate();
  return c;
}

}  // namespace

const std::vector<std::string>& model_preset_names() {
  static const std::vector<std::string> names = {"qwen2-25m", "qwen2.5-0.5b", "tiny"};
  return names;
}

model::HFConfig model_preset(const std::string& name) {
  if (name == "qwen2-25m") return qwen2(512, 6, 8, 2, 1408, 8192, false, 10000.0);
  if (name == "qwen2.5-0.5b") return qwen2(896, 24, 14, 2, 4864, 151936, true, 1000000.0);
  if (name == "tiny") return qwen2(64, 2, 4, 2, 128, 256, false, 10000.0);
  VERL_FAIL("bench", "unknown model preset '", name, "'; valid presets: ", join(model_preset_names(), ", "),
            " (or --model-dir DIR for an HF model folder)");
}

}  // namespace verl::bench
