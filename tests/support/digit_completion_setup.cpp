#include "support/digit_completion_setup.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "support/char_tokenizer.h"
#include "support/run_command.h"
#include "verl/model/weights.h"

namespace verl::test {

namespace {

void run_or_throw(const std::string& command) {
  CommandResult result = run_command(command);
  if (result.exit_code != 0) throw std::runtime_error(command + " failed: " + result.err);
}

// verl data show -> JSON lines with the columns the reward manager needs.
void write_rl_jsonl(const std::string& parquet, const std::string& out, int limit) {
  CommandResult shown = run_command(verl_binary() + " data show '" + parquet + "'" +
                                    (limit > 0 ? " --limit " + std::to_string(limit) : std::string()));
  if (shown.exit_code != 0) throw std::runtime_error("verl data show failed: " + shown.err);
  std::istringstream lines(shown.out);
  std::string line, text;
  int64_t index = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line);
    const std::string prompt = row["prompt"][0]["content"].get<std::string>();
    nlohmann::ordered_json out_row;
    out_row["data_source"] = "digit_completion";
    out_row["prompt"] = row["prompt"];
    out_row["ability"] = "arithmetic";
    out_row["reward_model"] = {{"style", "rule"}, {"ground_truth", prompt}};
    out_row["extra_info"] = {{"index", index++}};
    text += out_row.dump() + "\n";
  }
  write_file(out, text);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

std::vector<std::string> DigitCompletionSetup::base_overrides(const std::string& run_dir) const {
  return {"data.train_files=" + train_file,
          "data.val_files=" + val_file,
          "data.max_prompt_length=8",
          "data.max_response_length=18",
          "data.train_batch_size=8",
          "data.seed=1",
          "actor_rollout_ref.model.path=" + model_dir,
          "critic.model.path=" + model_dir,
          "actor_rollout_ref.actor.ppo_mini_batch_size=8",
          "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
          "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
          "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
          "critic.ppo_micro_batch_size_per_gpu=8",
          "trainer.n_gpus_per_node=1",
          "trainer.nnodes=1",
          "trainer.device=cpu",
          "trainer.logger=[jsonl]",
          "trainer.val_before_train=false",
          "trainer.project_name=e2e",
          "trainer.experiment_name=digit_completion",
          "trainer.default_local_dir=" + run_dir};
}

DigitCompletionSetup make_digit_completion_setup(const std::string& dir, int val_rows, int hidden_size,
                                                 int num_layers, int num_heads, int intermediate_size) {
  DigitCompletionSetup setup;
  setup.dir = dir;
  run_or_throw(verl_binary() + " data preprocess digit_completion --output-dir " + quote(dir + "/raw") + " --seed 0");
  std::filesystem::create_directories(dir + "/data");
  setup.train_file = dir + "/data/train.jsonl";
  setup.val_file = dir + "/data/test.jsonl";
  write_rl_jsonl(dir + "/raw/train.parquet", setup.train_file, 0);
  write_rl_jsonl(dir + "/raw/test.parquet", setup.val_file, val_rows);
  write_char_tokenizer(dir + "/tok");
  setup.model_dir = dir + "/model";
  setup.model_dir = make_digit_completion_model(
      setup, "model",
      "--arch llama --hidden-size " + std::to_string(hidden_size) + " --num-layers " + std::to_string(num_layers) +
          " --num-heads " + std::to_string(num_heads) + " --num-kv-heads " + std::to_string(num_heads) +
          " --intermediate-size " + std::to_string(intermediate_size > 0 ? intermediate_size : 2 * hidden_size));
  return setup;
}

std::string make_digit_completion_model(const DigitCompletionSetup& setup, const std::string& name,
                                        const std::string& init_flags) {
  const std::string model_dir = setup.dir + "/" + name;
  run_or_throw(verl_binary() + " model init --out " + quote(model_dir) + " --tokenizer " + quote(setup.dir + "/tok") +
               " --vocab-size 16 --seed 1 " + init_flags);
  // The char tokenizer's special ids (model init numbers them from the end of the vocabulary).
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_file(model_dir + "/config.json"));
  config["bos_token_id"] = 0;
  config["eos_token_id"] = 1;
  config["pad_token_id"] = 2;
  write_file(model_dir + "/config.json", config.dump(2));
  write_file(model_dir + "/generation_config.json", R"({"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2})");
  return model_dir;
}

std::string make_sharpened_teacher(const std::string& model_dir, double sharpen, const std::string& name) {
  const std::string dir = make_temp_dir(name);
  model::CausalLM teacher = model::load_model(model_dir, model::LoadOptions{});
  {
    torch::NoGradGuard no_grad;
    (teacher->lm_head ? teacher->lm_head->weight : teacher->model->embed_tokens->weight).mul_(sharpen);
  }
  model::save_model(teacher, dir);
  return dir;
}

std::string verl_train_command(const std::vector<std::string>& overrides) {
  std::string command = verl_binary() + " train";
  for (const auto& o : overrides) command += " " + quote(o);
  return command;
}

TrainRun run_verl_train(const std::vector<std::string>& overrides, const std::string& run_dir) {
  TrainRun run{run_command(verl_train_command(overrides)), {}};
  if (run.result.exit_code == 0) run.history = trainer::read_metrics_jsonl(run_dir + "/metrics.jsonl");
  return run;
}

}  // namespace verl::test
