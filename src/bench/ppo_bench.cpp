#include "verl/bench/ppo_bench.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "verl/algo/core_algos.h"
#include "verl/bench/bench_report.h"
#include "verl/bench/model_flops.h"
#include "verl/bench/model_presets.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/common/strings.h"
#include "verl/config/config_loader.h"
#include "verl/model/transformer.h"
#include "verl/model/weights.h"
#include "verl/runtime/cuda_device.h"
#include "verl/runtime/resident_memory.h"
#include "verl/trainer/ppo_trainer.h"
#include "verl/workers/actor_rollout_ref_worker.h"
#include "verl/workers/critic_worker.h"
#include "verl/workers/worker_device.h"

namespace verl::bench {
namespace {

namespace fs = std::filesystem;
using protocol::DataProto;
constexpr const char* kPpoBenchComponent = "bench";

// A folder under the system temp dir, removed with everything in it when this goes out of scope.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "verl-bench-XXXXXX").string();
    VERL_CHECK(mkdtemp(pattern.data()) != nullptr, kPpoBenchComponent, "cannot create a temporary folder under ",
               fs::temp_directory_path().string());
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Ends response i after lengths[i] tokens, as an EOS there would (the rollout's right padding after it): the
// responses and input ids hold pad_id past it, the attention and response masks 0.
void end_responses(DataProto& batch, const std::vector<int64_t>& lengths, int64_t prompt_length, int64_t pad_id) {
  auto& b = batch.batch;
  for (size_t i = 0; i < lengths.size(); ++i) {
    const auto row = static_cast<int64_t>(i);
    const int64_t R = b.at("responses").size(1), cut = R - lengths[i];
    b.at("responses")[row].narrow(0, lengths[i], cut).fill_(pad_id);
    b.at("response_mask")[row].narrow(0, lengths[i], cut).zero_();
    b.at("input_ids")[row].narrow(0, prompt_length + lengths[i], cut).fill_(pad_id);
    b.at("attention_mask")[row].narrow(0, prompt_length + lengths[i], cut).zero_();
  }
}

template <typename Fn>
PpoPhase timed(const std::string& name, double tokens, double flops, const torch::Device& device, Fn&& fn) {
  VERL_LOG(Info, kPpoBenchComponent) << "phase " << name;
  const bool window = device.is_cpu() && runtime::reset_peak_resident();
  Stopwatch watch;
  fn();
  runtime::synchronize(device);  // a phase ends when the device's work does
  PpoPhase p;
  if (window) p.peak_rss_bytes = runtime::peak_resident_bytes();
  p.name = name;
  p.seconds = watch.wall_seconds();
  p.cpu_seconds = watch.cpu_seconds();
  p.tokens = tokens;
  p.flops = flops;
  return p;
}

}  // namespace

PpoBenchResult run_ppo_bench(const PpoBenchOptions& o) {
  VERL_CHECK(o.batch_size > 0 && o.n > 0, kPpoBenchComponent, "--batch-size and --n must be positive");
  VERL_CHECK(o.prompt_length > 0 && o.response_length > 1, kPpoBenchComponent,
             "--prompt-length must be positive and --response-length at least 2");
  VERL_CHECK(o.prompt_tokens >= 0 && o.prompt_tokens <= o.prompt_length, kPpoBenchComponent, "--prompt-tokens (",
             o.prompt_tokens, ") must be in [0, --prompt-length ", o.prompt_length, "]");
  VERL_CHECK(o.response_tokens >= 0 && o.response_tokens <= o.response_length, kPpoBenchComponent,
             "--response-tokens (", o.response_tokens, ") must be in [0, --response-length ", o.response_length, "]");
  VERL_CHECK(o.micro_batch_size > 0, kPpoBenchComponent, "--micro-batch-size must be positive");
  VERL_CHECK((o.batch_size * o.n) % o.micro_batch_size == 0, kPpoBenchComponent, "--micro-batch-size (",
             o.micro_batch_size, ") must divide batch size x n (", o.batch_size * o.n, ")");

  const torch::Device device = runtime::parse_device(o.device, "--device");
  TempFolder tmp;
  std::string model_dir = o.model_dir;
  if (model_dir.empty()) {
    model::CausalLM m(model_preset(o.model));
    model::init_weights(m, o.seed);
    model_dir = tmp.path() + "/model";
    model::save_model(m, model_dir);
  }
  const model::HFConfig c = model::load_hf_config(model_dir);
  const int64_t B = o.batch_size, N = o.batch_size * o.n, P = o.prompt_length, R = o.response_length;
  const std::string mb = std::to_string(o.micro_batch_size);
  const std::string gc = o.gradient_checkpointing ? "true" : "false";
  config::ConfigArgs args;
  args.overrides = {"actor_rollout_ref.model.path=" + model_dir,
                    "critic.model.path=" + model_dir,
                    "trainer.device=" + std::string(device.is_cuda() ? "cuda" : "cpu"),
                    "trainer.n_gpus_per_node=1",
                    "trainer.nnodes=1",
                    "trainer.default_local_dir=" + tmp.path() + "/run",
                    "algorithm.adv_estimator=gae",
                    "actor_rollout_ref.actor.use_kl_loss=true",
                    "data.max_prompt_length=" + std::to_string(P),
                    "data.max_response_length=" + std::to_string(R),
                    "data.train_batch_size=" + std::to_string(B),
                    "actor_rollout_ref.rollout.n=" + std::to_string(o.n),
                    "actor_rollout_ref.rollout.ignore_eos=true",
                    "actor_rollout_ref.rollout.seed=" + std::to_string(o.seed),
                    "actor_rollout_ref.actor.ppo_mini_batch_size=" + std::to_string(B),
                    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=" + mb,
                    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=" + mb,
                    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=" + mb,
                    "critic.ppo_micro_batch_size_per_gpu=" + mb,
                    "actor_rollout_ref.model.enable_gradient_checkpointing=" + gc,
                    "critic.model.enable_gradient_checkpointing=" + gc};
  args.overrides.insert(args.overrides.end(), o.overrides.begin(), o.overrides.end());
  auto config = std::make_shared<const config::PPOConfig>(config::load_config(args).ppo);

  // The roles the trainer would build for this config (verl's need_critic / need_reference_policy): by default a
  // GAE step with a KL loss, so all four; `algorithm.adv_estimator=grpo actor_rollout_ref.actor.use_kl_loss=false`
  // leaves the actor (and its rollout) alone, which is what a one-model peer holds in memory.
  const bool with_critic = trainer::need_critic(*config), with_ref = trainer::need_reference_policy(*config);
  single_controller::WorkerContext context;
  context.group_name = "bench";
  workers::ActorRolloutRefWorker actor(context, config, with_ref ? "actor_rollout_ref" : "actor_rollout");
  std::optional<workers::CriticWorker> critic;
  if (with_critic) critic.emplace(context, config);
  actor.init_model(DataProto());
  if (critic) critic->init_model(DataProto());

  // Prompts of full length, or of drawn lengths left-padded (--prompt-tokens), repeated n times as the trainer
  // does before generation.
  auto gen = at::detail::createCPUGenerator(o.seed + 1);
  auto ids = torch::randint(0, std::max<int64_t>(1, c.vocab_size - 3), {B, P}, gen, torch::kInt64);
  auto mask = torch::ones({B, P}, torch::kInt64);
  std::vector<int64_t> prompt_lengths(static_cast<size_t>(B), P);
  if (o.prompt_tokens > 0) {
    const int64_t shortest = (o.prompt_tokens + 1) / 2;
    for (int64_t i = 0; i < B; ++i) {
      prompt_lengths[i] = torch::randint(shortest, o.prompt_tokens + 1, {1}, gen, torch::kInt64).item<int64_t>();
      mask[i].narrow(0, 0, P - prompt_lengths[i]).zero_();
      ids[i].narrow(0, 0, P - prompt_lengths[i]).fill_(c.pad_token_id.value_or(0));
    }
  }
  DataProto prompts = DataProto::from_dict(
      {{"input_ids", ids}, {"attention_mask", mask}, {"position_ids", model::position_ids_from_mask(mask)}});
  prompts = prompts.repeat(o.n, /*interleave=*/true);
  // The length each of the N responses keeps (--response-tokens), drawn once so every step trains the same shape.
  std::vector<int64_t> response_lengths(static_cast<size_t>(N), R);
  if (o.response_tokens > 0) {
    const int64_t shortest = (o.response_tokens + 1) / 2;
    for (auto& r : response_lengths) {
      r = torch::randint(shortest, o.response_tokens + 1, {1}, gen, torch::kInt64).item<int64_t>();
    }
  }
  prompts.meta_info = {{"eos_token_id", c.eos_token_ids.empty() ? 0 : c.eos_token_ids[0]},
                       {"pad_token_id", c.pad_token_id.value_or(0)},
                       {"do_sample", true},
                       {"validate", false},
                       {"temperature", 1.0}};

  PpoBenchResult result;
  result.options = o;
  result.roles = {"actor"};
  if (with_ref) result.roles.push_back("ref");
  if (with_critic) result.roles.push_back("critic");
  result.params = total_params(c);
  RooflineOptions roofline = o.roofline;
  roofline.device = o.device;
  const auto compute_dtype =
      workers::resolved_precision(config->actor_rollout_ref.actor.fsdp_config.param_dtype, device);
  result.compute_dtype = compute_dtype == torch::kBFloat16 ? "bf16" : compute_dtype == torch::kFloat16 ? "fp16" : "fp32";
  roofline.bf16 = roofline.bf16 || compute_dtype == torch::kBFloat16;
  result.roofline = measure_roofline(roofline);
  if (device.is_cuda()) runtime::cuda_reset_memory_peak(device.index());

  // The work of each pass over the real tokens (row i: prompt i / n, its response as kept).
  double full_tokens = 0, forward = 0, value_forward = 0, generation = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t p = prompt_lengths[static_cast<size_t>(i / o.n)], r = response_lengths[static_cast<size_t>(i)];
    full_tokens += static_cast<double>(p + r);
    forward += sequence_forward_flops(c, 1, p, r, /*lm_head=*/true);
    value_forward += sequence_forward_flops(c, 1, p, r, /*lm_head=*/false);
    generation += prefill_flops(c, 1, p) + decode_flops(c, 1, p, R - 1);
  }
  // One step in verl's order. On a GPU the first step pays one-time costs (cuBLAS handles and workspaces,
  // the autograd engine's device thread, allocator growth): an untimed step runs first there.
  auto step = [&](std::vector<PpoPhase>& phases) {
    DataProto batch;
    phases.push_back(timed("gen", static_cast<double>(N * R), generation, device,
                           [&] { batch = actor.generate_sequences(prompts); }));
    VERL_ASSERT(batch.tensor("response_mask").sum().item<int64_t>() == N * R, kPpoBenchComponent,
                "responses did not all run to full length");
    if (o.response_tokens > 0) end_responses(batch, response_lengths, P, c.pad_token_id.value_or(0));
    batch.meta_info = {{"temperature", 1.0}};
    phases.push_back(timed("old_log_prob", full_tokens, forward, device, [&] {
      DataProto out = actor.compute_log_prob(batch);
      out.batch.erase("entropys");
      batch.union_rows_with(out);
    }));
    if (with_ref) {
      phases.push_back(timed("ref", full_tokens, forward, device,
                             [&] { batch.union_rows_with(actor.compute_ref_log_prob(batch)); }));
    }
    if (critic) {
      phases.push_back(timed("values", full_tokens, value_forward, device,
                             [&] { batch.union_rows_with(critic->compute_values(batch)); }));
    }
    phases.push_back(timed("adv", 0, 0, device, [&] {
      // A seeded score on each response's last token; GAE as the controller computes it, or without a critic
      // the outcome advantage over each prompt's n samples (GRPO's).
      auto rewards = torch::zeros({N, R});
      rewards.narrow(1, R - 1, 1).copy_(torch::rand({N, 1}, gen));
      const auto& response_mask = batch.tensor("response_mask");
      std::pair<torch::Tensor, torch::Tensor> adv;
      if (critic) {
        adv = algo::compute_gae_advantage_return(rewards, batch.tensor("values"), response_mask,
                                                 config->algorithm.gamma, config->algorithm.lam);
      } else {
        std::vector<std::string> uids;
        for (int64_t i = 0; i < N; ++i) uids.push_back(std::to_string(i / o.n));
        adv = algo::compute_grpo_outcome_advantage(rewards, response_mask, uids);
      }
      batch.batch["advantages"] = adv.first;
      batch.batch["returns"] = adv.second;
    }));
    batch.meta_info["multi_turn"] = false;
    if (critic) {
      phases.push_back(timed("update_critic", full_tokens, 3 * value_forward, device, [&] { critic->update_critic(batch); }));
    }
    phases.push_back(timed("update_actor", full_tokens, 3 * forward, device, [&] { actor.update_actor(batch); }));
  };
  VERL_CHECK(o.repeats >= 1, kPpoBenchComponent, "--repeats must be at least 1, got ", o.repeats);
  if (device.is_cuda() || o.repeats > 1) {
    std::vector<PpoPhase> warm_up;
    step(warm_up);
    if (device.is_cuda()) runtime::cuda_reset_memory_peak(device.index());
  }
  auto step_seconds = [](const std::vector<PpoPhase>& phases) {
    double s = 0;
    for (const auto& p : phases) s += p.seconds;
    return s;
  };
  for (int r = 0; r < o.repeats; ++r) {
    result.all_steps.emplace_back();
    step(result.all_steps.back());
    if (r == 0 || step_seconds(result.all_steps.back()) < step_seconds(result.phases)) {
      result.phases = result.all_steps.back();
    }
  }
  if (device.is_cuda()) result.peak_memory_bytes = runtime::cuda_memory_peak(device.index()).allocated_bytes;
  return result;
}

namespace {

// The GEMM peak per CPU-second: the peak rate divided by the cores its window kept busy. A phase's FLOPs per
// CPU-second over this is its per-core efficiency, which other processes' load does not lower (it equals the
// MFU when every thread of the phase stays busy).
double peak_flops_per_cpu_second(const Roofline& r) {
  for (const auto& g : r.gemm) {
    if (g.flops_per_s == r.gemm_peak_flops && g.cpu_per_wall > 0) return g.flops_per_s / g.cpu_per_wall;
  }
  return 0;
}

// The peak a phase is measured against: bf16 GEMMs when the roles compute in bf16.
double compute_peak(const PpoBenchResult& r) {
  return r.compute_dtype == "bf16" && r.roofline.bf16_gemm_peak_flops > 0 ? r.roofline.bf16_gemm_peak_flops
                                                                          : r.roofline.gemm_peak_flops;
}

}  // namespace

nlohmann::json to_json(const PpoBenchResult& r) {
  const double peak = compute_peak(r), peak_cpu = peak_flops_per_cpu_second(r.roofline);
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"phase", p.name},
                      {"seconds", p.seconds},
                      {"cpu_seconds", p.cpu_seconds},
                      {"tokens", p.tokens},
                      {"tokens_per_s", p.seconds > 0 ? p.tokens / p.seconds : 0},
                      {"flops", p.flops},
                      {"mfu", p.seconds > 0 && peak > 0 ? p.flops / p.seconds / peak : 0},
                      {"mfu_cpu_time", p.cpu_seconds > 0 && peak_cpu > 0 ? p.flops / p.cpu_seconds / peak_cpu : 0},
                      {"peak_rss_bytes", p.peak_rss_bytes}});
  }
  const auto& o = r.options;
  double step_seconds = 0, step_flops = 0;
  for (const auto& p : r.phases) step_seconds += p.seconds, step_flops += p.flops;
  nlohmann::json repeat_seconds = nlohmann::json::object();  // phase -> every timed step's seconds
  for (const auto& phases : r.all_steps) {
    for (const auto& p : phases) repeat_seconds[p.name].push_back(p.seconds);
  }
  return {{"bench", "ppo"},
          {"repeats", o.repeats},
          {"repeat_seconds", repeat_seconds},
          {"step_seconds", step_seconds},
          {"step_mfu", step_seconds > 0 && peak > 0 ? step_flops / step_seconds / peak : 0},
          {"timestamp", utc_timestamp()},
          {"model", o.model_dir.empty() ? o.model : o.model_dir},
          {"params", r.params},
          {"batch_size", o.batch_size},
          {"n", o.n},
          {"prompt_length", o.prompt_length},
          {"prompt_tokens", o.prompt_tokens},
          {"response_length", o.response_length},
          {"response_tokens", o.response_tokens},
          {"micro_batch_size", o.micro_batch_size},
          {"gradient_checkpointing", o.gradient_checkpointing},
          {"device", r.roofline.device},
          {"compute_dtype", r.compute_dtype},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"roles", r.roles},
          {"roofline", to_json(r.roofline)},
          {"phases", phases}};
}

std::string format_ppo_bench(const PpoBenchResult& r) {
  std::ostringstream out;
  out << format_roofline(r.roofline) << "\n";
  const double peak = compute_peak(r), peak_cpu = peak_flops_per_cpu_second(r.roofline);
  std::vector<std::vector<std::string>> rows = {
      {"phase", "wall s", "cpu/wall", "tokens", "tokens/s", "GFLOP", "GFLOP/s", "MFU %", "MFU % (cpu time)",
       "peak RSS"}};
  for (const auto& p : r.phases) {
    const bool model = p.flops > 0;
    rows.push_back({p.name, format_number(p.seconds), format_number(p.seconds > 0 ? p.cpu_seconds / p.seconds : 0),
                    model ? format_number(p.tokens) : "", model ? format_number(p.tokens / p.seconds) : "",
                    model ? format_number(p.flops / 1e9) : "", model ? format_number(p.flops / p.seconds / 1e9) : "",
                    model ? format_number(100.0 * p.flops / p.seconds / peak) : "",
                    model && peak_cpu > 0 ? format_number(100.0 * p.flops / p.cpu_seconds / peak_cpu) : "",
                    p.peak_rss_bytes > 0 ? format_si(static_cast<double>(p.peak_rss_bytes), "B") : ""});
  }
  out << format_table(rows);
  double step_seconds = 0, step_flops = 0;
  for (const auto& p : r.phases) step_seconds += p.seconds, step_flops += p.flops;
  out << "step: " << format_number(step_seconds) << " s, " << format_number(step_flops / 1e9) << " GFLOP, MFU "
      << format_number(step_seconds > 0 ? 100.0 * step_flops / step_seconds / peak : 0) << " %\n";
  const auto& o = r.options;
  out << (o.model_dir.empty() ? o.model : o.model_dir) << " (" << format_si(r.params, "") << " params), "
      << o.batch_size << " prompts x n " << o.n << ", prompt " << o.prompt_length
      << (o.prompt_tokens > 0 ? " (" + std::to_string((o.prompt_tokens + 1) / 2) + "-" +
                                    std::to_string(o.prompt_tokens) + " real tokens, left-padded)"
                              : std::string())
      << " + response " << o.response_length
      << (o.response_tokens > 0 ? " (" + std::to_string((o.response_tokens + 1) / 2) + "-" +
                                      std::to_string(o.response_tokens) + " real tokens, right-padded)"
                                : std::string())
      << " tokens, micro batch " << o.micro_batch_size << ", gradient checkpointing "
      << (o.gradient_checkpointing ? "on" : "off") << ", " << r.compute_dtype << " compute (fp32 masters) on "
      << r.roofline.device << ", roles " << join(r.roles, " + ");
  if (r.peak_memory_bytes > 0) out << ", peak GPU memory " << format_si(static_cast<double>(r.peak_memory_bytes), "B");
  if (o.repeats > 1) out << ", the fastest of " << o.repeats << " steps after a warm-up step";
  out << "\n"
      << "MFU: model FLOPs / wall time / GEMM peak. MFU (cpu time): FLOPs per CPU-second / the peak's FLOPs per\n"
         "CPU-second: per-core efficiency, robust to other load; equal to MFU when every thread stays busy, higher\n"
         "when part of the phase runs on fewer threads. Peak RSS: the process's peak resident memory during the\n"
         "phase (all roles; on the CPU).\n";
  return out.str();
}

}  // namespace verl::bench
