// `verl model init` (a random-init HF model folder) and `verl model forward` (logits of a padded batch).
#include <iostream>
#include <map>
#include <set>

#include "verl/cli/option_values.h"
#include "verl/cli/cli.h"
#include "verl/common/error.h"
#include "verl/model/model_tools.h"
#include "verl/trainer/main_ppo.h"

namespace verl::cli {

const char* const kModelUsage =
    "usage: verl model init --arch llama|qwen2|qwen3|mistral|qwen2_moe|qwen3_moe --out DIR [--seed S]\n"
    "                       [--tokenizer DIR]\n"
    "                       [--hidden-size N] [--num-layers N] [--num-heads N] [--num-kv-heads N]\n"
    "                       [--intermediate-size N] [--vocab-size N] [--head-dim N] [--rope-theta X]\n"
    "                       [--initializer-range STD]\n"
    "                       [--rope-scaling linear:F|llama3:F:LOW:HIGH:ORIG|yarn:F:ORIG] [--tie-word-embeddings]\n"
    "                       [--sliding-window N [--max-window-layers L]]\n"
    "                       [--attention-bias] [--mlp-bias] [--perturb-norms-biases] [--dtype float32|bfloat16]\n"
    "                       [--num-experts N] [--experts-per-token K] [--moe-intermediate-size N]\n"
    "                       [--shared-expert-intermediate-size N] [--norm-topk-prob] [--decoder-sparse-step N]\n"
    "       verl model forward --model DIR --input ids.json --output out.safetensors\n"
    "       verl model export --checkpoint DIR --out DIR [--merge]\n"
    "\n"
    "init writes a Hugging Face model folder (config.json, model.safetensors, generation_config.json, and the\n"
    "tokenizer files of --tokenizer DIR when given) with seeded random weights: N(0, STD=0.02) matrices, zero\n"
    "biases, unit norms (--perturb-norms-biases randomises those too, for tests). Special ids: bos = V-3,\n"
    "eos = V-2, pad = V-1. Defaults: hidden 64, 2 layers, 4 heads, 2 kv heads, intermediate 128, vocab 128.\n"
    "--sliding-window N: each query attends to the last N positions only, on every layer (mistral) or on the\n"
    "layers from --max-window-layers L on (qwen2 / qwen3, default 0: all).\n"
    "qwen2_moe / qwen3_moe: every --decoder-sparse-step-th layer (default 1: all) routes each token to K\n"
    "(default 2) of N (default 4) expert MLPs of --moe-intermediate-size (default 32); qwen2_moe adds a shared\n"
    "expert (default size: --intermediate-size).\n"
    "\n"
    "forward reads {\"input_ids\": [[...], ...]} (rows of any length), runs them as one left-padded batch\n"
    "and writes logits_<i> of shape [len_i, vocab] (float32) per row.\n"
    "\n"
    "export writes a Hugging Face model folder from a training checkpoint (verl's model merger): DIR is a\n"
    "global_step_N folder or its actor/ folder. A LoRA run's checkpoint (actor_rollout_ref.model.lora_rank > 0)\n"
    "exports PEFT's adapter folder (adapter_model.safetensors + adapter_config.json, for\n"
    "peft.PeftModel.from_pretrained); with --merge, the base model with the adapter merged into its weights.\n";

namespace {

// --arch: a dense family, or qwen2_moe / qwen3_moe (the Qwen2 / Qwen3 layers with experts).
void set_arch(const std::string& name, model::InitOptions& o) {
  o.moe = name == "qwen2_moe" || name == "qwen3_moe";
  o.arch = model::parse_arch_short(o.moe ? name.substr(0, 5) : name);
}

int run_init(const Args& args) {
  model::InitOptions o;
  bool have_arch = false, have_out = false, moe_option = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      VERL_CHECK(i + 1 < args.size(), "cli", a, " needs a value");
      return args[++i];
    };
    static const std::set<std::string> kExpertOptions = {"--num-experts",           "--experts-per-token",
                                                         "--moe-intermediate-size", "--shared-expert-intermediate-size",
                                                         "--norm-topk-prob",        "--decoder-sparse-step"};
    moe_option = moe_option || kExpertOptions.count(a) > 0;
    if (a == "--arch") { set_arch(value(), o); have_arch = true; }
    else if (a == "--out") { o.out_dir = value(); have_out = true; }
    else if (a == "--seed") o.seed = static_cast<uint64_t>(parse_int_option(a, value()));
    else if (a == "--tokenizer") o.tokenizer_dir = value();
    else if (a == "--hidden-size") o.hidden_size = parse_int_option(a, value());
    else if (a == "--num-layers") o.num_layers = parse_int_option(a, value());
    else if (a == "--num-heads") o.num_heads = parse_int_option(a, value());
    else if (a == "--num-kv-heads") o.num_kv_heads = parse_int_option(a, value());
    else if (a == "--intermediate-size") o.intermediate_size = parse_int_option(a, value());
    else if (a == "--vocab-size") o.vocab_size = parse_int_option(a, value());
    else if (a == "--head-dim") o.head_dim = parse_int_option(a, value());
    else if (a == "--rope-theta") o.rope_theta = parse_number_option(a, value());
    else if (a == "--initializer-range") o.initializer_range = parse_number_option(a, value());
    else if (a == "--rope-scaling") o.rope_scaling = value();
    else if (a == "--sliding-window") o.sliding_window = parse_int_option(a, value());
    else if (a == "--max-window-layers") o.max_window_layers = parse_int_option(a, value());
    else if (a == "--tie-word-embeddings") o.tie_word_embeddings = true;
    else if (a == "--attention-bias") o.attention_bias = true;
    else if (a == "--mlp-bias") o.mlp_bias = true;
    else if (a == "--perturb-norms-biases") o.perturb_norms_and_biases = true;
    else if (a == "--dtype") o.dtype = value();
    else if (a == "--num-experts") o.num_experts = parse_int_option(a, value());
    else if (a == "--experts-per-token") o.num_experts_per_tok = parse_int_option(a, value());
    else if (a == "--moe-intermediate-size") o.moe_intermediate_size = parse_int_option(a, value());
    else if (a == "--shared-expert-intermediate-size") o.shared_expert_intermediate_size = parse_int_option(a, value());
    else if (a == "--norm-topk-prob") o.norm_topk_prob = true;
    else if (a == "--decoder-sparse-step") o.decoder_sparse_step = parse_int_option(a, value());
    else {
      std::cerr << "error: unknown option '" << a << "' for verl model init\n" << kModelUsage;
      return 2;
    }
  }
  if (!have_arch || !have_out) {
    std::cerr << "error: verl model init needs --arch and --out\n" << kModelUsage;
    return 2;
  }
  if (moe_option && !o.moe) {
    std::cerr << "error: the expert options of verl model init need --arch qwen2_moe or qwen3_moe\n";
    return 2;
  }
  auto c = model::init_model_folder(o);
  std::cout << "wrote " << model::hf_class_name(c) << " (hidden " << c.hidden_size << ", " << c.num_hidden_layers
            << " layers, vocab " << c.vocab_size << ") to " << o.out_dir << "\n";
  return 0;
}

int run_forward(const Args& args) {
  std::map<std::string, std::string> v;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--model" || a == "--input" || a == "--output") && i + 1 < args.size()) {
      v[a] = args[++i];
    } else {
      std::cerr << "error: unexpected argument '" << a << "' for verl model forward\n" << kModelUsage;
      return 2;
    }
  }
  if (!v.count("--model") || !v.count("--input") || !v.count("--output")) {
    std::cerr << "error: verl model forward needs --model, --input and --output\n" << kModelUsage;
    return 2;
  }
  model::forward_to_file(v["--model"], v["--input"], v["--output"]);
  return 0;
}

int run_export(const Args& args) {
  std::map<std::string, std::string> v;
  bool merge = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--checkpoint" || a == "--out") && i + 1 < args.size()) {
      v[a] = args[++i];
    } else if (a == "--merge") {
      merge = true;
    } else {
      std::cerr << "error: unexpected argument '" << a << "' for verl model export\n" << kModelUsage;
      return 2;
    }
  }
  if (!v.count("--checkpoint") || !v.count("--out")) {
    std::cerr << "error: verl model export needs --checkpoint and --out\n" << kModelUsage;
    return 2;
  }
  trainer::export_actor_checkpoint(v["--checkpoint"], v["--out"], merge);
  std::cout << "wrote " << v["--out"] << "\n";
  return 0;
}

}  // namespace

int run_model_command(const Args& args) {
  if (!args.empty() && args[0] == "init") return run_init(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "forward") return run_forward(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "export") return run_export(Args(args.begin() + 1, args.end()));
  std::cerr << "error: expected 'verl model init|forward|export ...'\n" << kModelUsage;
  return 2;
}

}  // namespace verl::cli
