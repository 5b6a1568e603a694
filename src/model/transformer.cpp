#include "verl/model/transformer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "verl/common/error.h"
#include "verl/model/decode_attention.h"
#include "verl/model/decode_kernels.h"
#include "verl/model/fused_log_probs.h"
#include "verl/model/gradient_checkpointing.h"
#include "verl/model/lora.h"
#include "verl/model/mixed_precision.h"
#include "verl/model/used_columns.h"
#include "verl/parallel/context_parallel.h"
#include "verl/parallel/tensor_parallel.h"
#include "verl/parallel/ulysses.h"

namespace verl::model {
namespace {

constexpr const char* kTransformerComponent = "model";

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

}  // namespace

void KVCache::select_rows(const torch::Tensor& index) {
  for (auto& t : k) t = t.index_select(0, index);
  for (auto& t : v) t = t.index_select(0, index);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_) : eps(eps_) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat32);
  auto variance = xf.pow(2).mean(-1, /*keepdim=*/true);
  xf = xf * torch::rsqrt(variance + eps);
  auto w = partial_gradient_group ? parallel::copy_to_tp_region(weight, partial_gradient_group) : weight;
  return w * xf.to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const HFConfig& c, TensorParallelGroup tp_)
    : num_heads(c.num_attention_heads / tp_.size()),
      num_kv_heads(c.num_key_value_heads / tp_.size()),
      head_dim(c.head_dim),
      tp(std::move(tp_)) {
  scaling = 1.0 / std::sqrt(static_cast<double>(head_dim));
  q_proj = register_module("q_proj", make_linear(c.hidden_size, num_heads * head_dim, c.qkv_bias()));
  k_proj = register_module("k_proj", make_linear(c.hidden_size, num_kv_heads * head_dim, c.qkv_bias()));
  v_proj = register_module("v_proj", make_linear(c.hidden_size, num_kv_heads * head_dim, c.qkv_bias()));
  o_proj = register_module("o_proj", make_linear(num_heads * head_dim, c.hidden_size, c.o_bias()));
  if (c.qk_norm()) {
    q_norm = register_module("q_norm", RMSNorm(head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", RMSNorm(head_dim, c.rms_norm_eps));
    if (tp.active()) q_norm->partial_gradient_group = k_norm->partial_gradient_group = tp.comm;
  }
}

namespace {
// Whether this forward's hidden states are chunks of the tokens (Megatron's sequence parallelism): never with a cache.
bool sequence_chunks(const TensorParallelGroup& tp, const KVCache* cache) {
  return tp.scatter_sequence && tp.active() && cache == nullptr;
}
// The input of a column-parallel projection: the same on every rank; its gradient is summed over the group. Under
// sequence parallelism (`chunks`) every rank's chunk of x gathered (the gradient reduce-scattered back), cut to
// `length` tokens when given (attention; the MLP runs on the chunks' padding too, which its output drops).
torch::Tensor column_input(const torch::Tensor& x, const TensorParallelGroup& tp, bool chunks = false,
                           int64_t length = -1) {
  if (chunks) {
    const auto whole = parallel::gather_from_sequence_parallel_region(x, /*dim=*/1, tp.comm, /*sum_gradient=*/true);
    return length >= 0 ? whole.narrow(1, 0, length) : whole;
  }
  return tp.active() ? parallel::copy_to_tp_region(x, tp.comm) : x;
}
// A row-parallel projection (o, down): this rank's partial product (with its LoRA side path, model/lora.h),
// summed over the group, bias added once; under sequence parallelism (`chunks`) this rank's chunk of the sum.
torch::Tensor row_output(torch::nn::Linear& proj, const torch::Tensor& x_shard, const TensorParallelGroup& tp,
                         const LoraState* lora, bool chunks = false) {
  return lora_row_parallel_linear(proj, x_shard, lora, tp, chunks);
}
}  // namespace

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                     const torch::Tensor& mask_bias, KVCache* cache, int64_t layer,
                                     const torch::Tensor& packed) {
  if (packed.defined()) {
    VERL_ASSERT(cache == nullptr && !sequence_parallel.active(), kTransformerComponent,
                "a packed attention runs without a cache and without Ulysses");
    return forward_packed(x, cos, sin, mask_bias, packed);
  }
  // Under Megatron's sequence parallelism x is this rank's chunk of the tokens: gathered to cos's T_local.
  const bool chunks = sequence_chunks(tp, cache);
  const auto xin = column_input(x, tp, chunks, cos.size(1));
  const int64_t B = xin.size(0), T_local = xin.size(1);
  auto q = lora_linear(q_proj, xin, lora.get(), tp).view({B, T_local, num_heads, head_dim});
  auto k = lora_linear(k_proj, xin, lora.get(), tp).view({B, T_local, num_kv_heads, head_dim});
  auto v = lora_linear(v_proj, xin, lora.get(), tp).view({B, T_local, num_kv_heads, head_dim}).transpose(1, 2);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  q = q.transpose(1, 2);  // [B,H,T,D]
  k = k.transpose(1, 2);  // [B,Hkv,T,D]
  auto c = cos.unsqueeze(1), s = sin.unsqueeze(1);
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;
  const bool split_sequence = sequence_parallel.active() && cache == nullptr;
  const bool ulysses = split_sequence && sequence_parallel.split == SequenceSplit::Ulysses;
  if (split_sequence && !ulysses) {
    // Context parallelism: every rank's keys and values (rotated at their own positions); this rank's queries attend
    // over them under its rows of the mask (the decoder built only those).
    k = parallel::gather_context(k, /*dim=*/2, sequence_parallel.comm);
    v = parallel::gather_context(v, 2, sequence_parallel.comm);
  }
  // Ulysses: rotary applied on this rank's positions, then the whole sequence for 1/sp of the heads.
  int64_t heads = num_heads, kv_heads = num_kv_heads;
  if (ulysses) {
    const int64_t sp = sequence_parallel.size();
    if (kv_heads % sp != 0) {
      // Fewer KV heads than ranks (set_sequence_parallel checked sp % kv_heads == 0): each rank needs the KV head
      // of its query heads, so every KV head is repeated sp / kv_heads times (verl's repeat_kv); its gradient sums.
      k = k.repeat_interleave(sp / kv_heads, 1);
      v = v.repeat_interleave(sp / kv_heads, 1);
      kv_heads = sp;
    }
    q = parallel::gather_seq_scatter_heads(q, /*seq_dim=*/2, /*head_dim=*/1, sequence_parallel.comm);
    k = parallel::gather_seq_scatter_heads(k, 2, 1, sequence_parallel.comm);
    v = parallel::gather_seq_scatter_heads(v, 2, 1, sequence_parallel.comm);
    heads /= sp;
    kv_heads /= sp;
  }
  const int64_t T = q.size(2);
  const int64_t groups = heads / kv_heads;
  // attended [B, heads, T, D] back to this rank's positions of every head, then o_proj.
  auto output = [&](const torch::Tensor& attended) {
    auto out = ulysses ? parallel::gather_heads_scatter_seq(attended, /*head_dim=*/1, /*seq_dim=*/2,
                                                            sequence_parallel.comm)
                       : attended;
    return row_output(o_proj, out.transpose(1, 2).reshape({B, T_local, num_heads * head_dim}), tp, lora.get(), chunks);
  };
  torch::Tensor keys = k, vals = v;
  if (cache != nullptr && cache->write_index.defined()) {
    // The static decode step: write at a position held on the device, attend over the whole (masked) cache.
    cache->k[layer].index_copy_(2, cache->write_index, k);
    cache->v[layer].index_copy_(2, cache->write_index, v);
    keys = cache->k[layer];
    vals = cache->v[layer];
  } else if (cache != nullptr) {
    const int64_t start = cache->length;
    VERL_ASSERT(start + T <= cache->capacity, kTransformerComponent, "KV cache overflow");
    cache->k[layer].narrow(2, start, T).copy_(k);
    cache->v[layer].narrow(2, start, T).copy_(v);
    keys = cache->k[layer].narrow(2, 0, start + T);
    vals = cache->v[layer].narrow(2, 0, start + T);
  }
  // Grouped heads without repeating K/V: head h uses kv head h / groups.
  auto qg = q.reshape({B, kv_heads, groups * T, head_dim});
  if (T == 1 && cache != nullptr && !cache->write_index.defined() && decode_attention_applies(qg, keys)) {
    // The decode step: one fused pass per (row, kv head) instead of LibTorch's serial loop of tiny GEMMs.
    auto out = decode_attention(qg, keys, vals, mask_bias, scaling);  // [B,Hkv,g,D]
    return row_output(o_proj, out.reshape({B, 1, num_heads * head_dim}), tp, lora.get());
  }
  return output(attend(q, keys, vals, mask_bias));
}

torch::Tensor AttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
                                    const torch::Tensor& mask_bias) const {
  const int64_t B = q.size(0), heads = q.size(1), T = q.size(2), kv_heads = keys.size(1), S = keys.size(2);
  const int64_t groups = heads / kv_heads;
  // fp64 (a reference dtype of the tests) stays eager: LibTorch 2.11's CPU SDPA backward gives fp64 gradients
  // only to ~3e-8 relative (measured on Qwen3 head size 16), fp32's precision, not fp64's.
  if (kernel == AttentionKernel::Sdpa && q.scalar_type() != torch::kFloat64) {
    // The same additive mask as the eager path, so fully masked rows (left padding) come out the same.
    return at::scaled_dot_product_attention(q, keys, vals, mask_bias.view({B, 1, T, S}), /*dropout_p=*/0.0,
                                            /*is_causal=*/false, scaling, /*enable_gqa=*/groups > 1);
  }
  auto qg = q.reshape({B, kv_heads, groups * T, head_dim});
  auto scores = torch::matmul(qg, keys.transpose(2, 3)) * scaling;  // [B,Hkv,g*T,S]
  scores = scores.view({B, kv_heads, groups, T, S}) + mask_bias;
  // Softmax in at least fp32 (HF upcasts half precision); fp64 stays fp64, where the fp64 mask minimum would
  // become -inf in fp32 and a fully masked (left-padding) row NaN.
  const auto softmax_dtype = q.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  auto probs = torch::softmax(scores, -1, softmax_dtype).to(q.scalar_type());
  auto out = torch::matmul(probs.view({B, kv_heads, groups * T, S}), vals);  // [B,Hkv,g*T,D]
  return out.view({B, heads, T, head_dim});
}

torch::Tensor AttentionImpl::forward_packed(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                            const torch::Tensor& mask_bias, const torch::Tensor& packed) {
  const bool chunks = sequence_chunks(tp, nullptr);
  const auto xin = column_input(x, tp, chunks, cos.size(1));  // the whole N tokens under sequence parallelism
  const int64_t N = xin.size(1), B = mask_bias.size(0), T = mask_bias.size(3);
  VERL_ASSERT(xin.size(0) == 1 && packed.size(0) == N, kTransformerComponent, "packed attention: x ", xin.sizes(),
              " for ", packed.size(0), " packed positions");
  auto q = lora_linear(q_proj, xin, lora.get(), tp).view({N, num_heads, head_dim});
  auto k = lora_linear(k_proj, xin, lora.get(), tp).view({N, num_kv_heads, head_dim});
  auto v = lora_linear(v_proj, xin, lora.get(), tp).view({N, num_kv_heads, head_dim});
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  const auto c = cos.view({N, 1, head_dim}), s = sin.view({N, 1, head_dim});
  q = q * c + rotate_half(q) * s;
  k = k * c + rotate_half(k) * s;
  // Each row's tokens back at their columns for one masked attention call (the padding slots hold zeros, which
  // the mask keeps out of every real token's attention); only the real tokens' outputs are gathered.
  const PackedTokens tokens{B, T, packed};
  const auto padded = [&](const torch::Tensor& t) { return tokens.unpack(t).transpose(1, 2); };  // [B,heads,T,D]
  const auto attended = attend(padded(q), padded(k), padded(v), mask_bias);
  const auto out = tokens.pack(attended.transpose(1, 2));  // [N,heads,D]
  return row_output(o_proj, out.reshape({1, N, num_heads * head_dim}), tp, lora.get(), chunks);
}

MLPImpl::MLPImpl(const HFConfig& c, TensorParallelGroup tp_, int64_t intermediate_size) : tp(std::move(tp_)) {
  const bool bias = c.arch == Arch::Llama && c.mlp_bias;
  const int64_t intermediate = (intermediate_size > 0 ? intermediate_size : c.intermediate_size) / tp.size();
  gate_proj = register_module("gate_proj", make_linear(c.hidden_size, intermediate, bias));
  up_proj = register_module("up_proj", make_linear(c.hidden_size, intermediate, bias));
  down_proj = register_module("down_proj", make_linear(intermediate, c.hidden_size, bias));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x, bool sequence_chunks) {
  const bool chunks = sequence_chunks && tp.active();
  const auto xin = column_input(x, tp, chunks);
  const auto* l = lora.get();
  const auto act = torch::silu(lora_linear(gate_proj, xin, l, tp)) * lora_linear(up_proj, xin, l, tp);
  return row_output(down_proj, act, tp, l, chunks);
}

SparseMoeBlockImpl::SparseMoeBlockImpl(const HFConfig& c, TensorParallelGroup tp)
    : top_k(c.moe.num_experts_per_tok), norm_topk_prob(c.moe.norm_topk_prob) {
  gate = register_module("gate", make_linear(c.hidden_size, c.moe.num_experts, false));
  experts = register_module("experts", torch::nn::ModuleList());
  for (int64_t e = 0; e < c.moe.num_experts; ++e) {
    expert_list.push_back(MLP(c, tp, c.moe.moe_intermediate_size));
    experts->push_back(expert_list.back());
  }
  if (c.moe.shared_expert_intermediate_size > 0) {
    shared_expert = register_module("shared_expert", MLP(c, tp, c.moe.shared_expert_intermediate_size));
    shared_expert_gate = register_module("shared_expert_gate", make_linear(c.hidden_size, 1, false));
  }
}

torch::Tensor SparseMoeBlockImpl::forward(const torch::Tensor& x) {
  const int64_t H = x.size(-1);
  const auto tokens = x.reshape({-1, H});
  const int64_t E = static_cast<int64_t>(expert_list.size());
  const auto probs = torch::softmax(gate->forward(tokens), 1, torch::kFloat32);
  auto [weights, chosen] = torch::topk(probs, top_k, -1);
  if (norm_topk_prob) weights = weights / weights.sum(-1, true);
  weights = weights.to(tokens.scalar_type()).reshape({-1});  // [N * k], entry t * k + slot
  // The (token, slot) entries grouped by expert: one pass of each expert over its tokens (a token picks an expert
  // at most once), the experts' outputs added in expert order as transformers' loop adds them.
  const auto flat_choice = chosen.reshape({-1});
  const auto order = std::get<1>(torch::sort(flat_choice, /*stable=*/true, 0, false));
  const auto counts = torch::bincount(flat_choice, {}, E).cpu();
  const auto* count = counts.data_ptr<int64_t>();
  auto out = torch::zeros_like(tokens);
  int64_t start = 0;
  for (int64_t e = 0; e < E; ++e) {
    if (count[e] == 0) continue;
    const auto entries = order.narrow(0, start, count[e]);
    start += count[e];
    const auto token = torch::div(entries, top_k, "floor");
    const auto routed = expert_list[static_cast<size_t>(e)]->forward(tokens.index_select(0, token));
    out = out.index_add(0, token, routed * weights.index_select(0, entries).unsqueeze(1));
  }
  if (shared_expert) {
    out = out + torch::sigmoid(shared_expert_gate->forward(tokens)) * shared_expert->forward(tokens);
  }
  return out.view(x.sizes());
}

DecoderLayerImpl::DecoderLayerImpl(const HFConfig& c, TensorParallelGroup tp, int64_t layer) {
  self_attn = register_module("self_attn", Attention(c, tp));
  if (c.layer_is_sparse(layer)) {
    sparse_mlp = register_module("mlp", SparseMoeBlock(c, tp));
  } else {
    mlp = register_module("mlp", MLP(c, tp));
  }
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.rms_norm_eps));
  if (sequence_chunks(tp, nullptr))
    input_layernorm->partial_gradient_group = post_attention_layernorm->partial_gradient_group = tp.comm;
}

namespace {

SkinnyProjection projection(const torch::nn::Linear& linear) { return {linear->weight, linear->bias}; }

// Whether a decode step (one new token per row, a KV cache) can run on the fused kernels of
// model/decode_kernels.h: fp32 on an AVX2 + FMA CPU, no gradients, no tensor parallelism (whose row-parallel
// projections reduce over the group), every width a multiple of 8, no LoRA side path (a rollout merges its
// adapters into the weights first, model/lora.h).
bool fused_decode_applies(const DecoderLayerImpl& layer, const torch::Tensor& x, const KVCache* cache) {
  const auto& attn = *layer.self_attn;
  if (!layer.mlp) return false;  // experts: routed per token, on the general path
  if ((attn.lora && attn.lora->side_path()) || (layer.mlp->lora && layer.mlp->lora->side_path())) return false;
  // The static step (cache->write_index) writes where the device says; the fused kernels write at cache->length.
  return cache != nullptr && !cache->write_index.defined() && x.dim() == 3 && x.size(1) == 1 && decode_kernels_apply(x) &&
         !attn.tp.active() &&
         attn.head_dim % 8 == 0 && layer.mlp->gate_proj->weight.size(0) % 8 == 0 &&
         attn.q_proj->weight.scalar_type() == torch::kFloat32 && cache->k[0].scalar_type() == torch::kFloat32 &&
         cache->k[0].is_contiguous() && cache->v[0].is_contiguous();
}

// The decoder layer's math for one token per row, on the decode kernels: the same operations as the general
// path (norm, q/k/v, rotary, cache write, attention, o + skip, norm, gate/up, SiLU, down + skip) in fewer
// passes over [B, hidden] tensors.
torch::Tensor fused_decode_layer(DecoderLayerImpl& layer, const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const torch::Tensor& mask_bias, KVCache& cache,
                                 int64_t index) {
  auto& attn = *layer.self_attn;
  const int64_t B = x.size(0), H = x.size(2), D = attn.head_dim;
  const int64_t Hq = attn.num_heads, Hkv = attn.num_kv_heads;
  const auto x2 = x.reshape({B, H});
  auto qkv = skinny_linear(x2, {layer.input_layernorm->weight, layer.input_layernorm->eps},
                           {projection(attn.q_proj), projection(attn.k_proj), projection(attn.v_proj)});
  auto q = qkv[0], k = qkv[1];
  if (attn.q_norm) {
    q = rms_norm_rows(q.view({B * Hq, D}), attn.q_norm->weight, attn.q_norm->eps).view({B, Hq * D});
    k = rms_norm_rows(k.view({B * Hkv, D}), attn.k_norm->weight, attn.k_norm->eps).view({B, Hkv * D});
  }
  VERL_ASSERT(cache.length + 1 <= cache.capacity, kTransformerComponent, "KV cache overflow");
  const auto attended = decode_attention_step(q, k, qkv[2], cos, sin, cache.k[index], cache.v[index], cache.length,
                                              mask_bias, attn.scaling);  // [B, Hq*D]
  const auto h = skinny_linear(attended, projection(attn.o_proj), x2);
  auto& mlp = *layer.mlp;
  const auto act = skinny_glu(h, projection(mlp.gate_proj), projection(mlp.up_proj),
                              {layer.post_attention_layernorm->weight, layer.post_attention_layernorm->eps});
  return skinny_linear(act, projection(mlp.down_proj), h).view({B, 1, H});
}

// The weights of a decoder layer's projections, in the order fused_decode_layer multiplies by them.
std::vector<torch::Tensor> projection_weights(const DecoderLayerImpl& layer) {
  const auto& attn = *layer.self_attn;
  if (!layer.mlp) return {attn.q_proj->weight, attn.k_proj->weight, attn.v_proj->weight, attn.o_proj->weight};
  const auto& mlp = *layer.mlp;
  return {attn.q_proj->weight,  attn.k_proj->weight, attn.v_proj->weight, attn.o_proj->weight,
          mlp.gate_proj->weight, mlp.up_proj->weight, mlp.down_proj->weight};
}

}  // namespace

std::vector<torch::Tensor> fused_decode_weights(CausalLM& model, const KVCache& cache) {
  if (model->head != HeadKind::LM || model->tp.active() || cache.k.empty()) return {};
  // A decode step's input: [rows, 1, hidden] in the model's dtype, on its device, under the caller's grad mode.
  const auto probe = torch::zeros({1, 1, model->config.hidden_size}, model->model->embed_tokens->weight.options());
  std::vector<torch::Tensor> weights;
  for (const auto& layer : model->model->layer_list) {
    if (!fused_decode_applies(*layer, probe, &cache)) return {};
    for (auto& w : projection_weights(*layer)) weights.push_back(w);
  }
  // The LM head (decode_step_logits runs it on skinny_linear), the input embedding when tied to it.
  weights.push_back(model->lm_head ? model->lm_head->weight : model->model->embed_tokens->weight);
  return weights;
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const torch::Tensor& mask_bias, KVCache* cache, int64_t layer,
                                        const torch::Tensor& packed) {
  if (fused_decode_applies(*this, x, cache)) {
    return fused_decode_layer(*this, x, cos, sin, mask_bias, *cache, layer);
  }
  for (const auto& w : projection_weights(*this)) {
    VERL_ASSERT(!packed_for_decode(w), kTransformerComponent, "layer ", layer,
                ": the general forward would read weights packed "
                "for the decode step (a prefill or unfused step inside a DecodeWeightPacking scope)");
  }
  auto h = x + self_attn->forward(input_layernorm->forward(x), cos, sin, mask_bias, cache, layer, packed);
  const auto normed = post_attention_layernorm->forward(h);
  const auto& tp = self_attn->tp;
  const bool chunks = sequence_chunks(tp, cache);
  if (mlp) return h + mlp->forward(normed, chunks);
  if (!chunks) return h + sparse_mlp->forward(normed);
  // Megatron's sequence parallelism: the router and the experts take every token on every rank (each expert split
  // as a dense MLP), so the chunks are gathered around them; the gathered tokens are used the same on every rank.
  const auto tokens = parallel::gather_from_sequence_parallel_region(normed, /*dim=*/1, tp.comm, /*sum_gradient=*/false)
                          .narrow(1, 0, cos.size(1));
  return h + parallel::scatter_to_sequence_parallel_region(sparse_mlp->forward(tokens), /*dim=*/1, tp.comm);
}

torch::Tensor rope_inv_freq(const HFConfig& c) {
  const int64_t dim = c.head_dim;
  // theta^(2i/dim) in fp32, then its inverse: transformers' operation order, so the frequencies are the same bits.
  const auto pos_freqs = torch::pow(c.rope_theta, torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim);
  auto inv_freq = 1.0 / pos_freqs;
  const auto& rs = c.rope_scaling;
  if (rs.type == RopeScaling::Type::Linear) {
    inv_freq = inv_freq / rs.factor;
  } else if (rs.type == RopeScaling::Type::Llama3) {
    const double old_len = static_cast<double>(rs.original_max_position_embeddings);
    const double low_wavelen = old_len / rs.low_freq_factor;
    const double high_wavelen = old_len / rs.high_freq_factor;
    auto wavelen = 2 * M_PI / inv_freq;
    auto scaled = torch::where(wavelen > low_wavelen, inv_freq / rs.factor, inv_freq);
    auto smooth = (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
    auto smoothed = (1 - smooth) * scaled / rs.factor + smooth * scaled;
    auto medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
    inv_freq = torch::where(medium, smoothed, scaled);
  } else if (rs.type == RopeScaling::Type::Yarn) {
    // The dimension that turns `rotations` times over the original length; dimensions below the beta_fast one keep
    // their frequency (extrapolation), those above the beta_slow one are divided by the factor (interpolation).
    auto correction_dim = [&](double rotations) {
      return static_cast<double>(dim) *
             std::log(static_cast<double>(rs.original_max_position_embeddings) / (rotations * 2 * M_PI)) /
             (2 * std::log(c.rope_theta));
    };
    double low = correction_dim(rs.beta_fast), high = correction_dim(rs.beta_slow);
    if (rs.truncate) low = std::floor(low), high = std::ceil(high);
    low = std::max(low, 0.0), high = std::min(high, static_cast<double>(dim - 1));
    if (low == high) high += 0.001;  // as transformers: no zero-width ramp
    auto ramp = ((torch::arange(dim / 2, torch::kFloat32) - low) / (high - low)).clamp(0, 1);
    auto extrapolation_share = 1 - ramp;
    auto interpolated = 1.0 / (rs.factor * pos_freqs);  // transformers' order again (not inv_freq / factor)
    inv_freq = interpolated * (1 - extrapolation_share) + inv_freq * extrapolation_share;
  }
  return inv_freq.to(torch::kFloat32);
}

double rope_attention_scaling(const HFConfig& c) {
  return c.rope_scaling.type == RopeScaling::Type::Yarn ? c.rope_scaling.attention_factor : 1.0;
}

namespace {

// Rotary cos / sin [.., head_dim] of `positions` [..], computed in fp32 and cast to `dtype` (HF computes them with
// autocast disabled). Moves inv_freq to the positions' device once.
// `scaling` multiplies both in fp32 (yarn's attention factor; 1 otherwise, skipped).
std::pair<torch::Tensor, torch::Tensor> rotary(torch::Tensor& inv_freq, const torch::Tensor& positions,
                                               torch::ScalarType dtype, double scaling) {
  if (inv_freq.device() != positions.device()) inv_freq = inv_freq.to(positions.device());
  auto freqs = positions.to(torch::kFloat32).unsqueeze(-1) * inv_freq.view({1, 1, -1});
  auto emb = torch::cat({freqs, freqs}, -1);
  if (scaling == 1.0) return {emb.cos().to(dtype), emb.sin().to(dtype)};
  return {(emb.cos() * scaling).to(dtype), (emb.sin() * scaling).to(dtype)};
}

// The additive attention masks [B,1,1,T,S] for T new tokens after `past` cached ones (attention_mask [B,S],
// S = past + T, on the model's device), or with query_count > 0 for the T = query_count queries at positions
// [past, past + T) of S (a context-parallel rank's own): `full` the causal + padding mask, for the layers that do not
// slide; `sliding` that mask narrowed to the keys of the last config.sliding_window real tokens of the query's row,
// itself included, for the sliding layers. Each is undefined when no layer uses it. The window counts tokens,
// not columns, so that a multi-turn continuation's cache (agent/continuation_engine.h), whose turns sit apart,
// windows as vLLM does; where a row's tokens are contiguous (any padded batch) it is transformers' column window.
struct AttentionBiases {
  torch::Tensor full, sliding;
};
AttentionBiases attention_biases(const HFConfig& config, const torch::Tensor& attention_mask, int64_t past,
                                 torch::ScalarType dtype, int64_t query_count = 0) {
  const auto device = attention_mask.device();
  const int64_t B = attention_mask.size(0), S = attention_mask.size(1), T = query_count > 0 ? query_count : S - past;
  auto key_pos = torch::arange(S, torch::TensorOptions().dtype(torch::kInt64).device(device));
  auto query_pos = torch::arange(past, past + T, torch::TensorOptions().dtype(torch::kInt64).device(device));
  auto causal = key_pos.view({1, 1, S}) <= query_pos.view({1, T, 1});      // [1,T,S]
  auto allowed = causal.logical_and(attention_mask.view({B, 1, S}) != 0);  // [B,T,S]
  // Masked positions get the most negative value of the dtype attention runs in (autocast's under autocast).
  const double min_value = masked_bias_value(compute_dtype(device, dtype));
  const auto bias = [&](const torch::Tensor& keep) {
    return torch::zeros({B, T, S}, torch::TensorOptions().dtype(dtype).device(device))
        .masked_fill(keep.logical_not(), min_value)
        .view({B, 1, 1, T, S});
  };
  const auto& slides = config.sliding_layers;
  AttentionBiases out;
  if (slides.empty() || std::find(slides.begin(), slides.end(), false) != slides.end()) out.full = bias(allowed);
  if (!slides.empty()) {
    const auto tokens = (attention_mask != 0).cumsum(1);  // [B,S]: the row's real tokens up to each column
    const auto in_window = tokens.view({B, 1, S}) > tokens.narrow(1, past, T).view({B, T, 1}) - config.sliding_window;
    out.sliding = bias(allowed.logical_and(in_window));
  }
  return out;
}

}  // namespace

DecoderImpl::DecoderImpl(const HFConfig& c, TensorParallelGroup tp_, PipelineParallelGroup pp_, bool tied_lm_head)
    : config(c), tp(std::move(tp_)), pp(std::move(pp_)) {
  if (!pp.active()) pp = PipelineParallelGroup{};
  VERL_ASSERT(!pp.active() || (pp.chunk_layers > 0 && pp.chunks >= 1 &&
                               pp.chunk_layers * pp.chunks * pp.links->count() == c.num_hidden_layers),
              kTransformerComponent, "pipeline stages of ", pp.chunks, " runs of ", pp.chunk_layers,
              " layers do not make config.json's ", c.num_hidden_layers);
  if (pp.first() || (pp.last() && tied_lm_head)) {
    embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size / tp.size(), c.hidden_size));
  }
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (!pp.holds(i)) {
      layers->push_back(torch::nn::Identity());  // another stage's layer: keeps the HF index of the ones after it
      continue;
    }
    layer_list.push_back(DecoderLayer(c, tp, i));
    layers->push_back(layer_list.back());
  }
  if (pp.last()) {
    norm = register_module("norm", RMSNorm(c.hidden_size, c.rms_norm_eps));
    if (sequence_chunks(tp, nullptr)) norm->partial_gradient_group = tp.comm;
  }
  inv_freq = rope_inv_freq(c);
}

torch::TensorOptions DecoderImpl::weight_options() const {
  const auto& weight = embed_tokens ? embed_tokens->weight : layer_list.front()->input_layernorm->weight;
  return weight.options();
}

namespace {

// Whether this forward will be backpropagated: the same decision on every stage (grad mode, and the model trains).
bool backpropagated(torch::nn::Module& module) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad()) return true;
  }
  return false;
}

}  // namespace

torch::Tensor DecoderImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                   const torch::Tensor& position_ids, KVCache* cache) {
  VERL_CHECK(input_ids.dim() == 2, kTransformerComponent, "input_ids must be [batch, seq], got ", input_ids.sizes());
  const int64_t B = input_ids.size(0), T = input_ids.size(1);
  const int64_t past = cache ? cache->length : 0;
  const int64_t S = past + T;
  VERL_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == B && attention_mask.size(1) == S,
             kTransformerComponent, "attention_mask must be [", B, ", ", S, "], got ", attention_mask.sizes());
  VERL_CHECK(position_ids.sizes() == input_ids.sizes(), kTransformerComponent, "position_ids must match input_ids ",
             input_ids.sizes(), ", got ", position_ids.sizes());
  if (cache)
    VERL_CHECK(cache->batch() == B, kTransformerComponent, "KV cache has ", cache->batch(), " rows, batch has ", B);
  const auto device = weight_options().device();
  const auto dtype = weight_options().dtype().toScalarType();
  // A split sequence (Ulysses, context parallelism): this rank embeds its part with the global positions.
  const bool split = sequence_parallel.active() && cache == nullptr;
  const auto ids = split ? parallel::slice_sequence(input_ids, 1, *sequence_parallel.comm) : input_ids;
  const auto positions = split ? parallel::slice_sequence(position_ids, 1, *sequence_parallel.comm) : position_ids;
  VERL_ASSERT(!pp.active() || cache == nullptr, kTransformerComponent,
              "a pipeline stage runs no KV-cache forward (generation runs on the gathered model)");
  // embedding_rows: the table may be packed for the decode step (tied to the LM head). Under Megatron's sequence
  // parallelism the lookup is reduce-scattered into this rank's chunk of the tokens.
  const int64_t scatter_dim = sequence_chunks(tp, cache) ? 1 : -1;
  auto h = !pp.first() ? parallel::receive_activation(pp.links, device, backpropagated(*this))
           : tp.active()
               ? parallel::vocab_parallel_embedding(ids.to(device), embed_tokens->weight, tp.comm, scatter_dim)
               : embedding_rows(embed_tokens->weight, ids.to(device));
  const auto [cos, sin] = rotary(inv_freq, positions.to(device), dtype, rope_attention_scaling(config));
  // Ulysses attends over the whole sequence: the whole mask. A context-parallel rank's queries are its own positions:
  // their rows only (the whole [B,T,T] mask on each rank would not shrink with the ranks).
  const bool own_rows = split && sequence_parallel.split == SequenceSplit::ContextParallel;
  const int64_t T_local = ids.size(1);
  const auto masks = own_rows ? attention_biases(config, attention_mask.to(device),
                                                 sequence_parallel.comm->rank() * T_local, dtype, T_local)
                              : attention_biases(config, attention_mask.to(device), past, dtype);
  return run_layers(h, cos, sin, masks.full, masks.sliding, cache, torch::Tensor());
}

torch::Tensor DecoderImpl::forward_packed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                          const torch::Tensor& position_ids, const PackedTokens& packing) {
  VERL_CHECK(
      input_ids.dim() == 2 && attention_mask.sizes() == input_ids.sizes() && position_ids.sizes() == input_ids.sizes(),
      kTransformerComponent, "input_ids, attention_mask and position_ids must be the same [batch, seq], got ",
      input_ids.sizes(), ", ", attention_mask.sizes(), ", ", position_ids.sizes());
  VERL_ASSERT(packing.rows == input_ids.size(0) && packing.width == input_ids.size(1), kTransformerComponent,
              "the packing is of a [", packing.rows, ", ", packing.width, "] batch, input_ids is ", input_ids.sizes());
  VERL_ASSERT(!sequence_parallel.active(), kTransformerComponent,
              "a packed forward does not split the sequence (Ulysses)");
  const auto device = weight_options().device();
  const auto dtype = weight_options().dtype().toScalarType();
  const auto ids = packing.pack(input_ids.to(device)).unsqueeze(0);  // [1,N]
  const int64_t scatter_dim = sequence_chunks(tp, nullptr) ? 1 : -1;
  auto h = !pp.first()   ? parallel::receive_activation(pp.links, device, backpropagated(*this))
           : tp.active() ? parallel::vocab_parallel_embedding(ids, embed_tokens->weight, tp.comm, scatter_dim)
                         : embedding_rows(embed_tokens->weight, ids);
  const auto [cos, sin] =
      rotary(inv_freq, packing.pack(position_ids.to(device)).unsqueeze(0), dtype, rope_attention_scaling(config));
  const auto masks = attention_biases(config, attention_mask.to(device), 0, dtype);
  return run_layers(h, cos, sin, masks.full, masks.sliding, nullptr, packing.positions.to(device)).squeeze(0);
}

torch::Tensor DecoderImpl::run_layers(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                                      const torch::Tensor& full_bias, const torch::Tensor& sliding_bias, KVCache* cache,
                                      const torch::Tensor& packed) {
  const bool checkpoint = gradient_checkpointing && cache == nullptr && torch::GradMode::is_enabled();
  pipeline_sends.clear();
  for (size_t i = 0; i < layer_list.size(); ++i) {
    const int64_t layer = pp.layer(static_cast<int64_t>(i));  // the config's index
    if (i > 0 && layer != pp.layer(static_cast<int64_t>(i) - 1) + 1) {
      // Virtual stages: this run is done; the next stage takes it on, and this stage's next run starts from the
      // previous stage's output (round the ring).
      pipeline_sends.push_back(parallel::send_activation(h, pp.links));
      h = parallel::receive_activation(pp.links, h.device(), backpropagated(*this));
    }
    const auto& mask_bias = config.layer_slides(layer) ? sliding_bias : full_bias;
    if (layer_runner && cache == nullptr) {
      h = layer_runner(i, h, cos, sin, mask_bias, packed);
    } else {
      h = checkpoint ? checkpointed_layer_forward(layer_list[i], h, cos, sin, mask_bias, packed)
                     : layer_list[i]->forward(h, cos, sin, mask_bias, cache, layer, packed);
    }
  }
  const int64_t B = h.size(0), T = h.size(1);
  if (cache) cache->length += T;
  if (!pp.last()) {
    pipeline_output = h;  // the head's outputs are the last stage's: pipeline_head_outputs sends h there
    // Under Megatron's sequence parallelism h is this rank's chunk of the tokens; callers cut the response positions
    // out of what a stage returns before asking for the head's outputs, so it keeps the whole length (zeros, no
    // memory: only the last stage's values are used).
    if (sequence_chunks(tp, cache)) return torch::zeros({1, 1, 1}, h.options()).expand({B, cos.size(1), h.size(2)});
    return h;
  }
  if (cache && T == 1 && decode_kernels_apply(h) && norm->weight.scalar_type() == torch::kFloat32) {
    return rms_norm_rows(h.reshape({B, -1}), norm->weight, norm->eps).view(h.sizes());
  }
  if (!sequence_chunks(tp, cache)) return norm->forward(h);
  // Megatron's sequence parallelism: the normed chunks gathered to cos's length of tokens, which the heads use the
  // same on every rank (the LM head's column-parallel input sums its gradient itself).
  return parallel::gather_from_sequence_parallel_region(norm->forward(h), /*dim=*/1, tp.comm, /*sum_gradient=*/false)
      .narrow(1, 0, cos.size(1));
}

CausalLMImpl::CausalLMImpl(const HFConfig& c, HeadKind head_, TensorParallelGroup tp_, PipelineParallelGroup pp_)
    : config(c), head(head_), tp(std::move(tp_)) {
  c.validate();
  if (tp.active()) {
    for (auto [what, n] : {std::pair<const char*, int64_t>{"num_attention_heads", c.num_attention_heads},
                           {"num_key_value_heads", c.num_key_value_heads},
                           {"intermediate_size", c.intermediate_size},
                           {"vocab_size", c.vocab_size},
                           {"moe_intermediate_size", c.moe.moe_intermediate_size},
                           {"shared_expert_intermediate_size", c.moe.shared_expert_intermediate_size}}) {
      VERL_CHECK(n % tp.size() == 0, kTransformerComponent, "tensor_model_parallel_size ", tp.size(),
                 " must divide config.json's ", what, " (", n, ")");
    }
  }
  model = register_module("model", Decoder(c, tp, pp_, head == HeadKind::LM && c.tie_word_embeddings));
  pp = model->pp;
  if (!pp.last()) return;  // the head is the last stage's
  if (head == HeadKind::Value) {
    score = register_module("score", make_linear(c.hidden_size, 1, true));
  } else if (!c.tie_word_embeddings) {
    lm_head = register_module("lm_head", make_linear(c.hidden_size, c.vocab_size / tp.size(), false));
  }
}

torch::Tensor CausalLMImpl::logits_shard(const torch::Tensor& hidden) {
  VERL_CHECK(head == HeadKind::LM, kTransformerComponent, "this model has a value head, not an LM head");
  const auto& weight = lm_head ? lm_head->weight : model->embed_tokens->weight;
  VERL_ASSERT(!packed_for_decode(weight), kTransformerComponent,
              "the LM head's weight is packed for the decode step; "
              "the decode step's logits come from rollout::decode_step_logits");
  return torch::nn::functional::linear(column_input(hidden, tp), weight);
}

namespace {

// The head's outputs under pipeline parallelism: the last stage computes them (`head`) and broadcasts them; a stage
// before the last sends its latest forward's output on and receives them. Without pipeline parallelism, `head`.
std::vector<torch::Tensor> pipeline_head_outputs(DecoderImpl& trunk,
                                                 const std::function<std::vector<torch::Tensor>()>& head) {
  if (!trunk.pp.active()) return head();
  const auto device = trunk.weight_options().device();
  std::vector<torch::Tensor> sends = std::move(trunk.pipeline_sends);
  trunk.pipeline_sends.clear();
  std::vector<torch::Tensor> outputs;
  if (trunk.pp.last()) {
    outputs = parallel::broadcast_outputs(head(), *trunk.pp.links, device);
  } else {
    VERL_ASSERT(trunk.pipeline_output.defined(), kTransformerComponent,
                "a pipeline stage's head outputs were asked for with no forward before them");
    sends.push_back(parallel::send_activation(trunk.pipeline_output, trunk.pp.links));
    trunk.pipeline_output = torch::Tensor();
    outputs = parallel::broadcast_outputs({}, *trunk.pp.links, device);
  }
  // The sends' zeros added to each floating output, so that this stage's backward reaches them (and receives the
  // gradient of what each sent, the latest send first: autograd runs the most recent ready node first).
  torch::Tensor zero;
  for (const auto& token : sends) {
    if (token.requires_grad()) zero = zero.defined() ? zero + token : token;
  }
  if (!zero.defined()) return outputs;
  for (auto& t : outputs) {
    if (t.defined() && t.is_floating_point()) t = t + zero.to(t.scalar_type());
  }
  return outputs;
}

// This stage's whole logits (the last stage's under pipeline parallelism).
torch::Tensor whole_logits(CausalLMImpl& model, const torch::Tensor& hidden) {
  auto shard = model.logits_shard(hidden);
  return model.tp.active() ? parallel::gather_from_tp_region(shard, model.tp.comm) : shard;
}

}  // namespace

torch::Tensor CausalLMImpl::logits(const torch::Tensor& hidden) {
  return pipeline_head_outputs(*model, [&] { return std::vector<torch::Tensor>{whole_logits(*this, hidden)}; })[0];
}

torch::Tensor CausalLMImpl::values(const torch::Tensor& hidden) {
  VERL_CHECK(head == HeadKind::Value, kTransformerComponent, "this model has an LM head, not a value head");
  return pipeline_head_outputs(*model,
                               [&] { return std::vector<torch::Tensor>{score->forward(hidden).squeeze(-1)}; })[0];
}

torch::Tensor DecoderImpl::decode_step_static(const torch::Tensor& tokens, const torch::Tensor& positions,
                                             const torch::Tensor& bias, KVCache& cache) {
  VERL_ASSERT(config.sliding_layers.empty(), kTransformerComponent,
              "the static decode step has one mask for every layer; a model with sliding layers decodes eagerly");
  const int64_t B = tokens.size(0), S = bias.size(1);
  const auto dtype = embed_tokens->weight.scalar_type();
  auto h = embed_tokens->forward(tokens);
  const auto [cos, sin] = rotary(inv_freq, positions, dtype, rope_attention_scaling(config));
  const auto mask_bias = bias.view({B, 1, 1, 1, S});
  for (size_t i = 0; i < layer_list.size(); ++i) {
    h = layer_list[i]->forward(h, cos, sin, mask_bias, &cache, static_cast<int64_t>(i));
  }
  return norm->forward(h);
}

KVCache CausalLMImpl::make_cache(int64_t batch, int64_t capacity) const {
  KVCache cache;
  cache.capacity = capacity;
  auto opts = model->embed_tokens->weight.options();
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    const int64_t kv_heads = config.num_key_value_heads / tp.size();  // this rank's
    cache.k.push_back(torch::zeros({batch, kv_heads, capacity, config.head_dim}, opts));
    cache.v.push_back(torch::zeros({batch, kv_heads, capacity, config.head_dim}, opts));
  }
  return cache;
}

void set_sequence_parallel(CausalLM& model, std::shared_ptr<parallel::Comm> group, const std::string& key,
                           SequenceSplit split) {
  const SequenceParallelGroup sp{std::move(group), split};
  if (sp.active() && split == SequenceSplit::Ulysses) {
    const auto& c = model->config;
    const int64_t n = sp.size();
    VERL_CHECK(!model->tp.active(), kTransformerComponent, key, "=", n, " with tensor parallelism is not implemented");
    VERL_CHECK(!model->pp.active(), kTransformerComponent, key, "=", n,
               " with pipeline parallelism (pipeline_model_parallel_size > 1) is not supported");
    VERL_CHECK(c.num_attention_heads % n == 0, kTransformerComponent, key, "=", n,
               " must divide config.json's "
               "num_attention_heads (",
               c.num_attention_heads, "): each rank attends with 1/", n, " of the heads");
    VERL_CHECK(c.num_key_value_heads % n == 0 || n % c.num_key_value_heads == 0, kTransformerComponent, key, "=", n,
               " and config.json's num_key_value_heads (", c.num_key_value_heads, ") must divide one another");
  }
  model->model->sequence_parallel = sp;
  for (auto& layer : model->model->layer_list) layer->self_attn->sequence_parallel = sp;
}

void set_megatron_sequence_parallel(CausalLM& model, bool on) {
  auto& decoder = *model->model;
  const bool active = on && decoder.tp.active();
  model->tp.scatter_sequence = decoder.tp.scatter_sequence = active;
  const auto partial = active ? decoder.tp.comm : nullptr;
  for (auto& layer : decoder.layer_list) {
    layer->self_attn->tp.scatter_sequence = active;
    if (layer->mlp) layer->mlp->tp.scatter_sequence = active;
    layer->input_layernorm->partial_gradient_group = layer->post_attention_layernorm->partial_gradient_group = partial;
  }
  if (decoder.norm) decoder.norm->partial_gradient_group = partial;
}

void set_attention_kernel(CausalLM& model, AttentionKernel kernel) {
  for (auto& layer : model->model->layer_list) layer->self_attn->kernel = kernel;
}

torch::Tensor position_ids_from_mask(const torch::Tensor& attention_mask) {
  return torch::clamp_min(attention_mask.to(torch::kInt64).cumsum(-1) - 1, 0);
}

torch::Tensor token_log_probs(const torch::Tensor& logits, const torch::Tensor& tokens, double temperature) {
  VERL_CHECK(temperature > 0, kTransformerComponent, "temperature must be positive, got ", temperature);
  auto lp = torch::log_softmax(logits.to(torch::kFloat32) / temperature, -1);
  return lp.gather(-1, tokens.to(lp.device()).to(torch::kInt64).unsqueeze(-1)).squeeze(-1);
}

torch::Tensor entropy_from_logits(const torch::Tensor& logits) {
  auto l = logits.to(torch::kFloat32);
  auto lse = torch::logsumexp(l, -1);
  auto p = torch::softmax(l, -1);
  return lse - (p * l).sum(-1);
}

namespace {
torch::Tensor response_hidden(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              const torch::Tensor& position_ids, int64_t R) {
  const int64_t L = input_ids.size(1);
  VERL_CHECK(R >= 1 && R < L, kTransformerComponent, "response length ", R, " must be in [1, ", L, ")");
  auto hidden = model->hidden_states(input_ids, attention_mask, position_ids);
  return hidden.narrow(1, L - R - 1, R);
}
}  // namespace

namespace {

// log p(labels) (and entropy, sum_v pi_v^2) at every position of `hidden` [B,n,H]; labels [B,n].
// `query`'s gather_ids are laid out as labels [B,n,K].
ResponseLogProbs head_log_probs(CausalLM& model, const torch::Tensor& hidden, const torch::Tensor& labels,
                                double temperature, bool with_entropy, bool with_sum_pi_squared,
                                const TopKQuery& query) {
  ResponseLogProbs out;
  if (model->tp.active()) {
    // No rank holds the whole vocabulary: softmax statistics are reduced over the group.
    const auto raw_shard = model->logits_shard(hidden);
    auto shard = raw_shard.to(torch::kFloat32) / temperature;
    auto parallel_out = parallel::vocab_parallel_log_probs(shard, labels.to(shard.device()).to(torch::kInt64),
                                                           model->tp.comm);
    out.log_probs = parallel_out.log_probs;
    if (with_entropy) out.entropy = parallel_out.entropy;
    if (with_sum_pi_squared) {
      // sum_v pi_v^2 = exp(logsumexp(2 z) - 2 logsumexp(z)), each logsumexp reduced over the vocabulary's slices.
      out.sum_pi_squared = torch::exp(parallel::vocab_parallel_logsumexp(2.0 * shard, model->tp.comm) -
                                      2.0 * parallel::vocab_parallel_logsumexp(shard, model->tp.comm));
    }
    if (query.active()) {
      // The top-k tokens may be anywhere in the vocabulary: every rank gathers the whole logits (backward: its slice).
      out.top_k = top_k_log_probs(parallel::gather_from_tp_region(raw_shard, model->tp.comm), temperature, query);
    }
    return out;
  }
  // One autograd node over the logits in their own dtype (model/fused_log_probs.h): no fp32 vocabulary-wide
  // copies kept for backward.
  const torch::Tensor raw_logits = whole_logits(*model, hidden);
  auto fused = fused_log_probs(raw_logits, labels.to(raw_logits.device()), temperature, with_entropy);
  out.log_probs = fused.log_probs;
  if (with_entropy) out.entropy = fused.entropy;
  if (with_sum_pi_squared) {
    // sum_v pi_v^2 = exp(logsumexp(2 z) - 2 logsumexp(z)) (verl's calculate_sum_pi_squared_from_logits)
    const auto logits = raw_logits.to(torch::kFloat32) / temperature;
    out.sum_pi_squared = torch::exp(torch::logsumexp(2.0 * logits, -1) - 2.0 * torch::logsumexp(logits, -1));
  }
  if (query.active()) out.top_k = top_k_log_probs(raw_logits, temperature, query);
  return out;
}

// head_log_probs, on every pipeline stage the last stage's.
ResponseLogProbs log_probs_at(CausalLM& model, const torch::Tensor& hidden, const torch::Tensor& labels,
                              double temperature, bool with_entropy, bool with_sum_pi_squared, const TopKQuery& query) {
  const auto outputs = pipeline_head_outputs(*model->model, [&] {
    const auto out = head_log_probs(model, hidden, labels, temperature, with_entropy, with_sum_pi_squared, query);
    return std::vector<torch::Tensor>{out.log_probs,       out.entropy,
                                      out.sum_pi_squared,  out.top_k.top_k_log_probs,
                                      out.top_k.top_k_ids, out.top_k.gathered_log_probs};
  });
  return {outputs.at(0), outputs.at(1), outputs.at(2), TopKLogProbs{outputs.at(3), outputs.at(4), outputs.at(5)}};
}

// Ulysses: the sequence padded on the right to a multiple of the group size (padding masked, after every real
// token, so no real position sees it), this rank's hidden states [B, Lp/sp, H] and the next token of each of its
// positions (the label its log-prob is of, as verl's rolled input ids).
struct SequenceShard {
  torch::Tensor hidden;
  torch::Tensor next_tokens;
};
SequenceShard sequence_shard(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                             const torch::Tensor& position_ids) {
  const auto& group = model->model->sequence_parallel;
  const int64_t L = input_ids.size(1);
  const int64_t pad = (group.size() - L % group.size()) % group.size();
  auto padded = [&](const torch::Tensor& t) { return torch::constant_pad_nd(t, {0, pad}, 0); };
  const auto ids = padded(input_ids);
  SequenceShard shard;
  shard.hidden = model->hidden_states(ids, padded(attention_mask), padded(position_ids));
  shard.next_tokens = parallel::slice_sequence(ids.roll(-1, 1), 1, *group.comm);
  return shard;
}
// Every rank's per-position values [B, Lp/sp] gathered, then the response window [L-R-1, L-1) of [B, Lp].
torch::Tensor response_window(const torch::Tensor& local, const CausalLM& model, int64_t L, int64_t R) {
  return parallel::gather_sequence(local, 1, model->model->sequence_parallel.comm).narrow(1, L - R - 1, R);
}

// The columns [begin, end) of a [B, P+R] batch that remove_padding keeps: the used ones, but at least [P-1, P+1)
// (the position that predicts the first response token, and one response column) so that every rank still runs
// the forward and its collectives.
ColumnRange kept_columns(const torch::Tensor& attention_mask, int64_t R) {
  const int64_t L = attention_mask.size(1), P = L - R;
  VERL_CHECK(R >= 1 && R < L, kTransformerComponent, "response length ", R, " must be in [1, ", L, ")");
  const ColumnRange used = used_columns(attention_mask);
  return {std::min(used.begin, P - 1), std::max(used.end, P + 1)};
}

// A [B, r] output of the kept columns back to the response window [B, R]: 0 past column r and wherever the
// response part of attention_mask is 0 (`zeros_at_padding`: the output has them already, as a packed pass's does).
// A [B, r, K] output (top-k) widens along its second dimension alike.
torch::Tensor widen_to_window(const torch::Tensor& t, const torch::Tensor& attention_mask, int64_t R,
                              bool zeros_at_padding) {
  if (!t.defined()) return t;
  std::vector<int64_t> pad(2 * (t.dim() - 1), 0);  // constant_pad_nd lists the last dimension first
  pad.back() = R - t.size(1);
  auto widened = torch::constant_pad_nd(t, pad, 0);
  if (zeros_at_padding) return widened;
  auto padding = attention_mask.narrow(1, attention_mask.size(1) - R, R).to(t.device()) == 0;
  while (padding.dim() < widened.dim()) padding = padding.unsqueeze(-1);
  return widened.masked_fill(padding, 0);
}

// The query's [B, R, K] ids narrowed to the first r response columns (remove_padding's kept ones).
TopKQuery narrowed_query(const TopKQuery& query, int64_t r) {
  TopKQuery out = query;
  if (query.gather_ids.defined()) out.gather_ids = query.gather_ids.narrow(1, 0, r);
  return out;
}

// `f` applied to each output the query asked for (the others stay undefined).
TopKLogProbs map_top_k(const TopKLogProbs& top_k, const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  const auto apply = [&](const torch::Tensor& t) { return t.defined() ? f(t) : t; };
  return {apply(top_k.top_k_log_probs), apply(top_k.top_k_ids), apply(top_k.gathered_log_probs)};
}

ResponseLogProbs dense_response_log_probs(CausalLM& model, const torch::Tensor& input_ids,
                                          const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                          const torch::Tensor& responses, double temperature, bool with_entropy,
                                          bool with_sum_pi_squared, const TopKQuery& query) {
  if (!model->model->sequence_parallel.active()) {
    auto hidden = response_hidden(model, input_ids, attention_mask, position_ids, responses.size(1));
    return log_probs_at(model, hidden, responses, temperature, with_entropy, with_sum_pi_squared, query);
  }
  // Ulysses: log-probs at every position of this rank's part (labels: the next tokens), gathered along the
  // sequence; the response window's labels are the responses.
  const int64_t L = input_ids.size(1), R = responses.size(1);
  VERL_CHECK(R >= 1 && R < L, kTransformerComponent, "response length ", R, " must be in [1, ", L, ")");
  const auto shard = sequence_shard(model, input_ids, attention_mask, position_ids);
  TopKQuery local_query = query;
  if (query.gather_ids.defined()) {
    // The ids sit at the positions that predict the responses, [L-R-1, L-1) of the padded sequence; this rank's part.
    const auto& group = model->model->sequence_parallel;
    const int64_t padded_length = L + (group.size() - L % group.size()) % group.size();
    const int64_t K = query.gather_ids.size(2);
    auto ids = torch::zeros({input_ids.size(0), padded_length, K}, query.gather_ids.options());
    ids.narrow(1, L - R - 1, R).copy_(query.gather_ids);
    local_query.gather_ids = parallel::slice_sequence(ids, 1, *group.comm);
  }
  auto local =
      log_probs_at(model, shard.hidden, shard.next_tokens, temperature, with_entropy, with_sum_pi_squared, local_query);
  ResponseLogProbs out;
  out.log_probs = response_window(local.log_probs, model, L, R);
  if (local.entropy.defined()) out.entropy = response_window(local.entropy, model, L, R);
  if (local.sum_pi_squared.defined()) out.sum_pi_squared = response_window(local.sum_pi_squared, model, L, R);
  out.top_k = map_top_k(local.top_k, [&](const torch::Tensor& t) { return response_window(t, model, L, R); });
  return out;
}

torch::Tensor dense_response_values(CausalLM& model, const torch::Tensor& input_ids,
                                    const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                    int64_t response_length) {
  if (model->model->sequence_parallel.active()) {
    const int64_t L = input_ids.size(1);
    VERL_CHECK(response_length >= 1 && response_length < L, kTransformerComponent, "response length ", response_length,
               " must be in [1, ", L, ")");
    const auto shard = sequence_shard(model, input_ids, attention_mask, position_ids);
    return response_window(model->values(shard.hidden).to(torch::kFloat32), model, L, response_length);
  }
  auto hidden = response_hidden(model, input_ids, attention_mask, position_ids, response_length);
  return model->values(hidden).to(torch::kFloat32);
}

// The packed layout of a response pass's (kept) batch, or std::nullopt where it runs unpacked: under Ulysses (each
// rank holds a slice of whole rows) and where pack_responses declines.
std::optional<PackedResponses> response_packing(CausalLM& model, const torch::Tensor& attention_mask, int64_t R) {
  if (model->model->sequence_parallel.active()) return std::nullopt;
  return pack_responses(attention_mask, R, model->model->weight_options().device());
}

// The packed trunk's hidden state before each real response token [M, H].
torch::Tensor predictor_hidden(CausalLM& model, const PackedResponses& packing, const torch::Tensor& input_ids,
                               const torch::Tensor& attention_mask, const torch::Tensor& position_ids) {
  const auto hidden = model->model->forward_packed(input_ids, attention_mask, position_ids, packing.tokens);
  return hidden.index_select(0, packing.predictors.to(hidden.device()));
}

ResponseLogProbs packed_response_log_probs(CausalLM& model, const PackedResponses& packing,
                                           const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                           const torch::Tensor& position_ids, const torch::Tensor& responses,
                                           double temperature, bool with_entropy, bool with_sum_pi_squared,
                                           const TopKQuery& query) {
  const auto hidden = predictor_hidden(model, packing, input_ids, attention_mask, position_ids);
  const auto window = packing.window.to(responses.device());
  const auto labels = responses.reshape({-1}).index_select(0, window);
  TopKQuery packed_query = query;
  if (query.gather_ids.defined()) {
    const int64_t K = query.gather_ids.size(2);
    packed_query.gather_ids = query.gather_ids.reshape({-1, K}).index_select(0, window).unsqueeze(0);  // [1, M, K]
  }
  const auto local = log_probs_at(model, hidden.unsqueeze(0), labels.unsqueeze(0), temperature, with_entropy,
                                  with_sum_pi_squared, packed_query);  // [1, M]
  const auto to_window = [&](const torch::Tensor& t) { return t.defined() ? packing.to_window(t.squeeze(0)) : t; };
  return {to_window(local.log_probs), to_window(local.entropy), to_window(local.sum_pi_squared),
          map_top_k(local.top_k, to_window)};
}

}  // namespace

ResponseLogProbs response_log_probs(CausalLM& model, const torch::Tensor& input_ids,
                                    const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                    const torch::Tensor& responses, double temperature, bool with_entropy,
                                    bool with_sum_pi_squared, const TopKQuery& query) {
  VERL_CHECK(
      !query.gather_ids.defined() || (query.gather_ids.dim() == 3 && query.gather_ids.size(0) == responses.size(0) &&
                                      query.gather_ids.size(1) == responses.size(1)),
      kTransformerComponent, "top-k token ids ",
      query.gather_ids.defined() ? query.gather_ids.sizes() : at::IntArrayRef{}, " do not match the responses ",
      responses.sizes(), " ([B, R, K] against [B, R])");
  if (!model->remove_padding) {
    return dense_response_log_probs(model, input_ids, attention_mask, position_ids, responses, temperature,
                                    with_entropy, with_sum_pi_squared, query);
  }
  const int64_t R = responses.size(1), P = input_ids.size(1) - R;
  // The mask on the host once: the kept columns and the packing both read it (one device sync, not two).
  const auto host_mask = (attention_mask != 0).to(torch::kCPU);
  const ColumnRange c = kept_columns(host_mask, R);
  const auto kept = [&](const torch::Tensor& t) { return t.narrow(1, c.begin, c.end - c.begin); };
  const auto kept_responses = responses.narrow(1, 0, c.end - P);
  const auto packing = response_packing(model, kept(host_mask), c.end - P);
  const TopKQuery kept_query = narrowed_query(query, c.end - P);
  auto out = packing
                 ? packed_response_log_probs(model, *packing, kept(input_ids), kept(attention_mask), kept(position_ids),
                                             kept_responses, temperature, with_entropy, with_sum_pi_squared, kept_query)
                 : dense_response_log_probs(model, kept(input_ids), kept(attention_mask), kept(position_ids),
                                            kept_responses, temperature, with_entropy, with_sum_pi_squared, kept_query);
  const bool zeros = packing.has_value();
  out.log_probs = widen_to_window(out.log_probs, attention_mask, R, zeros);
  out.entropy = widen_to_window(out.entropy, attention_mask, R, zeros);
  out.sum_pi_squared = widen_to_window(out.sum_pi_squared, attention_mask, R, zeros);
  out.top_k =
      map_top_k(out.top_k, [&](const torch::Tensor& t) { return widen_to_window(t, attention_mask, R, zeros); });
  return out;
}

torch::Tensor response_values(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              const torch::Tensor& position_ids, int64_t response_length) {
  if (!model->remove_padding) {
    return dense_response_values(model, input_ids, attention_mask, position_ids, response_length);
  }
  const int64_t P = input_ids.size(1) - response_length;
  const auto host_mask = (attention_mask != 0).to(torch::kCPU);  // read twice below, synchronised once
  const ColumnRange c = kept_columns(host_mask, response_length);
  const auto kept = [&](const torch::Tensor& t) { return t.narrow(1, c.begin, c.end - c.begin); };
  if (const auto packing = response_packing(model, kept(host_mask), c.end - P)) {
    const auto hidden = predictor_hidden(model, *packing, kept(input_ids), kept(attention_mask), kept(position_ids));
    return widen_to_window(packing->to_window(model->values(hidden).to(torch::kFloat32)), attention_mask,
                           response_length, /*zeros_at_padding=*/true);
  }
  const auto values =
      dense_response_values(model, kept(input_ids), kept(attention_mask), kept(position_ids), c.end - P);
  return widen_to_window(values, attention_mask, response_length, /*zeros_at_padding=*/false);
}

torch::Tensor reward_scores(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            const torch::Tensor& position_ids) {
  auto hidden = model->hidden_states(input_ids, attention_mask, position_ids);
  const int64_t L = input_ids.size(1);
  // Last index where attention_mask == 1 (works for left and right padding).
  auto idx = (attention_mask.to(torch::kInt64) *
              torch::arange(L, torch::TensorOptions().dtype(torch::kInt64).device(attention_mask.device())))
                 .argmax(-1)
                 .to(hidden.device());
  auto last = hidden.gather(1, idx.view({-1, 1, 1}).expand({hidden.size(0), 1, hidden.size(2)})).squeeze(1);
  return model->values(last).to(torch::kFloat32);
}

CausalLM rebuild_model(CausalLM& source, TensorParallelGroup tp, PipelineParallelGroup pp,
                       const std::function<torch::Tensor(const std::string& name)>& value) {
  const auto first = source->parameters().front();
  CausalLM out(source->config, source->head, std::move(tp), std::move(pp));
  out->to(first.device(), first.scalar_type());
  {
    torch::NoGradGuard no_grad;
    for (auto& item : out->named_parameters()) {
      const torch::Tensor v = value(item.key());
      if (v.defined()) item.value().copy_(v);
    }
  }
  out->train(source->is_training());
  out->model->gradient_checkpointing = source->model->gradient_checkpointing;
  out->remove_padding = source->remove_padding;
  return out;
}

void init_weights(CausalLM& model, uint64_t seed, bool perturb) {
  auto gen = at::detail::createCPUGenerator(seed);
  const double std = model->config.initializer_range;
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    auto t = torch::empty(p.sizes(), torch::kFloat32);
    const bool is_norm = name.find("norm.weight") != std::string::npos;
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    if (is_norm) {
      if (perturb) t.normal_(1.0, 0.1, gen);
      else t.fill_(1.0);
    } else if (is_bias) {
      if (perturb) t.normal_(0.0, std, gen);
      else t.zero_();
    } else {
      t.normal_(0.0, std, gen);
    }
    p.copy_(t);
  }
}

void init_value_head(CausalLM& model, uint64_t seed) {
  VERL_CHECK(model->score, kTransformerComponent, "init_value_head on a model without a value head");
  auto gen = at::detail::createCPUGenerator(seed);
  torch::NoGradGuard no_grad;
  auto w = torch::empty(model->score->weight.sizes(), torch::kFloat32).normal_(0.0, model->config.initializer_range, gen);
  model->score->weight.copy_(w);
  model->score->bias.zero_();
}

}  // namespace verl::model
