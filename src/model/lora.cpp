#include "verl/model/lora.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/parallel/tensor_parallel.h"

namespace verl::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kLoraComponent = "lora";
constexpr const char* kPeftPrefix = "base_model.model.";
constexpr const char* kAdapterWeights = "adapter_model.safetensors";
constexpr const char* kAdapterConfig = "adapter_config.json";

// One decoder-layer projection: its module name and the Linear.
struct Projection {
  std::string name;  // model.layers.{i}.self_attn.q_proj
  torch::nn::Linear linear;
};

std::vector<Projection> projections(const CausalLM& model) {
  std::vector<Projection> out;
  const auto& layers = model->model->layer_list;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    const auto& attn = layers[i]->self_attn;
    const auto& mlp = layers[i]->mlp;
    out.push_back({prefix + "self_attn.q_proj", attn->q_proj});
    out.push_back({prefix + "self_attn.k_proj", attn->k_proj});
    out.push_back({prefix + "self_attn.v_proj", attn->v_proj});
    out.push_back({prefix + "self_attn.o_proj", attn->o_proj});
    if (!mlp) continue;  // a layer of experts: its MLPs take no adapters (lora_target_names)
    out.push_back({prefix + "mlp.gate_proj", mlp->gate_proj});
    out.push_back({prefix + "mlp.up_proj", mlp->up_proj});
    out.push_back({prefix + "mlp.down_proj", mlp->down_proj});
  }
  return out;
}

std::string leaf(const std::string& name) { return name.substr(name.rfind('.') + 1); }

// PEFT's check_target_module_exists: a string is re.fullmatch over the whole name; a list entry matches the
// name itself or a dotted suffix of it.
bool matches(const std::string& name, const std::vector<std::string>& patterns, bool regex) {
  if (regex) return std::regex_match(name, std::regex(patterns.at(0)));
  for (const auto& p : patterns) {
    if (name == p) return true;
    if (name.size() > p.size() && name.compare(name.size() - p.size(), p.size(), p) == 0 &&
        name[name.size() - p.size() - 1] == '.') {
      return true;
    }
  }
  return false;
}

bool all_linear(const LoraSpec& spec) {
  return !spec.target_regex && spec.target_modules.size() == 1 && spec.target_modules[0] == "all-linear";
}

torch::nn::LinearImpl* child_linear(const torch::nn::Linear& proj, const char* name) {
  for (const auto& item : proj->named_children()) {
    if (item.key() == name) return item.value()->as<torch::nn::LinearImpl>();
  }
  return nullptr;
}

void for_each_module_state(const CausalLM& model, const std::shared_ptr<LoraState>& state) {
  for (DecoderLayer layer : model->model->layer_list) {  // a handle copy: the module itself is not const
    layer->self_attn->lora = state;
    if (layer->mlp) layer->mlp->lora = state;
  }
}

Json read_json_file(const std::string& path) {
  std::ifstream in(path);
  VERL_CHECK(in.good(), kLoraComponent, "cannot read '", path, "'");
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    VERL_FAIL(kLoraComponent, "'", path, "' is not valid JSON: ", e.what());
  }
}

// A string-or-list field of adapter_config.json; returns whether it was a (regex) string.
bool read_modules(const Json& config, const char* key, const std::string& file, std::vector<std::string>& out) {
  out.clear();
  if (!config.contains(key) || config[key].is_null()) return false;
  const Json& v = config[key];
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
    return out[0] != "all-linear";
  }
  VERL_CHECK(v.is_array(), kLoraComponent, "'", file, "': ", key, " must be a string or a list of module names");
  for (const auto& item : v) {
    VERL_CHECK(item.is_string(), kLoraComponent, "'", file, "': ", key, " must be a string or a list of module names");
    out.push_back(item.get<std::string>());
  }
  return false;
}

}  // namespace

double LoraSpec::scale() const {
  VERL_CHECK(rank > 0, kLoraComponent, "LoRA rank must be positive, got ", rank);
  return use_rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
}

LoraSpec lora_spec(const config::LoraConfig& c) {
  LoraSpec spec;
  spec.rank = c.lora_rank;
  spec.alpha = c.lora_alpha;
  spec.target_modules = c.target_modules;
  spec.target_regex = c.target_modules_regex;
  spec.exclude_modules = c.exclude_modules;
  spec.exclude_regex = c.exclude_modules_regex;
  return spec;
}

bool has_adapter(const torch::nn::Linear& proj) { return child_linear(proj, "lora_A") != nullptr; }

torch::Tensor lora_linear(torch::nn::Linear& proj, const torch::Tensor& x, const LoraState* state,
                          const TensorParallelGroup& tp) {
  auto y = proj->forward(x);
  if (state == nullptr || !state->side_path()) return y;
  auto* a = child_linear(proj, "lora_A");
  if (a == nullptr) return y;
  auto* b = child_linear(proj, "lora_B");
  namespace F = torch::nn::functional;
  // Column-parallel: each rank's B rows see only their part of dL/d(x A^T), so A's gradient is summed.
  const auto a_weight = tp.active() ? parallel::copy_to_tp_region(a->weight, tp.comm) : a->weight;
  // PEFT's Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling (no dropout here).
  return y + F::linear(F::linear(x, a_weight), b->weight) * state->spec.scale();
}

torch::Tensor lora_row_parallel_linear(torch::nn::Linear& proj, const torch::Tensor& x_shard, const LoraState* state,
                                       const TensorParallelGroup& tp, bool scatter_sequence) {
  if (!tp.active()) return lora_linear(proj, x_shard, state);
  auto* a = child_linear(proj, "lora_A");
  if (state == nullptr || !state->side_path() || a == nullptr) {
    return scatter_sequence ? parallel::row_parallel_linear_to_sequence_chunks(x_shard, proj->weight, proj->bias,
                                                                               /*seq_dim=*/1, tp.comm)
                            : parallel::row_parallel_linear(x_shard, proj->weight, proj->bias, tp.comm);
  }
  auto* b = child_linear(proj, "lora_B");
  namespace F = torch::nn::functional;
  // sum_r s (x_r A_r^T) B^T = s (x A^T) B^T: the side path rides in the base's all-reduce. B multiplies a partial
  // sum on each rank, so its gradient is summed over the group.
  const auto side = F::linear(F::linear(x_shard, a->weight), parallel::copy_to_tp_region(b->weight, tp.comm));
  const auto partial = F::linear(x_shard, proj->weight) + side * state->spec.scale();
  if (scatter_sequence) {
    // Each rank adds the bias to its own tokens only: its gradient is summed over the group.
    const auto y = parallel::reduce_scatter_to_sequence_parallel_region(partial, /*dim=*/1, tp.comm);
    return proj->bias.defined() ? y + parallel::copy_to_tp_region(proj->bias, tp.comm) : y;
  }
  auto y = parallel::reduce_from_tp_region(partial, tp.comm);
  return proj->bias.defined() ? y + proj->bias : y;
}

torch::Tensor tensor_parallel_part(const CausalLM& model, const std::string& name, const torch::Tensor& whole) {
  const int dim = tensor_parallel_dim(name);
  if (!model->tp.active() || dim < 0 || whole.dim() <= dim || whole.size(dim) % model->tp.size() != 0) return whole;
  return shard_parameter(name, whole, model->tp);
}

std::vector<int64_t> whole_parameter_shape(const CausalLM& model, const std::string& name, const torch::Tensor& part) {
  std::vector<int64_t> shape = part.sizes().vec();
  const int dim = tensor_parallel_dim(name);
  if (dim >= 0) shape.at(dim) *= model->tp.size();
  return shape;
}

bool is_lora_parameter_name(const std::string& name) {
  return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos;
}

namespace {

// A mixture-of-experts model takes adapters on its attention projections only. PEFT adapts the experts and the router
// for all-linear or the MLP names (transformers 5's fused experts through its parameter wrappers), which verl.cpp's
// adapters do not cover, so those targets are an error rather than a different set of adapters.
void check_moe_targets(const CausalLM& model, const LoraSpec& spec) {
  const auto& c = model->config;
  if (!c.moe.enabled) return;
  const std::string moe = hf_class_name(c) + " (a mixture-of-experts model)";
  const std::string use = "; verl.cpp adapts its attention: list q_proj, k_proj, v_proj, o_proj";
  VERL_CHECK(!all_linear(spec), kLoraComponent, "target_modules=all-linear on ", moe,
             " would adapt its experts and router as PEFT does", use);
  static const std::vector<std::string> kMlpNames = {"gate_proj", "up_proj",       "down_proj",          "gate",
                                                     "experts",   "shared_expert", "shared_expert_gate", "mlp"};
  if (spec.target_regex) {
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const std::string prefix = "model.layers." + std::to_string(i) + ".mlp";
      for (const std::string name : {prefix, prefix + ".gate", prefix + ".gate_proj", prefix + ".up_proj",
                                     prefix + ".down_proj", prefix + ".experts", prefix + ".experts.0.gate_proj"}) {
        VERL_CHECK(!matches(name, spec.target_modules, true), kLoraComponent, "target_modules '",
                   spec.target_modules.at(0), "' matches '", name, "' of ", moe, use);
      }
    }
    return;
  }
  for (const auto& t : spec.target_modules) {
    const std::string last = t.substr(t.rfind('.') + 1);
    VERL_CHECK(std::find(kMlpNames.begin(), kMlpNames.end(), last) == kMlpNames.end(), kLoraComponent,
               "target_modules entry '", t, "' names an MLP module of ", moe, use);
  }
}

}  // namespace

std::vector<std::string> lora_target_names(CausalLM& model, const LoraSpec& spec) {
  check_moe_targets(model, spec);
  const auto all = projections(model);
  const bool everything = all_linear(spec);
  if (!everything && !spec.target_regex) {
    for (const auto& t : spec.target_modules) {
      bool found = false;
      for (const auto& p : all) found = found || matches(p.name, {t}, false);
      VERL_CHECK(found, kLoraComponent, "target_modules entry '", t,
                 "' matches no projection of the decoder layers; "
                 "expected all-linear or names among q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    }
  }
  std::vector<std::string> out;
  for (const auto& p : all) {
    if (!everything && !matches(p.name, spec.target_modules, spec.target_regex)) continue;
    if (!spec.exclude_modules.empty() && matches(p.name, spec.exclude_modules, spec.exclude_regex)) continue;
    out.push_back(p.name);
  }
  VERL_CHECK(!out.empty(), kLoraComponent,
             "target_modules / exclude_modules select no projection of the decoder layers");
  return out;
}

std::shared_ptr<LoraState> add_lora(CausalLM& model, const LoraSpec& spec, uint64_t seed) {
  VERL_CHECK(spec.rank >= 1, kLoraComponent, "lora_rank must be >= 1 to add adapters, got ", spec.rank);
  VERL_CHECK(!lora_state(model), kLoraComponent, "the model already has LoRA adapters");
  const auto names = lora_target_names(model, spec);
  const std::set<std::string> targets(names.begin(), names.end());
  for (auto& p : model->parameters()) p.set_requires_grad(false);
  auto gen = at::detail::createCPUGenerator(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : projections(model)) {
    if (!targets.count(p.name)) continue;
    const auto& w = p.linear->weight;  // (out, in), this rank's slice under tensor parallelism
    const int64_t out_features = w.size(0), in_features = w.size(1);
    auto a = torch::nn::Linear(torch::nn::LinearOptions(in_features, spec.rank).bias(false));
    auto b = torch::nn::Linear(torch::nn::LinearOptions(spec.rank, out_features).bias(false));
    // The whole model's A, drawn in the same order as without tensor parallelism, then this rank's columns.
    const std::string a_name = p.name + ".lora_A.weight";
    const int64_t whole_in = whole_parameter_shape(model, a_name, a->weight).at(1);
    // kaiming_uniform_(a=sqrt(5)): gain sqrt(2 / (1 + 5)), bound gain * sqrt(3 / fan_in) = 1 / sqrt(in).
    const double bound = 1.0 / std::sqrt(static_cast<double>(whole_in));
    const auto whole_a = torch::empty({spec.rank, whole_in}, torch::kFloat32).uniform_(-bound, bound, gen);
    a->weight.copy_(tensor_parallel_part(model, a_name, whole_a));
    b->weight.zero_();
    a->to(w.device(), w.scalar_type());
    b->to(w.device(), w.scalar_type());
    p.linear->register_module("lora_A", a);
    p.linear->register_module("lora_B", b);
  }
  auto state = std::make_shared<LoraState>();
  state->spec = spec;
  for_each_module_state(model, state);
  return state;
}

std::shared_ptr<LoraState> lora_state(const CausalLM& model) {
  for (const auto& layer : model->model->layer_list) {
    if (layer->self_attn->lora) return layer->self_attn->lora;
    if (layer->mlp && layer->mlp->lora) return layer->mlp->lora;
  }
  return nullptr;
}

NamedTensors lora_named_parameters(const CausalLM& model) {
  NamedTensors out;
  for (const auto& item : model->named_parameters()) {
    if (is_lora_parameter_name(item.key())) out.emplace_back(item.key(), item.value());
  }
  return out;
}

std::vector<torch::Tensor> lora_parameters(const CausalLM& model) {
  std::vector<torch::Tensor> out;
  for (auto& [name, t] : lora_named_parameters(model)) out.push_back(t);
  return out;
}

NamedTensors lora_full_state(const CausalLM& model) {
  NamedTensors out;
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : lora_named_parameters(model)) {
    out.emplace_back(name, gather_parameter(name, t.detach(), model->tp));
  }
  return out;
}

AdapterDisabled::AdapterDisabled(const CausalLM& model) : state_(lora_state(model)) {
  if (state_) {
    was_enabled_ = state_->enabled;
    state_->enabled = false;
  }
}
AdapterDisabled::~AdapterDisabled() {
  if (state_) state_->enabled = was_enabled_;
}

MergedAdapter::MergedAdapter(const CausalLM& model) : state_(lora_state(model)) {
  if (!state_ || state_->merged || !state_->enabled) {
    state_ = nullptr;  // nothing to merge (or already merged / disabled): leave the weights alone
    return;
  }
  torch::NoGradGuard no_grad;
  const double scale = state_->spec.scale();
  for (auto& p : projections(model)) {
    auto* a = child_linear(p.linear, "lora_A");
    if (a == nullptr) continue;
    auto* b = child_linear(p.linear, "lora_B");
    auto& w = p.linear->weight;
    torch::Tensor original = w.detach();  // shares the storage; set_data below leaves it alone
    // PEFT's merge: W + (B @ A) * scaling.
    torch::Tensor merged = original + torch::matmul(b->weight, a->weight) * scale;
    w.set_data(merged);
    originals_.emplace_back(w, original);
  }
  state_->merged = true;
}

MergedAdapter::~MergedAdapter() {
  if (!state_) return;
  torch::NoGradGuard no_grad;
  for (auto& [param, original] : originals_) param.set_data(original);
  state_->merged = false;
}

void merge_and_unload(CausalLM& model) {
  auto state = lora_state(model);
  VERL_CHECK(state, kLoraComponent, "merge_and_unload on a model without LoRA adapters");
  VERL_CHECK(!state->merged, kLoraComponent, "merge_and_unload inside a MergedAdapter scope");
  torch::NoGradGuard no_grad;
  const double scale = state->spec.scale();
  for (auto& p : projections(model)) {
    auto* a = child_linear(p.linear, "lora_A");
    if (a == nullptr) continue;
    auto* b = child_linear(p.linear, "lora_B");
    p.linear->weight.add_(torch::matmul(b->weight, a->weight) * scale);
    p.linear->unregister_module("lora_A");
    p.linear->unregister_module("lora_B");
  }
  for_each_module_state(model, nullptr);
}

void save_peft_adapter(const CausalLM& model, const std::string& dir, const std::string& base_model_name_or_path) {
  auto state = lora_state(model);
  VERL_CHECK(state, kLoraComponent, "save_peft_adapter on a model without LoRA adapters");
  VERL_CHECK(!model->tp.active(), kLoraComponent,
             "save_peft_adapter on tensor-parallel slices: gather lora_full_state on "
             "every rank and save that");
  save_peft_adapter(lora_full_state(model), state->spec, dir, base_model_name_or_path);
}

void save_peft_adapter(const NamedTensors& whole_adapters, const LoraSpec& spec, const std::string& dir,
                       const std::string& base_model_name_or_path) {
  VERL_CHECK(!whole_adapters.empty(), kLoraComponent, "save_peft_adapter with no adapter tensors");
  fs::create_directories(dir);
  NamedTensors tensors;
  std::set<std::string> leaves;
  for (auto& [name, t] : whole_adapters) {
    tensors.emplace_back(kPeftPrefix + name, t.detach());
    // name = ...q_proj.lora_A.weight: the projection's leaf name.
    const std::string module = name.substr(0, name.find(".lora_"));
    leaves.insert(leaf(module));
  }
  save_tensors((fs::path(dir) / kAdapterWeights).string(), tensors, {{"format", "pt"}});
  Json config;
  config["peft_type"] = "LORA";
  config["task_type"] = "CAUSAL_LM";
  config["base_model_name_or_path"] = base_model_name_or_path;
  config["r"] = spec.rank;
  config["lora_alpha"] = spec.alpha;
  // PEFT saves the resolved module names (a set) for a list or all-linear, the pattern for a regex.
  config["target_modules"] = spec.target_regex ? Json(spec.target_modules[0]) : Json(std::vector<std::string>(leaves.begin(), leaves.end()));
  if (spec.exclude_modules.empty()) {
    config["exclude_modules"] = nullptr;
  } else {
    config["exclude_modules"] = spec.exclude_regex ? Json(spec.exclude_modules[0]) : Json(spec.exclude_modules);
  }
  config["lora_dropout"] = 0.0;
  config["bias"] = "none";
  config["fan_in_fan_out"] = false;
  config["use_rslora"] = spec.use_rslora;
  config["use_dora"] = false;
  config["init_lora_weights"] = true;
  config["inference_mode"] = true;
  config["modules_to_save"] = nullptr;
  config["layers_to_transform"] = nullptr;
  config["layers_pattern"] = nullptr;
  config["rank_pattern"] = Json::object();
  config["alpha_pattern"] = Json::object();
  config["revision"] = nullptr;
  write_file_atomic((fs::path(dir) / kAdapterConfig).string(), config.dump(2) + "\n");
}

LoraSpec read_peft_adapter_config(const std::string& dir, PeftTask task) {
  const std::string file = (fs::path(dir) / kAdapterConfig).string();
  VERL_CHECK(fs::exists(file), kLoraComponent, "LoRA adapter folder '", dir, "' has no ", kAdapterConfig,
             " (expected PEFT's adapter_config.json + adapter_model.safetensors)");
  const Json c = read_json_file(file);
  VERL_CHECK(c.is_object(), kLoraComponent, "'", file, "' must hold a JSON object");
  VERL_CHECK(c.value("peft_type", std::string()) == "LORA", kLoraComponent, "'", file,
             "': peft_type must be LORA, got ",
             c.contains("peft_type") ? c["peft_type"].dump() : std::string("nothing"));
  const bool token_cls = task == PeftTask::TokenClassification;
  const std::string want_task = token_cls ? "TOKEN_CLS" : "CAUSAL_LM";
  if (c.contains("task_type") && !c["task_type"].is_null()) {
    const auto found = c["task_type"].get<std::string>();
    VERL_CHECK(found == want_task, kLoraComponent, "'", file, "': task_type ", found,
               " is not implemented here; expected ", want_task,
               token_cls ? " (a critic's adapter: PEFT's token classification, as verl's critic)" : "");
  }
  if (token_cls) {
    // PEFT's TOKEN_CLS adds [classifier, score] to modules_to_save; this model's value head is `score`.
    const Json& m = c.contains("modules_to_save") ? c["modules_to_save"] : Json();
    bool has_score = false, only_heads = m.is_array();
    for (const auto& item : m.is_array() ? m : Json::array()) {
      has_score = has_score || item == "score";
      only_heads = only_heads && (item == "score" || item == "classifier");
    }
    VERL_CHECK(has_score && only_heads, kLoraComponent, "'", file, "': modules_to_save=", m.dump(),
               " is not implemented; expected [\"classifier\", \"score\"] (PEFT's TOKEN_CLS value head)");
  }
  VERL_CHECK(c.contains("r") && c["r"].is_number_integer() && c["r"].get<int64_t>() >= 1, kLoraComponent, "'", file,
             "': r must be an integer >= 1");
  VERL_CHECK(c.contains("lora_alpha") && c["lora_alpha"].is_number(), kLoraComponent, "'", file,
             "': lora_alpha must be a number");
  LoraSpec spec;
  spec.rank = c["r"].get<int64_t>();
  spec.alpha = c["lora_alpha"].get<double>();
  spec.target_regex = read_modules(c, "target_modules", file, spec.target_modules);
  VERL_CHECK(!spec.target_modules.empty(), kLoraComponent, "'", file, "': target_modules is missing");
  spec.exclude_regex = read_modules(c, "exclude_modules", file, spec.exclude_modules);
  spec.use_rslora = c.value("use_rslora", false);
  // What verl.cpp does not implement: an error naming the key rather than a silently different model.
  auto require = [&](const char* key, bool ok, const char* expected) {
    VERL_CHECK(ok, kLoraComponent, "'", file, "': ", key, "=", c[key].dump(), " is not implemented; expected ",
               expected);
  };
  auto is_empty = [&](const char* key) {
    return !c.contains(key) || c[key].is_null() || (c[key].is_object() && c[key].empty()) ||
           (c[key].is_array() && c[key].empty());
  };
  if (c.contains("use_dora")) require("use_dora", c["use_dora"] == false, "false");
  if (c.contains("bias")) require("bias", c["bias"] == "none", "\"none\"");
  if (c.contains("fan_in_fan_out")) require("fan_in_fan_out", c["fan_in_fan_out"] == false, "false");
  if (c.contains("lora_bias")) require("lora_bias", c["lora_bias"] == false, "false");
  for (const char* key : {"use_qalora", "use_bdlora"}) {
    if (c.contains(key) && !c[key].is_null()) require(key, c[key] == false, "false");
  }
  for (const char* key : {"modules_to_save", "layers_to_transform", "rank_pattern", "alpha_pattern", "layers_pattern",
                          "layer_replication", "target_parameters", "trainable_token_indices",
                          "alora_invocation_tokens"}) {
    if (token_cls && std::string(key) == "modules_to_save") continue;  // checked above
    if (c.contains(key)) require(key, is_empty(key), "null or empty");
  }
  if (c.value("lora_dropout", 0.0) != 0.0) {
    VERL_LOG(Warn, kLoraComponent) << "'" << file << "': lora_dropout " << c["lora_dropout"].get<double>()
                                   << " is not applied (verl.cpp's LoRA has no dropout)";
  }
  return spec;
}

std::string peft_base_model(const std::string& dir) {
  const Json c = read_json_file((fs::path(dir) / kAdapterConfig).string());
  if (!c.contains("base_model_name_or_path") || !c["base_model_name_or_path"].is_string()) return "";
  return c["base_model_name_or_path"].get<std::string>();
}

void load_peft_adapter_weights(CausalLM& model, const std::string& dir) {
  const std::string file = (fs::path(dir) / kAdapterWeights).string();
  VERL_CHECK(fs::exists(file), kLoraComponent, "LoRA adapter folder '", dir, "' has no ", kAdapterWeights);
  std::map<std::string, torch::Tensor> saved;
  const std::string prefix = kPeftPrefix;
  for (auto& [name, t] : load_tensors(file)) {
    VERL_CHECK(name.rfind(prefix, 0) == 0, kLoraComponent, "'", file, "' has tensor '", name,
               "'; expected names like base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
    saved.emplace(name.substr(prefix.size()), t);
  }
  torch::NoGradGuard no_grad;
  const auto params = lora_named_parameters(model);
  std::set<std::string> expected;
  for (const auto& [name, p] : params) {
    expected.insert(name);
    auto it = saved.find(name);
    VERL_CHECK(it != saved.end(), kLoraComponent, "'", file, "' lacks tensor '", prefix, name,
               "' (adapter_config.json's target_modules select it on this model)");
    const auto part = tensor_parallel_part(model, name, it->second);
    const auto expected_shape = whole_parameter_shape(model, name, p);
    VERL_CHECK(part.sizes() == p.sizes(), kLoraComponent, "tensor '", prefix, name, "' in '", file, "' has shape ",
               it->second.sizes(), ", this model expects ", c10::IntArrayRef(expected_shape),
               " (r x in for lora_A, out x r for lora_B): an adapter for another base model or rank?");
    p.copy_(part.to(p.scalar_type()));
  }
  for (const auto& [name, t] : saved) {
    VERL_CHECK(expected.count(name) > 0, kLoraComponent, "'", file, "' has tensor '", prefix, name,
               "' that this model has no adapter for (another base model, or more layers?)");
  }
}

std::shared_ptr<LoraState> load_peft_adapter(CausalLM& model, const std::string& dir, const LoraSpec* expected) {
  LoraSpec spec = read_peft_adapter_config(dir);
  if (expected != nullptr && expected->rank > 0) {
    const std::string file = (fs::path(dir) / kAdapterConfig).string();
    VERL_CHECK(spec.rank == expected->rank, kLoraComponent, "'", file, "' has r=", spec.rank,
               ", the run's lora_rank is ", expected->rank, "; set lora_rank=", spec.rank,
               " to start from this adapter");
    VERL_CHECK(spec.alpha == expected->alpha, kLoraComponent, "'", file, "' has lora_alpha=", spec.alpha,
               ", the run's lora_alpha is ", expected->alpha, "; set lora_alpha=", spec.alpha);
  }
  auto state = add_lora(model, spec, /*seed=*/0);
  load_peft_adapter_weights(model, dir);
  return state;
}

void save_lora_state(const CausalLM& model, const std::string& path) {
  VERL_CHECK(!model->tp.active(), kLoraComponent,
             "save_lora_state on tensor-parallel slices: gather lora_full_state on "
             "every rank and save that");
  VERL_CHECK(lora_state(model), kLoraComponent, "save_lora_state on a model without LoRA adapters");
  save_lora_state(lora_full_state(model), path);
}

void save_lora_state(const NamedTensors& whole_adapters, const std::string& path) {
  VERL_CHECK(!whole_adapters.empty(), kLoraComponent, "save_lora_state with no adapter tensors");
  save_tensors(path, whole_adapters);
}

void load_lora_state(CausalLM& model, const std::string& path) {
  VERL_CHECK(fs::exists(path), kLoraComponent, "adapter state file '", path, "' does not exist");
  std::map<std::string, torch::Tensor> saved;
  for (auto& [name, t] : load_tensors(path)) saved.emplace(name, t);
  torch::NoGradGuard no_grad;
  std::set<std::string> expected;
  for (auto& [name, p] : lora_named_parameters(model)) {
    expected.insert(name);
    auto it = saved.find(name);
    VERL_CHECK(it != saved.end(), kLoraComponent, "adapter state file '", path, "' lacks tensor '", name,
               "' (saved without LoRA, or with other target_modules?)");
    const auto part = tensor_parallel_part(model, name, it->second);
    const auto expected_shape = whole_parameter_shape(model, name, p);
    VERL_CHECK(part.sizes() == p.sizes(), kLoraComponent, "tensor '", name, "' in '", path, "' has shape ",
               it->second.sizes(), ", the model expects ", c10::IntArrayRef(expected_shape), " (another lora_rank?)");
    p.copy_(part.to(p.scalar_type()));
  }
  for (const auto& [name, t] : saved) {
    VERL_CHECK(expected.count(name) > 0, kLoraComponent, "adapter state file '", path, "' has tensor '", name,
               "' that the model has no adapter for (saved with other target_modules, or a full model state)");
  }
}

}  // namespace verl::model
