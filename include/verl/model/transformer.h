// Llama / Qwen2 / Qwen3 / Mistral decoders and the Qwen2-MoE / Qwen3-MoE mixtures of experts in LibTorch. Modules are
// nested so named_parameters() are exactly Hugging Face's names (model.embed_tokens.weight,
// model.layers.0.self_attn.q_proj.weight, ..., model.norm.weight, lm_head.weight unless tied; score.weight / score.bias
// for the value head).
//
// Attention runs on LibTorch's scaled_dot_product_attention (grouped KV heads without repeating K/V, a causal +
// padding mask as an additive bias); AttentionKernel::Eager (matmul + fp32 softmax, as HF's eager path) is the
// reference it is tested against, and the path for fp64. Rotary embeddings follow HF's rotate_half convention,
// including llama3 and linear rope scaling.
//
// Tensor parallelism (the megatron strategy, model/tensor_parallel_model.h): built with a TensorParallelGroup
// of size T > 1, each rank holds its slice of the weights under the same HF names: q/k/v, gate and up split by
// output rows (its num_heads / T query and num_key_value_heads / T KV heads, its intermediate / T), o and down
// by input columns (their biases whole, added once), the embedding and LM head by vocabulary rows; norms and
// the value head whole. Forward puts the slices together with parallel/tensor_parallel.h, so every rank gets
// the same hidden states, and the gradient of a loss computed the same on every rank reaches each slice.
//
// Pipeline parallelism (the megatron strategy, model/pipeline_parallel_model.h): built with a PipelineParallelGroup
// of P > 1 stages, stage s holds its runs of layers under their HF names (model.layers.<the config's index>),
// the first stage the embedding, the last the final norm and the head (and the embedding too when the LM head is tied
// to it). A forward without a cache passes the hidden states from stage to stage (parallel/pipeline_parallel.h); the
// head's outputs (logits, log-probs, values) are the last stage's, broadcast, so every stage returns the same.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "verl/model/hf_config.h"
#include "verl/model/packed_tokens.h"
#include "verl/model/top_k_log_probs.h"
#include "verl/parallel/comm.h"
#include "verl/parallel/pipeline_parallel.h"

namespace verl::model {

struct LoraState;  // model/lora.h

// This rank's tensor-parallel group; no communicator (or one rank): the whole model.
struct TensorParallelGroup {
  std::shared_ptr<parallel::Comm> comm;
  // Megatron's sequence parallelism (megatron.sequence_parallel; set_megatron_sequence_parallel): in a forward
  // without a cache, the hidden states outside the tensor-parallel regions (embedding output, norms, residual adds,
  // the stages' sends) are this rank's chunk of the tokens; the final-normed output is gathered whole.
  bool scatter_sequence = false;
  bool active() const { return comm != nullptr && comm->size() > 1; }
  int64_t size() const { return active() ? comm->size() : 1; }
  int64_t rank() const { return active() ? comm->rank() : 0; }
};

// This rank's pipeline stage; no links (or one stage): every layer. The layers split into P x V runs of
// `chunk_layers` each (Megatron's virtual stages: V = virtual_pipeline_model_parallel_size, 1 by default); run c sits
// on stage c % P, so stage s holds runs s, s + P, ..., and a forward visits the stages V times round the ring.
struct PipelineParallelGroup {
  std::shared_ptr<parallel::PipelineLinks> links;
  int64_t chunk_layers = 0;  // layers per run
  int64_t chunks = 1;        // runs on each stage (V)
  bool active() const { return links != nullptr && links->count() > 1; }
  bool first() const { return !active() || links->first(); }
  bool last() const { return !active() || links->last(); }
  // Whether this stage holds the config's layer `layer`, and the config's index of its i-th layer.
  bool holds(int64_t layer) const { return !active() || (layer / chunk_layers) % links->count() == links->stage(); }
  int64_t layer(int64_t i) const {
    if (!active()) return i;
    return ((i / chunk_layers) * links->count() + links->stage()) * chunk_layers + i % chunk_layers;
  }
};

// How attention sees the whole sequence when ranks split it: Ulysses (fsdp's ulysses_sequence_parallel_size,
// parallel/ulysses.h) exchanges heads for sequence around it; context parallelism (megatron's
// context_parallel_size, parallel/context_parallel.h) gathers the keys and values and keeps this rank's queries.
enum class SequenceSplit { Ulysses, ContextParallel };

// This rank's sequence-parallel group (set_sequence_parallel); none (or one rank): whole sequences. Only forwards
// without a KV cache (log-probs, values, training) split the sequence; generation always runs whole.
struct SequenceParallelGroup {
  std::shared_ptr<parallel::Comm> comm;
  SequenceSplit split = SequenceSplit::Ulysses;
  bool active() const { return comm != nullptr && comm->size() > 1; }
  int64_t size() const { return active() ? comm->size() : 1; }
};

// Which head sits on the trunk: the LM head (lm_head, or the tied embedding), or verl's critic value head
// (`score` = Linear(hidden, 1) with bias, AutoModelForTokenClassification style; also the reward model's).
enum class HeadKind { LM, Value };

// A preallocated key/value cache: per layer [batch, kv_heads, capacity, head_dim]; `length` positions are
// filled (the same for every row: rows are kept aligned, padding is masked by the attention mask).
struct KVCache {
  std::vector<torch::Tensor> k, v;
  int64_t length = 0;
  int64_t capacity = 0;
  // The static decode step (DecoderImpl::decode_step_static, captured as a CUDA graph): a [1] int64 tensor on
  // the cache's device holding the position the step writes; attention then spans the whole capacity, the
  // positions not yet written masked by the step's bias. Undefined: writes at `length` (the general path).
  torch::Tensor write_index;
  int64_t batch() const { return k.empty() ? 0 : k[0].size(0); }
  // Keeps / reorders / repeats rows: row i of the result is row index[i] of this cache.
  void select_rows(const torch::Tensor& index);
};

struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double eps;
  // Qwen3's q_norm / k_norm under tensor parallelism see only this rank's heads, so their weight's gradient is
  // a partial sum: set, the weight enters through copy_to_tp_region and the gradient is summed over the group.
  std::shared_ptr<parallel::Comm> partial_gradient_group;
};
TORCH_MODULE(RMSNorm);

// How prefill and training compute attention (the one-token decode step has its own kernels). Sdpa is
// LibTorch's at::scaled_dot_product_attention (flash-attention kernels on CPU and CUDA, grouped-query heads
// without repeating K/V), the default; Eager is matmul + fp32 softmax + matmul, kept as the reference the
// tests hold Sdpa to.
enum class AttentionKernel { Sdpa, Eager };

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const HFConfig& config, TensorParallelGroup tp = {});
  // x [B,T,H]; cos/sin [B,T,head_dim]; mask_bias [B,1,1,T,S] additive. With a cache, the new keys go to
  // cache positions [cache->length, cache->length + T) of layer `layer` and attention covers [0, length + T).
  // `packed` defined (model/packed_tokens.h, no cache): x [1,N,H] and cos/sin [1,N,head_dim] hold N real tokens,
  // `packed` [N] their flat positions b*T+t in mask_bias's [B,T] layout; the output is [1,N,H] too.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask_bias, KVCache* cache, int64_t layer,
                        const torch::Tensor& packed = {});
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  RMSNorm q_norm{nullptr}, k_norm{nullptr};  // Qwen3 only
  int64_t num_heads, num_kv_heads, head_dim;  // heads held by this rank (all of them without TP)
  double scaling;
  TensorParallelGroup tp;
  AttentionKernel kernel = AttentionKernel::Sdpa;
  std::shared_ptr<LoraState> lora;  // model/lora.h: adapters on q/k/v/o_proj; null: none
  // Active: without a cache, x holds this rank's 1/sp of the sequence. Ulysses: q/k/v are exchanged for the whole
  // sequence of num_heads / sp heads around the attention (KV heads repeated first when fewer than sp), under
  // mask_bias of the whole sequence. Context parallelism: k/v are gathered along the sequence; this rank's queries
  // attend over them under mask_bias [B,1,1,T/sp,T], the rows of its own positions.
  SequenceParallelGroup sequence_parallel;

 private:
  // q [B,heads,T,D] over keys / vals [B,kv_heads,S,D] under mask_bias: SDPA, or the eager reference.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& vals,
                       const torch::Tensor& mask_bias) const;
  torch::Tensor forward_packed(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                               const torch::Tensor& mask_bias, const torch::Tensor& packed);
};
TORCH_MODULE(Attention);

struct MLPImpl : torch::nn::Module {
  // `intermediate_size` 0: the config's (an expert's MLP passes moe_intermediate_size).
  explicit MLPImpl(const HFConfig& config, TensorParallelGroup tp = {}, int64_t intermediate_size = 0);
  // down(silu(gate(x)) * up(x)). `sequence_chunks` (Megatron's sequence parallelism, active tp): x is this rank's
  // chunk of the tokens, gathered before gate / up, and the output this rank's chunk of down's reduce-scatter.
  torch::Tensor forward(const torch::Tensor& x, bool sequence_chunks = false);
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  TensorParallelGroup tp;
  std::shared_ptr<LoraState> lora;  // model/lora.h: adapters on gate/up/down_proj; null: none
};
TORCH_MODULE(MLP);

// Qwen2-MoE / Qwen3-MoE's sparse MLP (transformers' Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock): the router
// `gate` scores every expert per token, softmax in fp32, the num_experts_per_tok best are kept (renormalised to sum
// to 1 with norm_topk_prob, then cast to the model dtype), and the token's output is their weighted sum of the
// experts' SwiGLU MLPs (moe_intermediate_size). Qwen2-MoE adds a shared expert on every token, scaled by
// sigmoid(shared_expert_gate). Each expert runs once over the tokens routed to it, experts in index order as
// transformers adds them. No load-balancing loss (verl passes no labels). Under tensor parallelism every rank holds
// every expert, each split as a dense MLP is (Megatron's expert_tensor_parallel_size = tensor_model_parallel_size with
// no expert parallelism); the router and the shared expert's gate are whole, and every rank routes the same way.
struct SparseMoeBlockImpl : torch::nn::Module {
  explicit SparseMoeBlockImpl(const HFConfig& config, TensorParallelGroup tp = {});
  torch::Tensor forward(const torch::Tensor& x);  // [..., hidden] -> [..., hidden]
  torch::nn::Linear gate{nullptr};
  torch::nn::ModuleList experts{nullptr};
  std::vector<MLP> expert_list;
  MLP shared_expert{nullptr};                     // Qwen2-MoE only
  torch::nn::Linear shared_expert_gate{nullptr};  // Qwen2-MoE only
  int64_t top_k;
  bool norm_topk_prob;
};
TORCH_MODULE(SparseMoeBlock);

struct DecoderLayerImpl : torch::nn::Module {
  // `layer`: the layer's index, which decides whether an MoE config gives it experts (HFConfig::layer_is_sparse).
  explicit DecoderLayerImpl(const HFConfig& config, TensorParallelGroup tp = {}, int64_t layer = 0);
  // `packed`: as AttentionImpl::forward's.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask_bias, KVCache* cache, int64_t layer,
                        const torch::Tensor& packed = {});
  Attention self_attn{nullptr};
  // HF's `mlp`: the dense MLP, or for a sparse layer of an MoE config the experts (`mlp` null).
  MLP mlp{nullptr};
  SparseMoeBlock sparse_mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(DecoderLayer);

// HF's `model` submodule: embeddings, layers, final norm.
struct DecoderImpl : torch::nn::Module {
  // `pp`: the stage's layers only; the embedding on the first stage, and on the last too with `tied_lm_head`.
  explicit DecoderImpl(const HFConfig& config, TensorParallelGroup tp = {}, PipelineParallelGroup pp = {},
                       bool tied_lm_head = false);
  // input_ids [B,T]; attention_mask [B,S] (S = cached length + T; 1 = real token); position_ids [B,T].
  // Returns the final-normed hidden states [B,T,hidden]. Advances cache->length by T. On a pipeline stage before
  // the last: this stage's output (not normed), also kept in pipeline_output for the head's send.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                        const torch::Tensor& position_ids, KVCache* cache = nullptr);
  // The same forward without a cache over only the real tokens (use_remove_padding; packing from pack_tokens or
  // pack_responses of attention_mask): input_ids, attention_mask, position_ids [B,T] as forward's; returns the
  // final-normed hidden states of the N real tokens [N,hidden], in packing.positions' order. Not with Ulysses.
  torch::Tensor forward_packed(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                               const torch::Tensor& position_ids, const PackedTokens& packing);
  // One decode step with every shape fixed, so that it can be captured as a CUDA graph and replayed: tokens
  // [B,1] and positions [B,1]; bias [B,capacity] the additive attention mask over the whole cache (0 where a
  // row may attend, the dtype's lowest elsewhere); writes K/V at cache->write_index. No host synchronisation,
  // no checks that read device memory. Returns the final-normed hidden states [B,1,hidden]. Not for a model with
  // sliding layers (one bias over the cache cannot hold two masks; rollout/cuda_graph_decode.h keeps them eager).
  torch::Tensor decode_step_static(const torch::Tensor& tokens, const torch::Tensor& positions,
                                   const torch::Tensor& bias, KVCache& cache);
  // The device and dtype of the weights (the embedding's, or on a pipeline stage without it, the first layer's).
  torch::TensorOptions weight_options() const;
  torch::nn::Embedding embed_tokens{nullptr};  // null on a pipeline stage without it
  torch::nn::ModuleList layers{nullptr};  // on a pipeline stage, parameterless Identity at the other stages' layers
  std::vector<DecoderLayer> layer_list;   // this stage's layers: the config's index pp.layer(i)
  RMSNorm norm{nullptr};                  // null on a pipeline stage before the last
  torch::Tensor inv_freq;  // not a parameter or buffer (HF does not persist it)
  HFConfig config;
  TensorParallelGroup tp;
  // HF's gradient checkpointing: with grad enabled and no cache, each layer's activations are dropped in
  // forward and recomputed in backward (model/gradient_checkpointing.h). Same gradients, less memory.
  bool gradient_checkpointing = false;
  // ZeRO-3 (model/fully_sharded_model.h): when set, runs layer i of a forward without a cache in place of the
  // plain or checkpointed call, gathering the layer's sharded parameters around it. `packed` as the layer's.
  std::function<torch::Tensor(size_t layer, const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                              const torch::Tensor& mask_bias, const torch::Tensor& packed)>
      layer_runner;
  // Active: a forward without a cache takes the whole sequence (its length a multiple of the group size), runs
  // this rank's 1/sp of it (global position ids, so rotary embeddings are those of the whole sequence) and returns
  // this rank's part of the hidden states [B, T/sp, hidden].
  SequenceParallelGroup sequence_parallel;
  PipelineParallelGroup pp;
  // A stage before the last: the output of its latest forward, sent on to the next stage when the head's outputs
  // (logits, values, log-probs) are asked for.
  torch::Tensor pipeline_output;
  // Virtual stages: the sends of the latest forward between this stage's runs (parallel::send_activation's zeros),
  // added to the head's outputs so that the backward reaches them.
  std::vector<torch::Tensor> pipeline_sends;

 private:
  // The layers, then the final norm; `packed` as the layer's. The config's sliding layers attend with
  // `sliding_bias`, the others with `full_bias` (each undefined when no layer uses it).
  torch::Tensor run_layers(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                           const torch::Tensor& full_bias, const torch::Tensor& sliding_bias, KVCache* cache,
                           const torch::Tensor& packed);
};
TORCH_MODULE(Decoder);

// Rotary inverse frequencies [head_dim/2] in fp32 for the config's rope_theta and rope_scaling.
torch::Tensor rope_inv_freq(const HFConfig& config);
// The factor on cos and sin: yarn's attention_factor, 1 for the other scalings.
double rope_attention_scaling(const HFConfig& config);

struct CausalLMImpl : torch::nn::Module {
  // With an active `tp`, the config must split (model/tensor_parallel_model.h: check_tensor_parallel). With an active
  // `pp`, the head (lm_head or score) sits on the last stage only.
  CausalLMImpl(const HFConfig& config, HeadKind head = HeadKind::LM, TensorParallelGroup tp = {},
               PipelineParallelGroup pp = {});
  torch::Tensor hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              const torch::Tensor& position_ids, KVCache* cache = nullptr) {
    return model->forward(input_ids, attention_mask, position_ids, cache);
  }
  // LM logits for the given hidden states (any leading shape), in the model dtype; whole on every rank.
  torch::Tensor logits(const torch::Tensor& hidden);
  // This rank's vocabulary slice of the logits [..., V / T] (the whole logits without TP).
  torch::Tensor logits_shard(const torch::Tensor& hidden);
  // Value-head outputs [..] (the trailing 1 squeezed), in the model dtype.
  torch::Tensor values(const torch::Tensor& hidden);
  // Full LM logits [B,T,V] (tests, `verl model forward`).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                        const torch::Tensor& position_ids) {
    return logits(hidden_states(input_ids, attention_mask, position_ids));
  }
  KVCache make_cache(int64_t batch, int64_t capacity) const;

  Decoder model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when tied or for the value head
  torch::nn::Linear score{nullptr};    // value head only
  HFConfig config;
  HeadKind head;
  TensorParallelGroup tp;
  PipelineParallelGroup pp;
  // verl's use_remove_padding for response_log_probs / response_values. They run the trunk only over the columns
  // that hold a token in some row of their batch (the prompts' shared left padding and the responses' shared
  // right padding are skipped), packed (model/packed_tokens.h): projections, MLPs and the LM / value head compute
  // only the real tokens, attention their rows' columns. They return 0 at every padding position of the response
  // window, as verl's unpadded forward does; the valid positions get the same numbers up to rounding. Under Ulysses,
  // with no response token in the batch, or with a hole in a row's mask, the kept columns run unpacked.
  bool remove_padding = false;
};
TORCH_MODULE(CausalLM);

// The weights a decode step (one token per row into `cache`) multiplies by when it runs on the fused CPU kernels
// (model/decode_kernels.h): every layer's q/k/v/o and gate/up/down projections and the LM head (the input
// embedding when tied), for model::DecodeWeightPacking. Empty where the step would not run fused for this model,
// cache and the caller's grad mode (a CUDA or bf16 model, tensor parallelism, a LoRA side path, a value head).
std::vector<torch::Tensor> fused_decode_weights(CausalLM& model, const KVCache& cache);

// Sequence parallelism over `group` for the forwards without a cache: the decoder and every attention layer.
// response_log_probs / response_values then pad the sequence to a multiple of the group size and gather their
// outputs, so every rank of the group returns the whole [B,R]. Ulysses errors, naming `key`, when
// num_attention_heads is not divisible by the group size, when num_key_value_heads neither divides nor is divisible
// by it, or with tensor or pipeline parallelism; context parallelism composes with both.
void set_sequence_parallel(CausalLM& model, std::shared_ptr<parallel::Comm> group, const std::string& key,
                           SequenceSplit split = SequenceSplit::Ulysses);

// Megatron's sequence parallelism (megatron.sequence_parallel) on a tensor-parallel model, or off: the same
// outputs and gradients, with the activations outside the tensor-parallel regions cut over the group
// (TensorParallelGroup::scatter_sequence). The norms then see only this rank's tokens, so their weights' gradients
// are summed over the group. No effect on a model without tensor parallelism or on forwards with a cache.
void set_megatron_sequence_parallel(CausalLM& model, bool on);

// Sets the attention kernel of every layer (AttentionKernel::Sdpa unless a test asks for the reference).
void set_attention_kernel(CausalLM& model, AttentionKernel kernel);

// verl's position ids: clip(cumsum(attention_mask) - 1, 0) along the last dimension.
torch::Tensor position_ids_from_mask(const torch::Tensor& attention_mask);

// log softmax(logits / temperature) at `tokens`, in fp32. logits [..., V], tokens [...].
torch::Tensor token_log_probs(const torch::Tensor& logits, const torch::Tensor& tokens, double temperature = 1.0);
// Entropy of softmax(logits) over the last dimension, in fp32 (temperature applied by the caller).
torch::Tensor entropy_from_logits(const torch::Tensor& logits);

struct ResponseLogProbs {
  torch::Tensor log_probs;  // [B,R] fp32
  torch::Tensor entropy;    // [B,R] fp32, undefined unless requested
  torch::Tensor sum_pi_squared;  // [B,R] fp32 sum_v softmax(logits / temperature)_v^2, undefined unless requested
  TopKLogProbs top_k;            // [B,R,k] / [B,R,K], the query's (model/top_k_log_probs.h), empty without one
};
// verl's log-prob pass: runs the trunk over input_ids [B,P+R], applies the LM head only at positions
// [P-1, P+R-1) (the ones that predict responses [B,R]), divides by temperature, returns fp32 log-probs.
// With model->remove_padding, only over the real tokens (see there). `query` (gather_ids [B,R,K]) reads more of each
// response position's distribution, at the same temperature; under tensor parallelism the vocabulary shards are
// gathered for it (as verl's DTensor full_tensor()).
ResponseLogProbs response_log_probs(CausalLM& model, const torch::Tensor& input_ids,
                                    const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                    const torch::Tensor& responses, double temperature, bool with_entropy,
                                    bool with_sum_pi_squared = false, const TopKQuery& query = {});
// verl's critic pass: value-head outputs at positions [P-1, P+R-1) as [B,R] fp32 (model->remove_padding as above).
torch::Tensor response_values(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                              const torch::Tensor& position_ids, int64_t response_length);
// Reward-model scores [B] fp32: the value head at each row's last valid token (attention_mask == 1).
torch::Tensor reward_scores(CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                            const torch::Tensor& position_ids);

// A model of `source`'s config and head built with `tp` and `pp` (on source's device and dtype, with its train mode,
// gradient checkpointing and remove_padding), each parameter set to value(name); an undefined value leaves the
// parameter as built. The moves between whole models, TP slices and pipeline stages are made of it.
CausalLM rebuild_model(CausalLM& source, TensorParallelGroup tp, PipelineParallelGroup pp,
                       const std::function<torch::Tensor(const std::string& name)>& value);

// HF-style random init, seeded: Linear / Embedding weights ~ N(0, initializer_range), biases 0, norms 1.
// With perturb_norms_and_biases, norm weights get 1 + N(0, 0.1) and biases N(0, initializer_range), so a
// test model exercises every parameter.
void init_weights(CausalLM& model, uint64_t seed, bool perturb_norms_and_biases = false);
// A fresh value head (weight ~ N(0, initializer_range), bias 0) from its own seed.
void init_value_head(CausalLM& model, uint64_t seed);

}  // namespace verl::model
