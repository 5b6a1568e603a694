#include "verl/rollout/generator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/stopwatch.h"
#include "verl/model/decode_kernels.h"
#include "verl/model/tensor_parallel_model.h"
#include "verl/model/used_columns.h"
#include "verl/rollout/cuda_graph_decode.h"
#include "verl/runtime/cuda_device.h"

namespace verl::rollout {
namespace {
constexpr const char* kComponent = "rollout";
}

SamplingParams sampling_params_from_config(const config::RolloutConfig& rollout, bool validate,
                                           std::vector<int64_t> eos_token_ids, int64_t pad_token_id, uint64_t seed) {
  const config::SamplingConfig& s = validate ? rollout.val_kwargs : rollout.sampling;
  SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.n = s.n;
  p.do_sample = s.do_sample;
  p.max_response_length = rollout.response_length;
  p.ignore_eos = rollout.ignore_eos;
  p.calculate_log_probs = rollout.calculate_log_probs;
  p.eos_token_ids = std::move(eos_token_ids);
  p.pad_token_id = pad_token_id;
  p.seed = seed;
  p.gpu_memory_utilization = rollout.gpu_memory_utilization;
  p.max_num_seqs = rollout.max_num_seqs;
  p.enforce_eager = rollout.enforce_eager;
  return p;
}

torch::Tensor sampling_probs(const torch::Tensor& logits_in, double temperature, int64_t top_k, double top_p) {
  VERL_CHECK(temperature > 0, kComponent, "temperature must be positive for sampling, got ", temperature);
  VERL_CHECK(top_p > 0 && top_p <= 1, kComponent, "top_p must be in (0, 1], got ", top_p);
  // Dividing by 1 changes no bit; skipping it saves a pass over [batch, vocab] per decode step.
  auto logits = temperature == 1.0 ? logits_in.to(torch::kFloat32) : logits_in.to(torch::kFloat32) / temperature;
  const int64_t V = logits.size(-1);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (top_k > 0 && top_k < V) {
    auto kth = std::get<0>(logits.topk(top_k, -1)).narrow(-1, top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, neg_inf);
  }
  auto probs = torch::softmax(logits, -1);
  if (top_p < 1.0) {
    auto sorted = probs.sort(-1, /*descending=*/true);
    auto sorted_probs = std::get<0>(sorted), order = std::get<1>(sorted);
    auto mass_before = sorted_probs.cumsum(-1) - sorted_probs;  // mass of strictly higher-ranked tokens
    auto drop_sorted = mass_before >= top_p;
    auto drop = torch::zeros_like(drop_sorted).scatter(-1, order, drop_sorted);
    probs = probs.masked_fill(drop, 0.0);
    probs = probs / probs.sum(-1, true);
  }
  return probs;
}

// The decode step's LM head [rows, hidden] x [vocab, hidden]^T on the skinny kernel (model/decode_kernels.h)
// when it applies: a BLAS GEMM packs the whole vocabulary matrix for a few dozen rows each step.
torch::Tensor decode_step_logits(model::CausalLM& model, const torch::Tensor& hidden) {
  if (!model->tp.active() && model->head == model::HeadKind::LM && model::decode_kernels_apply(hidden)) {
    const auto& weight = model->lm_head ? model->lm_head->weight : model->model->embed_tokens->weight;
    if (weight.scalar_type() == torch::kFloat32) return model::skinny_linear(hidden, {{weight, {}}}).front();
  }
  return model->logits(hidden);
}

namespace {
// sample_from_probs on the CPU without materializing the fp64 cdf: per row, the same sequential fp64 running
// sum as cumsum, stopped at the first index whose cdf exceeds the target, so the same token comes out.
torch::Tensor sample_rows_cpu(const torch::Tensor& probs_in, const torch::Tensor& u_in) {
  const auto probs = probs_in.contiguous();
  const auto u = u_in.contiguous();
  const int64_t b = probs.size(0), V = probs.size(1);
  auto idx = torch::empty({b}, torch::kInt64);
  const float* p = probs.data_ptr<float>();
  const double* up = u.data_ptr<double>();
  int64_t* out = idx.data_ptr<int64_t>();
  at::parallel_for(0, b, 8, [&](int64_t begin, int64_t end) {
    std::vector<double> cdf(static_cast<size_t>(V));
    for (int64_t r = begin; r < end; ++r) {
      const float* row = p + r * V;
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) cdf[v] = sum += static_cast<double>(row[v]);
      const double target = up[r] * sum;
      // The number of cdf values <= target (cdf never decreases), as (cdf <= target).sum() counts them.
      const int64_t chosen_raw = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
      int64_t chosen = std::min(chosen_raw, V - 1);
      // Rounding may land on a zero-probability token: step back to the last positive one.
      if (!(row[chosen] > 0)) {
        for (int64_t v = V - 1; v >= 0; --v) {
          if (row[v] > 0) {
            chosen = v;
            break;
          }
        }
      }
      out[r] = chosen;
    }
  });
  return idx;
}
}  // namespace

torch::Tensor sample_from_probs(const torch::Tensor& probs, at::Generator& generator) {
  const int64_t b = probs.size(0), V = probs.size(1);
  // The uniforms come from the host generator whatever the device, so a GPU rollout draws the CPU's samples.
  // On CUDA they travel through pinned memory without blocking: no host synchronisation per token.
  auto u = torch::empty({b, 1}, torch::kFloat64).uniform_(0.0, 1.0, generator);
  if (probs.device().is_cuda()) u = u.pin_memory().to(probs.device(), /*non_blocking=*/true);
  if (probs.device().is_cpu() && probs.scalar_type() == torch::kFloat32) return sample_rows_cpu(probs, u);
  auto cdf = probs.to(torch::kFloat64).cumsum(-1);
  auto target = u * cdf.narrow(-1, V - 1, 1);
  // First index whose cdf exceeds the target; zero-probability tokens can never be chosen.
  auto idx = (cdf <= target).sum(-1).clamp_max(V - 1);
  // Guard against rounding landing on a zero-probability tail token: step back to the last positive one.
  auto chosen_p = probs.gather(-1, idx.unsqueeze(-1)).squeeze(-1);
  // On CUDA the guard runs unconditionally (a [b, V] pass is cheaper there than a host synchronisation).
  if (probs.device().is_cuda() || (chosen_p <= 0).any().item<bool>()) {
    auto positive = (probs > 0).to(torch::kInt64) * torch::arange(V, torch::TensorOptions().dtype(torch::kInt64).device(probs.device()));
    idx = torch::where(chosen_p > 0, idx, positive.argmax(-1));
  }
  return idx;
}

std::pair<torch::Tensor, torch::Tensor> left_pad(const std::vector<std::vector<int64_t>>& rows, int64_t pad_id,
                                                 int64_t prompt_length) {
  int64_t P = prompt_length;
  for (const auto& r : rows) P = std::max<int64_t>(P, r.size());
  const int64_t B = rows.size();
  auto ids = torch::full({B, P}, pad_id, torch::kInt64);
  auto mask = torch::zeros({B, P}, torch::kInt64);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t len = rows[i].size();
    if (len == 0) continue;
    ids[i].narrow(0, P - len, len).copy_(torch::tensor(rows[i], torch::kInt64));
    mask[i].narrow(0, P - len, len).fill_(1);
  }
  return {ids, mask};
}

namespace {
GenerationOutput generate_one_pass(model::CausalLM& model, const torch::Tensor& prompts,
                                   const torch::Tensor& prompt_mask, const SamplingParams& params);
}  // namespace

int64_t prompts_per_pass(const model::CausalLM& model, int64_t prompt_length, const SamplingParams& params,
                         int64_t budget_bytes) {
  const auto& c = model->config;
  const int64_t element = static_cast<int64_t>(model->model->embed_tokens->weight.element_size());
  // K and V of every layer, this rank's KV heads (model::CausalLMImpl::make_cache), for each of the n samples.
  const int64_t per_prompt = params.n * (prompt_length + params.max_response_length) * c.num_hidden_layers * 2 *
                             (c.num_key_value_heads / model->tp.size()) * c.head_dim * element;
  const int64_t fit = budget_bytes > 0 ? budget_bytes / per_prompt : 0;
  VERL_CHECK(fit >= 1, kComponent, "actor_rollout_ref.rollout.gpu_memory_utilization leaves ",
             static_cast<double>(std::max<int64_t>(budget_bytes, 0)) / (1 << 20), " MiB for the KV cache, but one prompt's ",
             params.n, " sample(s) of ", prompt_length, " + ", params.max_response_length, " positions need ",
             static_cast<double>(per_prompt) / (1 << 20), " MiB: raise gpu_memory_utilization or shorten the sequences");
  return fit;
}

GenerationOutput generate_in_passes(model::CausalLM& model, const torch::Tensor& prompts,
                                    const torch::Tensor& prompt_mask, const SamplingParams& params,
                                    int64_t prompts_per_pass) {
  VERL_CHECK(prompts_per_pass >= 1, kComponent, "prompts per pass must be at least 1, got ", prompts_per_pass);
  const int64_t B = prompts.size(0);
  if (prompts_per_pass >= B) return generate_one_pass(model, prompts, prompt_mask, params);
  std::vector<GenerationOutput> passes;
  SamplingParams pass_params = params;
  for (int64_t start = 0; start < B; start += prompts_per_pass) {
    const int64_t count = std::min(prompts_per_pass, B - start);
    pass_params.seed = params.seed + static_cast<uint64_t>(passes.size());  // each pass its own stream
    passes.push_back(generate_one_pass(model, prompts.narrow(0, start, count), prompt_mask.narrow(0, start, count),
                                       pass_params));
  }
  GenerationOutput out;
  auto cat = [&](torch::Tensor GenerationOutput::*field) {
    std::vector<torch::Tensor> parts;
    for (const auto& pass : passes) {
      if ((pass.*field).defined()) parts.push_back(pass.*field);
    }
    out.*field = parts.empty() ? torch::Tensor() : torch::cat(parts, 0);
  };
  for (auto field : {&GenerationOutput::prompts, &GenerationOutput::responses, &GenerationOutput::input_ids,
                     &GenerationOutput::attention_mask, &GenerationOutput::position_ids,
                     &GenerationOutput::response_mask, &GenerationOutput::rollout_log_probs}) {
    cat(field);
  }
  for (const auto& pass : passes) {
    out.response_lengths.insert(out.response_lengths.end(), pass.response_lengths.begin(), pass.response_lengths.end());
    out.prefill_seconds += pass.prefill_seconds;
    out.prefill_cpu_seconds += pass.prefill_cpu_seconds;
    out.decode_seconds += pass.decode_seconds;
    out.decode_cpu_seconds += pass.decode_cpu_seconds;
    out.decode_steps += pass.decode_steps;
  }
  return out;
}

GenerationOutput generate(model::CausalLM& model, const torch::Tensor& prompts, const torch::Tensor& prompt_mask,
                          const SamplingParams& params) {
  const auto device = model->model->embed_tokens->weight.device();
  // max_num_seqs rows at once: prompts per pass (every prompt brings its n rows; at least one prompt).
  const int64_t seqs_cap = params.max_num_seqs > 0 ? std::max<int64_t>(1, params.max_num_seqs / std::max<int64_t>(1, params.n)) : 0;
  if (!device.is_cuda() || params.gpu_memory_utilization <= 0 || prompts.dim() != 2) {
    if (seqs_cap > 0 && prompts.dim() == 2 && prompts.size(0) > seqs_cap) {
      return generate_in_passes(model, prompts, prompt_mask, params, seqs_cap);
    }
    return generate_one_pass(model, prompts, prompt_mask, params);
  }
  // What this process may still fill: its share of the device, less what it holds now (weights, optimizer state).
  const int index = device.index();
  const double share = params.gpu_memory_utilization * static_cast<double>(runtime::cuda_device_info(index).total_memory_bytes);
  const int64_t budget = static_cast<int64_t>(share) - runtime::cuda_memory_in_use(index);
  int64_t per_pass = prompts_per_pass(model, prompts.size(1), params, budget);
  if (seqs_cap > 0) per_pass = std::min(per_pass, seqs_cap);
  if (model->tp.active()) {
    // The TP ranks of one copy must decode in lockstep: all take the smallest pass.
    torch::Tensor negated = torch::tensor({-per_pass}, torch::kInt64);
    model->tp.comm->all_reduce(negated, parallel::ReduceOp::Max);
    per_pass = -negated.item<int64_t>();
  }
  return generate_in_passes(model, prompts, prompt_mask, params, per_pass);
}

namespace {
GenerationOutput generate_one_pass(model::CausalLM& model, const torch::Tensor& prompts,
                                   const torch::Tensor& prompt_mask, const SamplingParams& params) {
  VERL_CHECK(prompts.dim() == 2 && prompt_mask.sizes() == prompts.sizes(), kComponent,
             "prompts and prompt_mask must both be [batch, prompt_length]");
  VERL_CHECK(params.n >= 1, kComponent, "n must be at least 1, got ", params.n);
  VERL_CHECK(params.max_response_length >= 1, kComponent, "max_response_length must be at least 1");
  const bool greedy = params.greedy();
  if (!greedy) {
    VERL_CHECK(params.temperature > 0, kComponent, "temperature must be >= 0, got ", params.temperature);
  }
  torch::NoGradGuard no_grad;
  const auto device = model->model->embed_tokens->weight.device();
  const int64_t B0 = prompts.size(0), P = prompts.size(1), R = params.max_response_length;
  const int64_t N = B0 * params.n;
  auto pmask = prompt_mask.to(torch::kInt64).to(device);
  auto pids = prompts.to(torch::kInt64).to(device);
  VERL_CHECK((pmask.sum(-1) > 0).all().item<bool>(), kComponent, "every prompt needs at least one token");
  auto prompt_pos = model::position_ids_from_mask(pmask);
  auto gen = at::detail::createCPUGenerator(params.seed);
  // The columns that are padding in every prompt (verl pads them to data.max_prompt_length; vLLM never sees the
  // padding) are left out of the prefill and the KV cache: Pk columns from `lead`. The outputs keep width P.
  const int64_t lead = model::used_columns(pmask).begin, Pk = P - lead;
  const auto kept = [&](const torch::Tensor& t) { return t.narrow(1, lead, Pk); };

  Stopwatch prefill_watch;
  // Prefill the distinct prompts once, then give each of the n samples its own copy of the cache rows.
  model::KVCache cache = model->make_cache(B0, Pk + R);
  auto hidden = model->hidden_states(kept(pids), kept(pmask), kept(prompt_pos), &cache);
  auto last_logits = model->logits(hidden.narrow(1, Pk - 1, 1).squeeze(1)).to(torch::kFloat32);  // [B0,V]
  auto rows = torch::arange(B0, torch::TensorOptions().dtype(torch::kInt64).device(device))
                  .repeat_interleave(params.n);
  if (params.n > 1) {
    cache.select_rows(rows);
    last_logits = last_logits.index_select(0, rows);
  }
  auto out_prompts = pids.index_select(0, rows);
  auto out_pmask = pmask.index_select(0, rows);
  auto out_ppos = prompt_pos.index_select(0, rows);

  auto responses = torch::full({N, R}, params.pad_token_id, torch::TensorOptions().dtype(torch::kInt64).device(device));
  auto log_probs = torch::zeros({N, R}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  // Response lengths stay on the device: the loop's only host synchronisation is the finished-rows check.
  auto lengths_t = torch::zeros({N}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  // Active rows (indices into the N outputs) and their attention mask over cache positions.
  auto active = torch::arange(N, torch::TensorOptions().dtype(torch::kInt64).device(device));
  const auto cache_pmask = kept(out_pmask);
  auto mask_buf = torch::cat({cache_pmask, torch::ones({N, R}, out_pmask.options())}, 1);  // [a, Pk+R]
  auto next_pos = out_ppos.narrow(1, P - 1, 1) + 1;                                      // [a,1]
  torch::Tensor eos;
  if (!params.eos_token_ids.empty())
    eos = torch::tensor(params.eos_token_ids, torch::kInt64).to(device);
  auto logits = last_logits;
  runtime::synchronize(device);  // the timers measure the device's work, not the launches
  const double prefill_seconds = prefill_watch.wall_seconds(), prefill_cpu_seconds = prefill_watch.cpu_seconds();
  Stopwatch decode_watch;
  int64_t decode_steps = 0;
  // On CUDA the step is captured once as a graph and replayed (rollout/cuda_graph_decode.h).
  std::optional<CudaGraphDecode> graph;
  if (R > 1 && !params.enforce_eager && cuda_graph_decode_applies(model, device)) graph.emplace(model, cache, cache_pmask, next_pos);
  // Otherwise, on the CPU, the decode step's weights packed in place for the broadcast kernel
  // (model/decode_kernels.h), from after the prefill to the end of this loop: nothing else reads the model meanwhile.
  std::optional<model::DecodeWeightPacking> packing;
  if (R > 1 && !graph && device.is_cpu()) packing.emplace(model::fused_decode_weights(model, cache));
  for (int64_t t = 0; t < R; ++t) {
    torch::Tensor tokens;
    if (greedy) {
      tokens = logits.argmax(-1);
    } else {
      tokens = sample_from_probs(sampling_probs(logits, params.temperature, params.top_k, params.top_p), gen);
    }
    if (model->tp.active()) model::check_same_tokens_on_tensor_parallel_ranks(tokens, *model->tp.comm, t);
    responses.index_put_({active, t}, tokens);
    if (params.calculate_log_probs) {
      const double temp = greedy ? 1.0 : params.temperature;
      log_probs.index_put_({active, t}, model::token_log_probs(logits, tokens, temp));
    }
    lengths_t.index_fill_(0, active, t + 1);
    if (t + 1 == R) break;
    // With ignore_eos (or no eos ids) no row finishes early, and the step needs no synchronisation at all.
    const bool can_finish = eos.defined() && !params.ignore_eos;
    torch::Tensor finished;
    if (can_finish) finished = torch::isin(tokens, eos);
    if (can_finish && finished.any().item<bool>()) {
      auto keep = finished.logical_not().nonzero().squeeze(-1);
      if (keep.numel() == 0) break;
      active = active.index_select(0, keep);
      tokens = tokens.index_select(0, keep);
      if (!graph) {  // the graph keeps every row (fixed shapes); the eager step compacts the finished ones away
        mask_buf = mask_buf.index_select(0, keep);
        next_pos = next_pos.index_select(0, keep);
        cache.select_rows(keep);
      }
    }
    if (graph) {
      logits = graph->step(active, tokens, t);
    } else {
      auto step_hidden = model->hidden_states(tokens.unsqueeze(1), mask_buf.narrow(1, 0, Pk + t + 1), next_pos, &cache);
      logits = decode_step_logits(model, step_hidden.squeeze(1)).to(torch::kFloat32);
      next_pos = next_pos + 1;
    }
    ++decode_steps;
  }
  runtime::synchronize(device);
  const double decode_seconds = decode_watch.wall_seconds(), decode_cpu_seconds = decode_watch.cpu_seconds();

  GenerationOutput out;
  out.prompts = out_prompts;
  out.responses = responses;
  auto resp_mask = (torch::arange(R, torch::TensorOptions().dtype(torch::kInt64).device(device)).unsqueeze(0) <
                    lengths_t.unsqueeze(1))
                       .to(torch::kInt64);
  out.response_mask = resp_mask;
  out.attention_mask = torch::cat({out_pmask, resp_mask}, 1);
  out.input_ids = torch::cat({out_prompts, responses}, 1);
  auto resp_pos = out_ppos.narrow(1, P - 1, 1) +
                  torch::arange(1, R + 1, torch::TensorOptions().dtype(torch::kInt64).device(device)).unsqueeze(0);
  out.position_ids = torch::cat({out_ppos, resp_pos}, 1);
  if (params.calculate_log_probs) out.rollout_log_probs = log_probs * resp_mask.to(torch::kFloat32);
  auto lengths_cpu = lengths_t.to(torch::kCPU);
  out.response_lengths.assign(lengths_cpu.data_ptr<int64_t>(), lengths_cpu.data_ptr<int64_t>() + N);
  out.prefill_seconds = prefill_seconds;
  out.prefill_cpu_seconds = prefill_cpu_seconds;
  out.decode_seconds = decode_seconds;
  out.decode_cpu_seconds = decode_cpu_seconds;
  out.decode_steps = decode_steps;
  return out;
}
}  // namespace

}  // namespace verl::rollout
