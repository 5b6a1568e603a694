#include "verl/bench/generate_bench.h"

#include <torch/torch.h>

#include <chrono>
#include <optional>
#include <sstream>

#include "verl/bench/bench_report.h"
#include "verl/bench/model_flops.h"
#include "verl/bench/model_presets.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/model/lora.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"
#include "verl/rollout/generator.h"
#include "verl/runtime/cuda_device.h"

namespace verl::bench {
namespace {

constexpr const char* kGenerateBenchComponent = "bench";

struct NamedModel {
  std::string name;
  model::CausalLM model{nullptr};
};

torch::ScalarType parse_dtype(const std::string& text) {
  if (text == "fp32" || text == "float32") return torch::kFloat32;
  if (text == "bf16" || text == "bfloat16") return torch::kBFloat16;
  VERL_FAIL(kGenerateBenchComponent, "--dtype: expected fp32 or bf16, got '", text, "'");
}

NamedModel build_model(const std::string& preset_or_dir, bool is_dir, uint64_t seed) {
  NamedModel m;
  if (is_dir) {
    m.name = preset_or_dir;
    m.model = model::load_model(preset_or_dir);
  } else {
    m.name = preset_or_dir;
    m.model = model::CausalLM(model_preset(preset_or_dir));
    model::init_weights(m.model, seed);
  }
  m.model->eval();
  return m;
}

rollout::SamplingParams sampling(const model::HFConfig& c, const GenerateBenchOptions& o, int64_t response_length) {
  rollout::SamplingParams p;
  p.do_sample = !o.greedy;
  p.temperature = 1.0;
  p.n = 1;
  p.max_response_length = response_length;
  p.eos_token_ids = c.eos_token_ids;
  p.pad_token_id = c.pad_token_id.value_or(0);
  p.ignore_eos = true;
  p.seed = o.seed;
  return p;
}

// The adapters' B drawn N(0, 0.02^2) (PEFT starts it at zero, which would leave the side path adding zeros).
void add_bench_lora(model::CausalLM& model, const GenerateBenchOptions& o) {
  model::LoraSpec spec;
  spec.rank = o.lora_rank;
  spec.alpha = o.lora_alpha;
  model::add_lora(model, spec, o.seed + 2);
  auto gen = at::detail::createCPUGenerator(o.seed + 3);
  for (auto& [name, tensor] : model::lora_named_parameters(model)) {
    if (name.find("lora_B") == std::string::npos) continue;
    tensor.copy_(torch::randn(tensor.sizes(), gen, torch::kFloat32).mul_(0.02));
  }
}

// One generation in `mode`; the merge and unmerge timed into the prefill (where the rollout pays them).
rollout::GenerationOutput generate_in_mode(model::CausalLM& model, const std::string& mode,
                                           const torch::Tensor& prompts, const torch::Tensor& mask,
                                           const rollout::SamplingParams& params, double* merge_seconds) {
  using Clock = std::chrono::steady_clock;
  *merge_seconds = 0;
  if (mode == "off") {
    std::optional<model::AdapterDisabled> off;
    if (model::lora_state(model)) off.emplace(model);
    return rollout::generate(model, prompts, mask, params);
  }
  if (mode == "side") return rollout::generate(model, prompts, mask, params);
  const auto t0 = Clock::now();
  std::optional<model::MergedAdapter> merged(std::in_place, model);
  const auto t1 = Clock::now();
  rollout::GenerationOutput out = rollout::generate(model, prompts, mask, params);
  const auto t2 = Clock::now();
  merged.reset();
  *merge_seconds = std::chrono::duration<double>((t1 - t0) + (Clock::now() - t2)).count();
  out.prefill_seconds += *merge_seconds;
  return out;
}

}  // namespace

GenerateBenchResult run_generate_bench(const GenerateBenchOptions& o) {
  VERL_CHECK(!o.batches.empty(), kGenerateBenchComponent, "--batches needs at least one batch size");
  for (int64_t b : o.batches) VERL_CHECK(b > 0, kGenerateBenchComponent, "batch sizes must be positive, got ", b);
  VERL_CHECK(o.prompt_length > 0, kGenerateBenchComponent, "--prompt-length must be positive, got ", o.prompt_length);
  VERL_CHECK(o.response_length >= 2, kGenerateBenchComponent,
             "--response-length must be at least 2 (one decode step), got ", o.response_length);
  VERL_CHECK(o.repeats >= 1, kGenerateBenchComponent, "--repeats must be at least 1, got ", o.repeats);
  VERL_CHECK(o.lora_rank >= 0, kGenerateBenchComponent, "--lora-rank must be 0 (off) or positive, got ", o.lora_rank);
  VERL_CHECK(o.lora_rank == 0 || !o.lora_modes.empty(), kGenerateBenchComponent,
             "--lora-modes needs at least one mode");
  for (const auto& mode : o.lora_modes) {
    VERL_CHECK(mode == "off" || mode == "merged" || mode == "side", kGenerateBenchComponent,
               "--lora-modes: expected off, merged or side, got '", mode, "'");
  }
  const std::vector<std::string> modes = o.lora_rank > 0 ? o.lora_modes : std::vector<std::string>{"off"};
  const std::vector<std::string> models = o.model_dir.empty() ? o.models : std::vector<std::string>{o.model_dir};
  VERL_CHECK(!models.empty(), kGenerateBenchComponent, "no model to run (--models or --model-dir)");
  if (o.model_dir.empty()) {
    for (const auto& name : models) model_preset(name);  // unknown names fail before any measurement
  }

  const torch::Device device = runtime::parse_device(o.device, "--device");
  const torch::ScalarType dtype = parse_dtype(o.dtype);
  const int64_t dtype_bytes = dtype == torch::kBFloat16 ? 2 : 4;

  torch::NoGradGuard no_grad;
  GenerateBenchResult result;
  result.options = o;
  RooflineOptions roofline_options = o.roofline;
  roofline_options.device = o.device;
  roofline_options.bf16 = roofline_options.bf16 || dtype == torch::kBFloat16;
  result.roofline = measure_roofline(roofline_options);

  for (const auto& name : models) {
    VERL_LOG(Info, kGenerateBenchComponent) << "building " << name;
    NamedModel m = build_model(name, !o.model_dir.empty(), o.seed);
    if (o.lora_rank > 0) add_bench_lora(m.model, o);
    m.model->to(device, dtype);
    const model::HFConfig& c = m.model->config;
    auto gen = at::detail::createCPUGenerator(o.seed + 1);
    for (int64_t B : o.batches) {
      const int64_t P = o.prompt_length, R = o.response_length;
      // Token ids below the special ids at the top of the vocabulary.
      auto prompts = torch::randint(0, std::max<int64_t>(1, c.vocab_size - 3), {B, P}, gen, torch::kInt64);
      auto mask = torch::ones({B, P}, torch::kInt64);
      for (const auto& mode : modes) {
        double merge_seconds = 0;
        generate_in_mode(m.model, mode, prompts, mask, sampling(c, o, 2), &merge_seconds);  // warm-up: caches, pools
        if (device.is_cuda()) runtime::cuda_reset_memory_peak(device.index());
        GenerateBenchRow row;
        row.lora = mode;
        row.model = m.name;
        row.params = total_params(c);
        row.batch = B;
        row.prompt_length = P;
        row.response_length = R;
        for (int r = 0; r < o.repeats; ++r) {
          auto out = generate_in_mode(m.model, mode, prompts, mask, sampling(c, o, R), &merge_seconds);
          row.responses = out.responses;
          VERL_ASSERT(out.decode_steps == R - 1, kGenerateBenchComponent, "expected ", R - 1, " decode steps, got ",
                      out.decode_steps);
          row.prefill.repeat_seconds.push_back(out.prefill_seconds);
          row.decode.repeat_seconds.push_back(out.decode_seconds);
          if (r == 0 || out.prefill_seconds < row.prefill.seconds) {
            row.prefill.seconds = out.prefill_seconds;
            row.prefill.cpu_seconds = out.prefill_cpu_seconds;
            row.merge_seconds = merge_seconds;
          }
          if (r == 0 || out.decode_seconds < row.decode.seconds) {
            row.decode.seconds = out.decode_seconds;
            row.decode.cpu_seconds = out.decode_cpu_seconds;
          }
        }
        if (device.is_cuda()) row.peak_memory_bytes = runtime::cuda_memory_peak(device.index()).allocated_bytes;
        const double element = static_cast<double>(dtype_bytes);
        row.prefill.tokens = static_cast<double>(B * P);
        row.prefill.flops = prefill_flops(c, B, P);
        // Prefill reads the weights once and writes the prompt's K/V.
        row.prefill.bytes = (trunk_matmul_params(c) + lm_head_params(c)) * element +
                            static_cast<double>(B * P) * 2.0 * static_cast<double>(c.num_hidden_layers * c.num_key_value_heads * c.head_dim) * element;
        row.decode.tokens = static_cast<double>(B * (R - 1));
        row.decode.flops = decode_flops(c, B, P, R - 1);
        row.decode.bytes = decode_bytes(c, B, P, R - 1, dtype_bytes);
        VERL_LOG(Info, kGenerateBenchComponent)
            << name << " lora " << mode << " batch " << B << ": prefill " << format_number(row.prefill.tokens_per_s())
            << " tok/s, decode " << format_number(row.decode.tokens_per_s()) << " tok/s";
        result.rows.push_back(row);
      }
    }
  }
  return result;
}

namespace {

nlohmann::json phase_json(const GeneratePhase& p, double peak, double bandwidth) {
  const RooflineBound bound = roofline_bound(p.flops, p.bytes, peak, bandwidth);
  const double bound_tps = bound.seconds() > 0 ? p.tokens / bound.seconds() : 0;
  return {{"seconds", p.seconds},
          {"repeat_seconds", p.repeat_seconds},
          {"cpu_seconds", p.cpu_seconds},
          {"tokens", p.tokens},
          {"tokens_per_s", p.tokens_per_s()},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"achieved_flops_per_s", p.seconds > 0 ? p.flops / p.seconds : 0},
          {"compute_bound_tokens_per_s", bound.compute_seconds > 0 ? p.tokens / bound.compute_seconds : 0},
          {"memory_bound_tokens_per_s", bound.memory_seconds > 0 ? p.tokens / bound.memory_seconds : 0},
          {"bound_tokens_per_s", bound_tps},
          {"bound_limit", bound.limit()},
          {"fraction_of_bound", bound_tps > 0 ? p.tokens_per_s() / bound_tps : 0}};
}

// A bf16 model is measured against the bf16 GEMM peak, an fp32 one against the fp32 peak.
double compute_peak(const GenerateBenchResult& r) {
  return r.options.dtype == "bf16" && r.roofline.bf16_gemm_peak_flops > 0 ? r.roofline.bf16_gemm_peak_flops
                                                                          : r.roofline.gemm_peak_flops;
}

}  // namespace

nlohmann::json to_json(const GenerateBenchResult& r) {
  const double peak = compute_peak(r), bw = r.roofline.bandwidth_bytes_per_s;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"model", row.model},
                    {"params", row.params},
                    {"batch", row.batch},
                    {"lora", row.lora},
                    {"merge_seconds", row.merge_seconds},
                    {"prompt_length", row.prompt_length},
                    {"response_length", row.response_length},
                    {"prefill", phase_json(row.prefill, peak, bw)},
                    {"decode", phase_json(row.decode, peak, bw)},
                    {"peak_memory_bytes", row.peak_memory_bytes}});
  }
  return {{"bench", "generate"},
          {"timestamp", utc_timestamp()},
          {"sampling", r.options.greedy ? "greedy" : "temperature 1"},
          {"device", r.roofline.device},
          {"dtype", r.options.dtype},
          {"lora_rank", r.options.lora_rank},
          {"lora_alpha", r.options.lora_alpha},
          {"roofline", to_json(r.roofline)},
          {"rows", rows}};
}

std::string format_generate_bench(const GenerateBenchResult& r) {
  std::ostringstream out;
  out << format_roofline(r.roofline) << "\n";
  const double peak = compute_peak(r), bw = r.roofline.bandwidth_bytes_per_s;
  const bool gpu = r.roofline.device != "cpu";
  std::vector<std::vector<std::string>> rows = {{"model", "batch", "phase", "tokens/s", "bound tok/s", "limit",
                                                 "% of bound", "compute tok/s", "memory tok/s", "wall s",
                                                 gpu ? "peak mem" : "cpu/wall"}};
  for (const auto& row : r.rows) {
    for (const auto* phase : {&row.prefill, &row.decode}) {
      const auto j = phase_json(*phase, peak, bw);
      const std::string model =
          r.options.lora_rank == 0 ? row.model : row.model + " lora " + row.lora;
      rows.push_back({model, std::to_string(row.batch), phase == &row.prefill ? "prefill" : "decode",
                      format_number(phase->tokens_per_s()), format_number(j["bound_tokens_per_s"].get<double>()),
                      j["bound_limit"].get<std::string>(),
                      format_number(100.0 * j["fraction_of_bound"].get<double>()),
                      format_number(j["compute_bound_tokens_per_s"].get<double>()),
                      format_number(j["memory_bound_tokens_per_s"].get<double>()), format_number(phase->seconds),
                      gpu ? format_si(static_cast<double>(row.peak_memory_bytes), "B")
                          : format_number(phase->seconds > 0 ? phase->cpu_seconds / phase->seconds : 0)});
    }
  }
  out << format_table(rows);
  out << "prompt " << r.options.prompt_length << " tokens, " << r.options.response_length
      << " response tokens per row (" << r.options.response_length - 1 << " decode steps), "
      << (r.options.greedy ? "greedy" : "sampling at temperature 1") << ", " << r.options.dtype << " on "
      << r.roofline.device << ", best of " << r.options.repeats
      << " repeats";
  if (r.options.lora_rank > 0) {
    out << "; LoRA r=" << r.options.lora_rank << " alpha=" << r.options.lora_alpha
        << " all-linear (merged: prefill includes the merge and unmerge)";
  }
  out << "\n";
  return out.str();
}

}  // namespace verl::bench
