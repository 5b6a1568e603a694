#include "verl/model/model_tools.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/strings.h"
#include "verl/model/weights.h"

namespace verl::model {
namespace {
constexpr const char* kModelToolsComponent = "model";
}

HFConfig init_model_folder(const InitOptions& o) {
  HFConfig c;
  c.arch = o.arch;
  c.vocab_size = o.vocab_size;
  c.hidden_size = o.hidden_size;
  c.intermediate_size = o.intermediate_size;
  c.num_hidden_layers = o.num_layers;
  c.num_attention_heads = o.num_heads;
  c.num_key_value_heads = o.num_kv_heads;
  VERL_CHECK(o.num_heads > 0, kModelToolsComponent, "--num-heads must be positive");
  c.head_dim = o.head_dim ? *o.head_dim : o.hidden_size / o.num_heads;
  VERL_CHECK(o.head_dim || o.hidden_size % o.num_heads == 0, kModelToolsComponent, "--hidden-size (", o.hidden_size,
             ") must be a multiple of --num-heads (", o.num_heads, ") unless --head-dim is given");
  c.rope_theta = o.rope_theta;
  VERL_CHECK(o.initializer_range > 0, kModelToolsComponent, "--initializer-range must be positive");
  c.initializer_range = o.initializer_range;
  c.tie_word_embeddings = o.tie_word_embeddings;
  VERL_CHECK(!(o.attention_bias && (o.arch == Arch::Qwen2 || o.arch == Arch::Mistral)), kModelToolsComponent,
             "--attention-bias is for llama / qwen3 (qwen2 always has q/k/v biases, mistral none)");
  VERL_CHECK(!(o.mlp_bias && o.arch != Arch::Llama), kModelToolsComponent, "--mlp-bias is for llama only");
  c.attention_bias = o.attention_bias;
  c.mlp_bias = o.mlp_bias;
  c.rms_norm_eps = o.arch == Arch::Llama ? 1e-5 : 1e-6;
  c.max_position_embeddings = 4096;
  if (o.rope_scaling) {
    auto parts = split(*o.rope_scaling, ':');
    try {
      if (parts[0] == "linear" && parts.size() == 2) {
        c.rope_scaling.type = RopeScaling::Type::Linear;
        c.rope_scaling.factor = std::stod(parts[1]);
      } else if (parts[0] == "llama3" && parts.size() == 5) {
        c.rope_scaling.type = RopeScaling::Type::Llama3;
        c.rope_scaling.factor = std::stod(parts[1]);
        c.rope_scaling.low_freq_factor = std::stod(parts[2]);
        c.rope_scaling.high_freq_factor = std::stod(parts[3]);
        c.rope_scaling.original_max_position_embeddings = std::stoll(parts[4]);
      } else if (parts[0] == "yarn" && parts.size() == 3) {
        c.rope_scaling.type = RopeScaling::Type::Yarn;
        c.rope_scaling.factor = std::stod(parts[1]);
        c.rope_scaling.original_max_position_embeddings = std::stoll(parts[2]);
        c.rope_scaling.attention_factor = yarn_mscale(c.rope_scaling.factor, 1.0);  // transformers' default
      } else {
        VERL_FAIL(kModelToolsComponent, "--rope-scaling '", *o.rope_scaling,
                  "': expected linear:FACTOR, llama3:FACTOR:LOW:HIGH:ORIG_LEN or yarn:FACTOR:ORIG_LEN");
      }
    } catch (const std::logic_error&) {
      VERL_FAIL(kModelToolsComponent, "--rope-scaling '", *o.rope_scaling, "': numbers expected");
    }
  }
  if (o.sliding_window) {
    VERL_CHECK(o.arch != Arch::Llama, kModelToolsComponent, "--sliding-window is for mistral, qwen2 and qwen3");
    VERL_CHECK(*o.sliding_window > 0, kModelToolsComponent, "--sliding-window must be positive");
    VERL_CHECK(o.arch != Arch::Mistral || o.max_window_layers == 0, kModelToolsComponent,
               "--max-window-layers is for qwen2 / qwen3 (mistral's window is on every layer)");
    VERL_CHECK(o.max_window_layers >= 0 && o.max_window_layers < o.num_layers, kModelToolsComponent,
               "--max-window-layers must be in [0, --num-layers) so that a layer slides");
    c.sliding_window = *o.sliding_window;
    for (int64_t i = 0; i < o.num_layers; ++i) c.sliding_layers.push_back(i >= o.max_window_layers);
  } else {
    VERL_CHECK(o.max_window_layers == 0, kModelToolsComponent, "--max-window-layers needs --sliding-window");
  }
  if (o.moe) {
    VERL_CHECK(o.arch == Arch::Qwen2 || o.arch == Arch::Qwen3, kModelToolsComponent,
               "mixture-of-experts models are qwen2_moe and qwen3_moe");
    VERL_CHECK(!o.sliding_window, kModelToolsComponent, "--sliding-window is for the dense mistral, qwen2 and qwen3");
    c.moe.enabled = true;
    c.moe.num_experts = o.num_experts;
    c.moe.num_experts_per_tok = o.num_experts_per_tok;
    c.moe.moe_intermediate_size = o.moe_intermediate_size;
    c.moe.norm_topk_prob = o.norm_topk_prob;
    c.moe.decoder_sparse_step = o.decoder_sparse_step;
    if (o.arch == Arch::Qwen2) {
      c.moe.shared_expert_intermediate_size =
          o.shared_expert_intermediate_size > 0 ? o.shared_expert_intermediate_size : o.intermediate_size;
    } else {
      VERL_CHECK(o.shared_expert_intermediate_size == 0, kModelToolsComponent,
                 "--shared-expert-intermediate-size is for qwen2_moe (qwen3_moe has no shared expert)");
    }
  }
  // Special ids at the top of the vocabulary: bos = V-3, eos = V-2, pad = V-1.
  VERL_CHECK(o.vocab_size >= 4, kModelToolsComponent, "--vocab-size must be at least 4");
  c.bos_token_id = o.vocab_size - 3;
  c.eos_token_ids = {o.vocab_size - 2};
  c.pad_token_id = o.vocab_size - 1;
  VERL_CHECK(o.dtype == "float32" || o.dtype == "bfloat16", kModelToolsComponent,
             "--dtype must be float32 or bfloat16, got '", o.dtype, "'");
  c.validate();
  CausalLM model(c, HeadKind::LM);
  init_weights(model, o.seed, o.perturb_norms_and_biases);
  SaveOptions save;
  save.tokenizer_dir = o.tokenizer_dir;
  if (o.dtype == "bfloat16") save.dtype = torch::kBFloat16;
  save_model(model, o.out_dir, save);
  return c;
}

void forward_to_file(const std::string& model_dir, const std::string& input_json, const std::string& output_path) {
  std::ifstream in(input_json);
  VERL_CHECK(in.good(), kModelToolsComponent, "cannot read '", input_json, "'");
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), input_json);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL(kModelToolsComponent, "'", input_json, "' is not valid JSON (", e.what(), ")");
  }
  VERL_CHECK(j.is_object() && j.contains("input_ids") && j["input_ids"].is_array() && !j["input_ids"].empty(),
             kModelToolsComponent, "'", input_json, "' must be {\"input_ids\": [[ids...], ...]} with at least one row");
  CausalLM model = load_model(model_dir);
  const int64_t V = model->config.vocab_size;
  std::vector<std::vector<int64_t>> rows;
  int64_t max_len = 0;
  for (size_t r = 0; r < j["input_ids"].size(); ++r) {
    const auto& row = j["input_ids"][r];
    VERL_CHECK(row.is_array() && !row.empty(), kModelToolsComponent, "'", input_json, "': input_ids[", r,
               "] must be a non-empty list of token ids");
    std::vector<int64_t> ids;
    for (const auto& id : row) {
      VERL_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < V, kModelToolsComponent, "'",
                 input_json, "': input_ids[", r, "] holds ", id.dump(), ", expected a token id in [0, ", V, ")");
      ids.push_back(id.get<int64_t>());
    }
    max_len = std::max<int64_t>(max_len, ids.size());
    rows.push_back(std::move(ids));
  }
  const int64_t B = rows.size();
  const int64_t pad = model->config.pad_token_id.value_or(0);
  auto ids = torch::full({B, max_len}, pad, torch::kInt64);
  auto mask = torch::zeros({B, max_len}, torch::kInt64);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = rows[r].size();
    ids[r].narrow(0, max_len - len, len).copy_(torch::tensor(rows[r], torch::kInt64));
    mask[r].narrow(0, max_len - len, len).fill_(1);
  }
  torch::NoGradGuard no_grad;
  auto logits = model->forward(ids, mask, position_ids_from_mask(mask)).to(torch::kFloat32);
  NamedTensors out;
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = rows[r].size();
    out.emplace_back("logits_" + std::to_string(r), logits[r].narrow(0, max_len - len, len).contiguous());
  }
  save_tensors(output_path, out);
}

}  // namespace verl::model
