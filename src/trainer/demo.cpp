// `verl demo --prepare-only`: the embedded default's data, tokenizer, tiny model and SFT warm start (the
// arithmetic task, or arithmetic_tool with --tools).
#include "verl/trainer/demo.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/stopwatch.h"
#include "verl/config/interpolation.h"
#include "verl/config/sft_config.h"
#include "verl/config/yaml_io.h"
#include "verl/data/preprocess/preprocess.h"
#include "verl/data/sft_dataset.h"
#include "verl/io/parquet/reader.h"
#include "verl/model/model_tools.h"
#include "verl/tokenizer/tokenizer_builder.h"
#include "verl/trainer/demo_tools.h"
#include "verl/trainer/greedy_eval.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::trainer {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

void set_sft_key(config::Node& root, const std::string& path, config::Node value) {
  config::set_existing_path(root, path, std::move(value), "the SFT defaults");
}

config::Node string_list(const std::vector<std::string>& items) {
  std::vector<config::Node> nodes;
  for (const auto& item : items) nodes.push_back(config::Node::string(item));
  return config::Node::list(std::move(nodes));
}

// Prompt ids (chat template, generation prompt) and ground truths of a parquet split: `prompt` is a chat list
// (RL split) or a string (SFT split).
void load_eval_set(const std::string& path, const tokenizer::Tokenizer& tok, std::vector<std::vector<int32_t>>& prompts,
                   std::vector<std::string>& truths) {
  for (const auto& row : io::parquet::read_parquet(path, {"prompt", "reward_model"})) {
    prompts.push_back(data::sft_prompt_ids(tok, *row.find("prompt")));
    truths.push_back(row.find("reward_model")->find("ground_truth")->as_string());
  }
}

// The arithmetic task's tokenizer.
tokenizer::ByteLevelBPESpec arithmetic_tokenizer_spec() {
  tokenizer::ByteLevelBPESpec spec;
  spec.alphabet = tokenizer::printable_ascii_alphabet();
  spec.words = demo_tokenizer_words();
  // Order matters: `verl model init` puts bos / eos / pad at V-3 / V-2 / V-1 in config.json and
  // generation_config.json, so eos is <|im_end|> and pad <|endoftext|>, as in Qwen2 instruct models.
  spec.special_tokens = {"<|im_start|>", "<|im_end|>", "<|endoftext|>"};
  spec.eos_token = "<|im_end|>";
  spec.pad_token = "<|endoftext|>";
  spec.chat_template = tokenizer::chatml_template();
  return spec;
}

// The longest prompt + response of an SFT split, in tokens (the SFT max_length: rows are padded to it).
int64_t longest_sft_row(const std::string& path, const tokenizer::Tokenizer& tok) {
  size_t longest = 0;
  for (const auto& row : io::parquet::read_parquet(path, {"prompt", "response"})) {
    longest = std::max(longest, data::sft_prompt_ids(tok, *row.find("prompt")).size() +
                                    data::sft_response_ids(tok, row.find("response")->as_string()).size());
  }
  return static_cast<int64_t>(longest);
}

// `text` with its newlines written as \n, for a log line.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

void copy_folder_atomic(const std::string& from, const std::string& to) {
  StagedDirectory staged(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    if (entry.is_regular_file()) fs::copy_file(entry.path(), fs::path(staged.path()) / entry.path().filename());
  }
  staged.commit();
}

}  // namespace

const std::vector<std::string>& demo_tokenizer_words() {
  static const std::vector<std::string> words = {"user", "assistant", "system", "####", "Answer", " after", " ####."};
  return words;
}

DemoPrepareResult prepare_demo(const DemoPrepareOptions& options) {
  VERL_CHECK(!options.out_dir.empty(), "demo", "--out DIR is required");
  VERL_CHECK(options.max_sft_steps > 0 && options.eval_every > 0, "demo", "SFT steps and eval interval must be > 0");
  const auto start = Clock::now();
  DemoPrepareResult result;
  const std::string out = fs::absolute(options.out_dir).lexically_normal().string();
  result.data_dir = out + "/data";
  result.init_model_dir = out + "/model_init";
  result.sft_dir = out + "/sft";
  result.model_dir = out + "/model";
  std::error_code ec;
  fs::create_directories(out, ec);
  VERL_CHECK(!ec, "demo", "cannot create '", out, "': ", ec.message());

  // 1. Data (and, with tools, the calculator tool next to its config: the tool runtime imports from there).
  int64_t train_size = 0, test_size = 0, sft_train_size = 0, sft_val_size = 0;
  if (options.tools) {
    data::ArithmeticToolOptions data_options;
    data_options.seed = options.seed;
    data_options.test_size = data_options.sft_val_size = 200;  // two-turn validations: kept short
    data::write_arithmetic_tool_dataset(result.data_dir, data_options);
    train_size = data_options.train_size, test_size = data_options.test_size;
    sft_train_size = data_options.sft_train_size, sft_val_size = data_options.sft_val_size;
    StagedDirectory tools(out + "/tools");
    write_file_atomic(tools.path() + "/calculator_tool.py", demo_calculator_tool_py());
    write_file_atomic(tools.path() + "/calculator_tool_config.yaml", demo_calculator_tool_yaml());
    tools.commit();
    result.tool_config_path = out + "/tools/calculator_tool_config.yaml";
  } else {
    data::ArithmeticOptions data_options;
    data_options.seed = options.seed;
    data::write_arithmetic_dataset(result.data_dir, data_options);
    train_size = data_options.train_size, test_size = data_options.test_size;
    sft_train_size = data_options.sft_train_size, sft_val_size = data_options.sft_val_size;
  }
  std::cerr << "demo: data in " << result.data_dir << " (" << train_size << " train, " << test_size << " test, "
            << sft_train_size << " sft_train, " << sft_val_size << " sft_val)\n";

  // 2. Tokenizer: byte-level BPE over printable ASCII with merges for the template's words.
  const std::string tokenizer_dir = out + "/tokenizer";
  result.vocab_size = tokenizer::write_byte_level_bpe_folder(
      tokenizer_dir, options.tools ? demo_tools_tokenizer_spec() : arithmetic_tokenizer_spec());
  // The longest SFT row (prompt with the tool listing + tool transcript) with tools; 64 covers arithmetic's.
  const int64_t sft_max_length =
      options.tools
          ? longest_sft_row(result.data_dir + "/sft_train.parquet", tokenizer::Tokenizer::from_folder(tokenizer_dir))
          : 64;

  // 3. Tiny Qwen2 (design.md: hidden 128, 2 layers, 4 heads).
  model::InitOptions init;
  init.arch = model::Arch::Qwen2;
  init.out_dir = result.init_model_dir;
  init.seed = options.seed;
  init.hidden_size = 128;
  init.num_layers = 2;
  init.num_heads = 4;
  init.num_kv_heads = 4;
  init.intermediate_size = 384;
  init.vocab_size = result.vocab_size;
  init.tie_word_embeddings = true;
  init.tokenizer_dir = tokenizer_dir;
  model::init_model_folder(init);

  // 4. SFT warm start through verl's SFT trainer with the built-in defaults plus these keys.
  config::Node root = config::default_sft_config_tree();
  set_sft_key(root, "data.train_files", config::Node::string(result.data_dir + "/sft_train.parquet"));
  set_sft_key(root, "data.val_files", config::Node::string(result.data_dir + "/sft_val.parquet"));
  set_sft_key(root, "data.prompt_key", config::Node::string("prompt"));
  set_sft_key(root, "data.response_key", config::Node::string("response"));
  set_sft_key(root, "data.max_length", config::Node::integer(sft_max_length));
  set_sft_key(root, "data.train_batch_size", config::Node::integer(options.sft_batch_size));
  set_sft_key(root, "data.micro_batch_size_per_gpu", config::Node::integer(options.sft_batch_size));
  set_sft_key(root, "model.partial_pretrain", config::Node::string(result.init_model_dir));
  // A model of a few MB: recomputing layers in backward would only cost time.
  set_sft_key(root, "model.enable_gradient_checkpointing", config::Node::boolean(false));
  set_sft_key(root, "optim.lr", config::Node::floating(options.sft_lr));
  set_sft_key(root, "optim.betas", config::Node::list({config::Node::floating(0.9), config::Node::floating(0.999)}));
  // 40 warm-up steps whatever the step limit, so that the limit does not change the trajectory (the schedule is
  // constant afterwards): a run stopped by the accuracy target is the same run under any larger limit. The
  // optimizer truncates ratio x steps, hence 40.5.
  set_sft_key(root, "optim.warmup_steps_ratio",
              config::Node::floating(std::min(1.0, 40.5 / static_cast<double>(options.max_sft_steps))));
  set_sft_key(root, "optim.lr_scheduler", config::Node::string("constant"));
  set_sft_key(root, "trainer.default_local_dir", config::Node::string(result.sft_dir));
  set_sft_key(root, "trainer.project_name",
              config::Node::string(options.tools ? "arithmetic-tool-demo" : "arithmetic-demo"));
  set_sft_key(root, "trainer.experiment_name", config::Node::string("sft"));
  set_sft_key(root, "trainer.total_epochs", config::Node::integer(1000));
  set_sft_key(root, "trainer.total_training_steps", config::Node::integer(options.max_sft_steps));
  set_sft_key(root, "trainer.logger", string_list({"jsonl"}));
  set_sft_key(root, "trainer.seed", config::Node::integer(static_cast<int64_t>(options.seed)));
  set_sft_key(root, "trainer.max_ckpt_to_keep", config::Node::integer(1));
  // Each demo prepares its SFT model afresh: an SFT folder of an earlier demo run is not continued.
  set_sft_key(root, "trainer.resume_mode", config::Node::string("disable"));
  set_sft_key(root, "trainer.num_cpu_threads", config::Node::integer(options.num_threads.value_or(1)));
  config::Node resolved = config::resolve_interpolations(root);
  config::SFTConfig sft_config = config::parse_sft_config(resolved);

  const auto sft_start = Clock::now();
  SFTTrainer trainer(sft_config, config::to_yaml(resolved));
  for (const auto& p : trainer.model()->parameters()) result.num_parameters += p.numel();
  std::cerr << "demo: tokenizer (" << result.vocab_size << " tokens) and Qwen2 model (" << result.num_parameters
            << " parameters) in " << result.init_model_dir << "\n";
  // Greedy evaluation of a split: accuracy, and with tools the tool-call rate and tool-path accuracy.
  struct Eval {
    double accuracy = 0, tool_call_rate = 0, tool_path_accuracy = 0;
    std::string sample;
  };
  const int64_t max_response_length = 8;  // "####", " ", up to 3 digits or a sign, eos
  const int64_t max_turn_tokens = 40;     // a tool call is about 25 tokens
  auto evaluator = [&](const std::string& split) -> std::function<Eval()> {
    const std::string path = result.data_dir + "/" + split + ".parquet";
    if (options.tools) {
      auto texts = std::make_shared<std::vector<std::string>>();
      auto truths = std::make_shared<std::vector<std::string>>();
      load_tool_eval_set(path, trainer.tokenizer(), *texts, *truths);
      return [&trainer, texts, truths, max_turn_tokens] {
        ToolEvalResult r = tool_greedy_eval(trainer.model(), trainer.tokenizer(), *texts, *truths, max_turn_tokens);
        return Eval{r.accuracy, r.tool_call_rate, r.tool_path_accuracy, r.tool_path_sample};
      };
    }
    auto prompts = std::make_shared<std::vector<std::vector<int32_t>>>();
    auto truths = std::make_shared<std::vector<std::string>>();
    load_eval_set(path, trainer.tokenizer(), *prompts, *truths);
    return [&trainer, prompts, truths, max_response_length] {
      Eval eval;
      eval.accuracy =
          greedy_accuracy(trainer.model(), trainer.tokenizer(), *prompts, *truths, "arithmetic", max_response_length)
              .accuracy;
      return eval;
    };
  };
  std::function<Eval()> evaluate_sft_val = evaluator("sft_val");
  Eval val;
  double train_loss = 0;
  SFTFitResult fit = trainer.fit([&](int64_t step, const std::map<std::string, double>& metrics) {
    train_loss = metrics.at("train/loss");
    if (step % options.eval_every != 0 && step != options.max_sft_steps) return true;
    val = evaluate_sft_val();
    std::cerr << "demo: sft step " << step << " loss " << std::fixed << std::setprecision(4) << train_loss
              << " sft_val greedy accuracy " << std::setprecision(3) << val.accuracy;
    if (options.tools) {
      std::cerr << " tool-call rate " << val.tool_call_rate << " tool-path accuracy " << val.tool_path_accuracy;
    }
    std::cerr << " (" << std::setprecision(1) << seconds_since(sft_start) << " s)\n" << std::defaultfloat;
    if (options.tools) std::cerr << "demo:   e.g. " << one_line(val.sample) << "\n";
    return (options.tools ? val.tool_path_accuracy : val.accuracy) < options.target_accuracy;
  });
  result.sft_steps = fit.global_steps;
  result.sft_seconds = seconds_since(sft_start);
  result.sft_val_accuracy = val.accuracy;
  result.sft_val_tool_call_rate = val.tool_call_rate;
  result.sft_val_tool_path_accuracy = val.tool_path_accuracy;
  VERL_CHECK(!fit.last_checkpoint.empty(), "demo", "the SFT run wrote no checkpoint");
  copy_folder_atomic(fit.last_checkpoint, result.model_dir);

  // 5. Held-out accuracy of the warm-started model (the RL validation set).
  const Eval test = evaluator("test")();
  result.test_accuracy = test.accuracy;
  result.test_tool_call_rate = test.tool_call_rate;
  result.test_tool_path_accuracy = test.tool_path_accuracy;
  result.total_seconds = seconds_since(start);
  return result;
}

}  // namespace verl::trainer
