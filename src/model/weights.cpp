#include "verl/model/weights.h"

#include <filesystem>
#include <set>

#include "verl/common/error.h"
#include "verl/model/lora.h"
#include "verl/model/model_size.h"
#include "verl/model/pipeline_parallel_model.h"
#include "verl/model/tensor_parallel_model.h"

namespace verl::model {
namespace {
constexpr const char* kWeightsComponent = "weights";

std::string sizes_text(c10::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

const char* torch_dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kFloat16: return "float16";
    case torch::kFloat64: return "float64";
    default: return "float32";
  }
}
}  // namespace

torch::ScalarType to_torch_dtype(io::DType dtype) {
  switch (dtype) {
    case io::DType::F64: return torch::kFloat64;
    case io::DType::F32: return torch::kFloat32;
    case io::DType::F16: return torch::kFloat16;
    case io::DType::BF16: return torch::kBFloat16;
    case io::DType::I64: return torch::kInt64;
    case io::DType::I32: return torch::kInt32;
    case io::DType::I8: return torch::kInt8;
    case io::DType::U8: return torch::kUInt8;
    case io::DType::BOOL: return torch::kBool;
  }
  VERL_ASSERT(false, kWeightsComponent, "unknown dtype");
}

io::DType to_safetensors_dtype(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat64: return io::DType::F64;
    case torch::kFloat32: return io::DType::F32;
    case torch::kFloat16: return io::DType::F16;
    case torch::kBFloat16: return io::DType::BF16;
    case torch::kInt64: return io::DType::I64;
    case torch::kInt32: return io::DType::I32;
    case torch::kInt8: return io::DType::I8;
    case torch::kUInt8: return io::DType::U8;
    case torch::kBool: return io::DType::BOOL;
    default: break;
  }
  VERL_FAIL(kWeightsComponent, "tensor dtype ", c10::toString(dtype), " cannot be stored in safetensors");
}

torch::Tensor tensor_from_view(const io::TensorView& view) {
  auto out = torch::empty(view.shape, torch::TensorOptions().dtype(to_torch_dtype(view.dtype)));
  VERL_ASSERT(static_cast<size_t>(out.nbytes()) == view.nbytes, kWeightsComponent, "byte size mismatch");
  if (view.nbytes > 0) std::memcpy(out.data_ptr(), view.data, view.nbytes);
  return out;
}

namespace {
std::vector<io::TensorBytes> to_bytes(const NamedTensors& tensors, std::vector<torch::Tensor>& keep) {
  std::vector<io::TensorBytes> list;
  for (const auto& [name, t] : tensors) {
    keep.push_back(t.detach().to(torch::kCPU).contiguous());
    const auto& c = keep.back();
    io::TensorBytes b;
    b.name = name;
    b.dtype = to_safetensors_dtype(c.scalar_type());
    b.shape.assign(c.sizes().begin(), c.sizes().end());
    b.data = c.data_ptr();
    b.nbytes = c.nbytes();
    list.push_back(b);
  }
  return list;
}
}  // namespace

void save_tensors(const std::string& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata) {
  std::vector<torch::Tensor> keep;
  keep.reserve(tensors.size());
  io::write_safetensors(path, to_bytes(tensors, keep), metadata);
}

NamedTensors load_tensors(const std::string& path) {
  io::SafetensorsCheckpoint ckpt(path);
  NamedTensors out;
  for (const auto& name : ckpt.names()) {
    out.emplace_back(name, tensor_from_view(ckpt.get(name)));
    ckpt.release(name);  // the copy is what stays resident
  }
  return out;
}

namespace {
// view's values into p (same element count, any floating dtypes) straight from the mapped file, 64 MiB of the file
// at a time, each slice's pages released once copied: loading peaks at the model plus one slice, not the model
// plus the file (a tied 0.5B embedding alone is 545 MB).
void copy_releasing(const io::SafetensorsCheckpoint& ckpt, const io::TensorView& view, torch::Tensor& p) {
  const auto source = torch::from_blob(const_cast<uint8_t*>(view.data), {view.numel()},
                                       torch::TensorOptions().dtype(to_torch_dtype(view.dtype)));
  auto target = p.view({-1});
  const auto element = static_cast<int64_t>(io::dtype_size(view.dtype));
  const int64_t slice = std::max<int64_t>(1, (int64_t{64} << 20) / element);
  for (int64_t begin = 0; begin < view.numel(); begin += slice) {
    const int64_t n = std::min(slice, view.numel() - begin);
    target.narrow(0, begin, n).copy_(source.narrow(0, begin, n));
    ckpt.release(view.name, static_cast<size_t>(begin * element), static_cast<size_t>(n * element));
  }
}
}  // namespace

void load_state(CausalLM& model, const io::SafetensorsCheckpoint& ckpt, const LoadOptions& options) {
  torch::NoGradGuard no_grad;
  auto params = model->named_parameters();
  std::set<std::string> expected;
  for (const auto& item : params) expected.insert(item.key());
  const bool value_head = model->head == HeadKind::Value;
  const bool fresh_score = value_head && !ckpt.contains("score.weight");
  for (const auto& name : ckpt.names()) {
    if (expected.count(name)) continue;
    if (name == "lm_head.weight" && (value_head || model->config.tie_word_embeddings)) continue;  // not used
    if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // old HF checkpoints persist it
    VERL_FAIL(kWeightsComponent, "unexpected tensor '", name, "' in the checkpoint: the model built from config.json (",
              hf_class_name(model->config), ") has no such parameter");
  }
  for (auto& item : params) {
    const std::string& name = item.key();
    if (fresh_score && (name == "score.weight" || name == "score.bias")) continue;
    VERL_CHECK(ckpt.contains(name), kWeightsComponent, "missing tensor '", name,
               "' in the checkpoint (config.json says ", hf_class_name(model->config), " with ",
               model->config.num_hidden_layers, " layers)");
    const auto& view = ckpt.get(name);
    auto& p = item.value();
    VERL_CHECK(view.shape == std::vector<int64_t>(p.sizes().begin(), p.sizes().end()), kWeightsComponent, "tensor '",
               name, "' has shape ", sizes_text(view.shape), " in the checkpoint but config.json implies ",
               sizes_text(p.sizes()));
    VERL_CHECK(view.dtype != io::DType::BOOL && view.dtype != io::DType::I64 && view.dtype != io::DType::I32 &&
                   view.dtype != io::DType::I8 && view.dtype != io::DType::U8,
               kWeightsComponent, "tensor '", name, "' has integer dtype ", io::dtype_name(view.dtype),
               "; weights must be floating point");
    copy_releasing(ckpt, view, p);
  }
  if (fresh_score) init_value_head(model, options.value_head_seed);
}

namespace {

// config.json's sizes against the checkpoint's tensor shapes (read from the safetensors headers), before any
// weight is allocated: a wrong or absurd size is one line naming the field, not an allocation of its size.
// `config_dir` holds the config.json that `c` came from (the weights' folder unless model.hf_config_path).
void check_config_against_checkpoint(const HFConfig& c, const io::SafetensorsCheckpoint& ckpt,
                                     const std::string& config_dir) {
  const std::string src = (std::filesystem::path(config_dir) / "config.json").string();
  auto expect = [&](const std::string& name, std::vector<int64_t> shape, const std::string& fields) {
    if (!ckpt.contains(name)) return;  // load_state names missing tensors
    const auto& got = ckpt.get(name).shape;
    VERL_CHECK(got == shape, kWeightsComponent, src, ": ", fields, " imply ", sizes_text(shape), " for '", name,
               "' but the checkpoint has ", sizes_text(got));
  };
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  expect("model.embed_tokens.weight", {c.vocab_size, H}, "vocab_size=" + std::to_string(c.vocab_size) +
                                                             ", hidden_size=" + std::to_string(H));
  const std::string heads = "num_attention_heads=" + std::to_string(c.num_attention_heads) +
                            ", head_dim=" + std::to_string(c.head_dim) + ", hidden_size=" + std::to_string(H);
  const std::string kv_heads = "num_key_value_heads=" + std::to_string(c.num_key_value_heads) +
                               ", head_dim=" + std::to_string(c.head_dim) + ", hidden_size=" + std::to_string(H);
  const std::string mlp = "intermediate_size=" + std::to_string(I) + ", hidden_size=" + std::to_string(H);
  expect("model.layers.0.self_attn.q_proj.weight", {q, H}, heads);
  expect("model.layers.0.self_attn.k_proj.weight", {kv, H}, kv_heads);
  expect("model.layers.0.mlp.gate_proj.weight", {I, H}, mlp);
  expect("model.layers.0.mlp.down_proj.weight", {H, I}, mlp);
  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    if (!c.layer_is_sparse(layer)) continue;  // the first layer with experts stands for all of them
    const std::string prefix = "model.layers." + std::to_string(layer) + ".mlp.";
    const int64_t E = c.moe.num_experts, MI = c.moe.moe_intermediate_size;
    const std::string experts = "num_experts=" + std::to_string(E) + ", hidden_size=" + std::to_string(H);
    const std::string expert = "moe_intermediate_size=" + std::to_string(MI) + ", hidden_size=" + std::to_string(H);
    expect(prefix + "gate.weight", {E, H}, experts);
    expect(prefix + "experts.0.gate_proj.weight", {MI, H}, expert);
    expect(prefix + "experts.0.down_proj.weight", {H, MI}, expert);
    VERL_CHECK(!ckpt.contains(prefix + "experts." + std::to_string(E) + ".gate_proj.weight"), kWeightsComponent, src,
               ": num_experts=", E, " but the checkpoint has '", prefix, "experts.", E, ".gate_proj.weight'");
    if (c.moe.shared_expert_intermediate_size > 0) {
      const int64_t SI = c.moe.shared_expert_intermediate_size;
      expect(prefix + "shared_expert.gate_proj.weight", {SI, H},
             "shared_expert_intermediate_size=" + std::to_string(SI) + ", hidden_size=" + std::to_string(H));
    }
    break;
  }
  const std::string last = "model.layers." + std::to_string(c.num_hidden_layers - 1) + ".self_attn.q_proj.weight";
  if (ckpt.contains("model.layers.0.self_attn.q_proj.weight")) {
    int64_t layers = 0;
    while (layers < c.num_hidden_layers &&
           ckpt.contains("model.layers." + std::to_string(layers) + ".self_attn.q_proj.weight"))
      ++layers;
    VERL_CHECK(ckpt.contains(last), kWeightsComponent, src, ": num_hidden_layers=", c.num_hidden_layers,
               " but the checkpoint has ", layers, " layers ('", last, "' is missing)");
  }
}

}  // namespace

CausalLM load_model(const std::string& dir, const LoadOptions& options) {
  const std::string& config_dir = options.config_dir.empty() ? dir : options.config_dir;
  HFConfig config = load_hf_config(config_dir, options.config_overrides);
  io::SafetensorsCheckpoint ckpt(dir);
  check_config_against_checkpoint(config, ckpt, config_dir);
  check_model_fits_in_memory(config, (std::filesystem::path(config_dir) / "config.json").string());
  CausalLM model(config, options.head);
  model->to(options.dtype);
  load_state(model, ckpt, options);
  model->eval();
  if (options.tensor_parallel.active()) model = shard_model(model, options.tensor_parallel);
  if (options.pipeline_stages == nullptr || options.pipeline_stages->size() == 1) return model;
  return pipeline_stage_model(
      model, pipeline_parallel_group(options.pipeline_stages, config.num_hidden_layers, options.pipeline_key,
                                     options.pipeline_virtual_stages, options.pipeline_virtual_key));
}

void save_model(CausalLM& model, const std::string& dir, const SaveOptions& options) {
  namespace fs = std::filesystem;
  VERL_CHECK(!model->tp.active(), kWeightsComponent,
             "save_model got one rank's tensor-parallel slices; gather the model "
             "whole first (gather_full_model)");
  fs::create_directories(dir);
  NamedTensors tensors;
  torch::ScalarType dtype = torch::kFloat32;
  const auto lora = lora_state(model);
  VERL_CHECK(!lora || lora->merged, kWeightsComponent,
             "save_model on a model with LoRA adapters: save the adapter "
             "(save_peft_adapter), or merge it first (MergedAdapter, merge_and_unload)");
  for (const auto& item : model->named_parameters()) {
    if (lora && is_lora_parameter_name(item.key())) continue;  // merged into the base weights
    auto t = item.value().detach();
    if (options.dtype) t = t.to(*options.dtype);
    dtype = t.scalar_type();
    tensors.emplace_back(item.key(), t);
  }
  std::vector<torch::Tensor> keep;
  keep.reserve(tensors.size());
  io::write_checkpoint(dir, to_bytes(tensors, keep), options.max_shard_bytes);
  HFConfig config = model->config;
  config.torch_dtype = torch_dtype_name(dtype);
  config.token_classification = model->head == HeadKind::Value;
  save_hf_config(config, dir);
  save_generation_config(config, dir);
  if (options.tokenizer_dir) {
    const fs::path src(*options.tokenizer_dir);
    VERL_CHECK(fs::is_directory(src), kWeightsComponent, "tokenizer folder '", src.string(), "' does not exist");
    int copied = 0;
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
                             "merges.txt", "tokenizer.model", "added_tokens.json"}) {
      if (fs::exists(src / name)) {
        fs::copy_file(src / name, fs::path(dir) / name, fs::copy_options::overwrite_existing);
        ++copied;
      }
    }
    VERL_CHECK(copied > 0, kWeightsComponent, "tokenizer folder '", src.string(),
               "' has no tokenizer files (tokenizer.json, tokenizer_config.json, ...)");
  }
}

}  // namespace verl::model
