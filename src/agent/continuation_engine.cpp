#include "verl/agent/continuation_engine.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <optional>

#include "verl/common/error.h"
#include "verl/model/decode_kernels.h"
#include "verl/model/tensor_parallel_model.h"

namespace verl::agent {

namespace {
constexpr const char* kContinuationEngineComponent = "multi_turn";
}

ContinuationEngine::ContinuationEngine(model::CausalLM& model, const rollout::SamplingParams& params)
    : model_(model), params_(params), generator_(at::detail::createCPUGenerator(params.seed)) {
  VERL_CHECK(params.greedy() || params.temperature > 0, kContinuationEngineComponent, "temperature must be >= 0, got ",
             params.temperature);
}

ContinuationEngine::~ContinuationEngine() = default;

std::vector<ContinueResult> ContinuationEngine::continue_batch(std::vector<ContinueRequest>& requests) {
  for (const auto& r : requests) {
    VERL_CHECK(r.cache != nullptr && !r.new_tokens.empty() && r.max_new_tokens >= 1, kContinuationEngineComponent,
               "a continuation needs a cache, at least one new token and a budget of at least one token");
  }
  std::vector<ContinueResult> results;
  results.reserve(requests.size());
  // max_num_seqs rows at a time (vLLM's concurrent sequences).
  const size_t per_batch = params_.max_num_seqs > 0 ? static_cast<size_t>(params_.max_num_seqs) : requests.size();
  for (size_t start = 0; start < requests.size(); start += std::max<size_t>(per_batch, 1)) {
    std::vector<ContinueRequest*> batch;
    for (size_t i = start; i < std::min(requests.size(), start + per_batch); ++i) batch.push_back(&requests[i]);
    auto part = run_batch(batch);
    for (auto& r : part) results.push_back(std::move(r));
  }
  return results;
}

std::vector<ContinueResult> ContinuationEngine::run_batch(std::vector<ContinueRequest*>& requests) {
  torch::NoGradGuard no_grad;
  auto& model = model_;
  const auto device = model->model->embed_tokens->weight.device();
  const int64_t n = static_cast<int64_t>(requests.size());
  int64_t past = 0, chunk = 0, budget = 0;
  for (const auto* r : requests) {
    past = std::max(past, r->cache->length);
    chunk = std::max<int64_t>(chunk, static_cast<int64_t>(r->new_tokens.size()));
    budget = std::max(budget, r->max_new_tokens);
  }
  const int64_t capacity = past + chunk + budget;

  // The saved caches side by side, right-aligned at `past`; the new tokens right-aligned at past + chunk.
  model::KVCache cache = model->make_cache(n, capacity);
  auto mask = torch::zeros({n, capacity}, torch::kInt64);
  auto ids = torch::full({n, chunk}, params_.pad_token_id, torch::kInt64);
  auto positions = torch::zeros({n, chunk}, torch::kInt64);
  std::vector<int64_t> next_position(n), budgets(n);
  for (int64_t i = 0; i < n; ++i) {
    const SequenceCache& saved = *requests[i]->cache;
    const int64_t len = saved.length;
    const int64_t c = static_cast<int64_t>(requests[i]->new_tokens.size());
    VERL_CHECK(len + c + requests[i]->max_new_tokens <= model->config.max_position_embeddings,
               kContinuationEngineComponent, "a conversation of ", len + c + requests[i]->max_new_tokens,
               " tokens exceeds the model's ", "max_position_embeddings (", model->config.max_position_embeddings, ")");
    for (size_t l = 0; len > 0 && l < cache.k.size(); ++l) {
      cache.k[l][i].narrow(1, past - len, len).copy_(saved.k[l]);
      cache.v[l][i].narrow(1, past - len, len).copy_(saved.v[l]);
    }
    mask[i].narrow(0, past - len, len).fill_(1);
    mask[i].narrow(0, past + chunk - c, c).fill_(1);
    ids[i].narrow(0, chunk - c, c).copy_(torch::tensor(requests[i]->new_tokens, torch::kInt64));
    positions[i].narrow(0, chunk - c, c).copy_(torch::arange(len, len + c, torch::kInt64));
    next_position[i] = len + c;
    budgets[i] = requests[i]->max_new_tokens;
    prefill_tokens_ += c;
  }
  mask.narrow(1, past + chunk, budget).fill_(1);  // decode positions: fed by every row still decoding
  mask = mask.to(device);
  cache.length = past;
  auto hidden = model->hidden_states(ids.to(device), mask.narrow(1, 0, past + chunk), positions.to(device), &cache);
  auto logits = model->logits(hidden.narrow(1, chunk - 1, 1).squeeze(1)).to(torch::kFloat32);

  // The decode steps' weights packed in place (model/decode_kernels.h) after this turn's prefill, unpacked when the
  // turn ends: the next turn's prefill reads them as stored.
  std::optional<model::DecodeWeightPacking> packing;
  if (budget > 1 && device.is_cpu()) packing.emplace(model::fused_decode_weights(model, cache));

  std::vector<ContinueResult> results(n);
  std::vector<int64_t> active(n);  // request index of each cache row
  for (int64_t i = 0; i < n; ++i) active[i] = i;
  auto next_pos = torch::tensor(next_position, torch::kInt64).to(device).unsqueeze(1);
  const bool greedy = params_.greedy();
  const double temperature = greedy ? 1.0 : params_.temperature;
  const std::vector<int64_t>& eos = params_.eos_token_ids;
  const std::vector<int64_t>& stop = params_.stop_token_ids;

  // Keeps the keys and values of cache row `row` at the positions it fed, for the conversation's next call.
  auto save_row = [&](int64_t row, int64_t request) {
    auto fed = mask[row].narrow(0, 0, cache.length).nonzero().squeeze(-1);
    SequenceCache& saved = *requests[request]->cache;
    saved.k.resize(cache.k.size());
    saved.v.resize(cache.v.size());
    for (size_t l = 0; l < cache.k.size(); ++l) {
      saved.k[l] = cache.k[l][row].index_select(1, fed);
      saved.v[l] = cache.v[l][row].index_select(1, fed);
    }
    saved.length = fed.size(0);
  };

  for (int64_t t = 0; t < budget; ++t) {
    torch::Tensor tokens = greedy ? logits.argmax(-1)
                                  : rollout::sample_from_probs(rollout::sampling_probs(logits, params_.temperature,
                                                                                       params_.top_k, params_.top_p),
                                                               generator_);
    // Under tensor parallelism every rank samples from the same gathered logits with the same seed (the group's
    // conversations are driven by its first rank: agent/tensor_parallel_turns.h); a rank that drifted is an error.
    if (model->tp.active()) model::check_same_tokens_on_tensor_parallel_ranks(tokens, *model->tp.comm, t);
    // One copy to the host per step (the eos and budget checks need the tokens there), read through pointers.
    torch::Tensor lps;
    if (params_.calculate_log_probs) {
      lps = model::token_log_probs(logits, tokens, temperature).to(torch::kCPU, torch::kFloat32).contiguous();
    }
    const auto tokens_cpu = tokens.to(torch::kCPU).contiguous();
    const int64_t* token_at = tokens_cpu.data_ptr<int64_t>();
    const float* log_prob_at = lps.defined() ? lps.data_ptr<float>() : nullptr;
    std::vector<int64_t> keep;
    for (int64_t row = 0; row < static_cast<int64_t>(active.size()); ++row) {
      const int64_t req = active[row];
      const int64_t token = token_at[row];
      ContinueResult& out = results[req];
      out.tokens.push_back(token);
      if (log_prob_at) out.log_probs.push_back(log_prob_at[row]);
      // As vLLM: ignore_eos ignores the eos ids, never the stop ids.
      const bool at_eos = (!params_.ignore_eos && std::find(eos.begin(), eos.end(), token) != eos.end()) ||
                          std::find(stop.begin(), stop.end(), token) != stop.end();
      out.ended_with_eos = at_eos;
      if (at_eos || static_cast<int64_t>(out.tokens.size()) >= budgets[req]) {
        save_row(row, req);
      } else {
        keep.push_back(row);
      }
    }
    if (keep.empty()) break;
    if (keep.size() != active.size()) {
      auto index = torch::tensor(keep, torch::kInt64).to(device);
      cache.select_rows(index);
      mask = mask.index_select(0, index);
      next_pos = next_pos.index_select(0, index);
      tokens = tokens.index_select(0, index);
      std::vector<int64_t> still;
      for (int64_t row : keep) still.push_back(active[row]);
      active = std::move(still);
    }
    auto step = model->hidden_states(tokens.unsqueeze(1), mask.narrow(1, 0, cache.length + 1), next_pos, &cache);
    logits = rollout::decode_step_logits(model, step.squeeze(1)).to(torch::kFloat32);
    next_pos = next_pos + 1;
  }
  return results;
}

}  // namespace verl::agent
