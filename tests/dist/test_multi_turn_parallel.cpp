// The multi-turn rollout (rollout.multi_turn with an interaction that answers as the user, so every conversation has
// several policy turns even from a random policy) under model and sequence parallelism, against the 1-rank run on
// the same global batch with greedy rollouts:
//   - megatron TP=2 (mpirun -np 3): the TP group's first rank drives the conversations and its other rank generates
//     each turn with it on its slices (agent/tensor_parallel_turns.h); 2 stages x TP=2 and CP=2 x TP=2 (-np 5): the
//     second stage's (context-parallel rank's) TP group has no part in the rollout. All end two GAE steps with the
//     1-rank run's weights and metrics, the same turns and response lengths (so every turn's tokens were the same);
//   - Ulysses S=2 (-np 3): generation is data-parallel over both ranks, the training passes split the sequences;
//     the same two steps and metrics;
//   - fsdp with rollout.tensor_model_parallel_size=2 (-np 3): the two ranks' rows go to the first, which drives
//     them while the second generates with it on slices of the whole weights; megatron with a rollout TP unlike
//     the actor's (TP 2 with rollout TP 1, 2 stages with rollout TP 2); the same two steps and metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "support/digit_completion_setup.h"
#include "support/dist_run.h"
#include "support/run_command.h"
#include "verl/trainer/tracking.h"

namespace verl::test {
namespace {

namespace fs = std::filesystem;

// The digit-completion task (4 heads and 4 KV heads: TP=2 and S=2 both split them) with each row's
// extra_info.interaction_kwargs naming the interaction, and the interaction: it answers "12" after each policy turn
// (digits, which the character tokenizer writes) and never ends the conversation itself.
struct MultiTurnSetup {
  DigitCompletionSetup base;
  std::string train_file, val_file, interaction_config, model_dir;
};

std::string with_interaction_rows(const std::string& in, const std::string& out) {
  std::ifstream lines(in);
  std::string line, text;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line);
    row["extra_info"]["interaction_kwargs"] = {{"name", "digits"}};
    text += row.dump() + "\n";
  }
  std::ofstream(out) << text;
  return out;
}

const MultiTurnSetup& multi_turn_setup() {
  static const MultiTurnSetup s = [] {
    MultiTurnSetup x;
    x.base = make_digit_completion_setup(make_temp_dir("dist_multi_turn_setup"), 8, /*hidden_size=*/32,
                                         /*num_layers=*/2, /*num_heads=*/4);
    x.train_file = with_interaction_rows(x.base.train_file, x.base.dir + "/data/train_interaction.jsonl");
    x.val_file = with_interaction_rows(x.base.val_file, x.base.dir + "/data/test_interaction.jsonl");
    std::ofstream(x.base.dir + "/digits_interaction.py") << R"PY(
from verl.interactions.base import BaseInteraction


class DigitsInteraction(BaseInteraction):
    async def generate_response(self, instance_id, messages, **kwargs):
        return False, "12", 0.0, {}
)PY";
    // A random policy rarely writes eos: the model's generation_config.json also ends a turn at half the digits
    // (verl, like vLLM, stops at its eos_token_id list), so turns are short and the interaction gets its turns.
    x.model_dir = x.base.dir + "/model_short_turns";
    fs::copy(x.base.model_dir, x.model_dir, fs::copy_options::recursive);
    const std::string generation = x.model_dir + "/generation_config.json";
    nlohmann::json config = nlohmann::json::object();
    if (fs::exists(generation)) config = nlohmann::json::parse(std::ifstream(generation));
    config["eos_token_id"] = {1, 4, 6, 8, 10, 12};  // E and '0', '2', '4', '6', '8'
    std::ofstream(generation) << config.dump(2);
    x.interaction_config = x.base.dir + "/interaction.yaml";
    std::ofstream(x.interaction_config) << "interaction:\n  - name: digits\n    class_name: "
                                           "digits_interaction.DigitsInteraction\n    config: {}\n";
    return x;
  }();
  return s;
}

enum class Layout {
  One,
  TensorParallel,
  TensorParallelTwoStages,
  TensorAndContextParallel,
  Ulysses,
  FsdpRolloutTp,
  MegatronTpWholeRollout,   // actor TP 2, rollout TP 1 (the whole model gathered)
  MegatronStagesRolloutTp,  // actor 2 stages, rollout TP 2 (the whole model gathered and sliced again)
};

std::vector<std::string> multi_turn_gae_run(const std::string& run_dir, Layout layout) {
  const MultiTurnSetup& s = multi_turn_setup();
  std::vector<std::string> o = s.base.base_overrides(run_dir);
  const int slots = layout == Layout::One                                                                     ? 1
                    : layout == Layout::TensorParallelTwoStages || layout == Layout::TensorAndContextParallel ? 4
                                                                                                              : 2;
  for (const std::string& extra :
       {"data.train_files=" + s.train_file,
        "actor_rollout_ref.model.path=" + s.model_dir,
        "critic.model.path=" + s.model_dir,
        "data.val_files=" + s.val_file,
        std::string("data.return_raw_chat=true"),
        std::string("data.max_response_length=24"),
        std::string("algorithm.adv_estimator=gae"),
        std::string("actor_rollout_ref.rollout.do_sample=false"),
        std::string("actor_rollout_ref.rollout.multi_turn.enable=true"),
        "actor_rollout_ref.rollout.multi_turn.interaction_config_path=" + s.interaction_config,
        std::string("actor_rollout_ref.rollout.multi_turn.max_user_turns=2"),
        std::string("actor_rollout_ref.rollout.multi_turn.max_assistant_turns=3"),
        std::string("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
        std::string("critic.ppo_micro_batch_size_per_gpu=4"),
        std::string("trainer.balance_batch=false"),
        std::string("trainer.total_training_steps=2"),
        std::string("trainer.save_freq=2"),
        std::string("trainer.num_cpu_threads=1"),
        std::string("trainer.test_freq=-1"),
        std::string("actor_rollout_ref.actor.optim.lr=1e-3"),
        std::string("critic.optim.lr=1e-3"),
        std::string("actor_rollout_ref.actor.checkpoint.save_contents=[model,hf_model]"),
        std::string("critic.checkpoint.save_contents=[model,hf_model]"),
        "trainer.n_gpus_per_node=" + std::to_string(slots)}) {
    o.push_back(extra);
  }
  if (layout == Layout::MegatronTpWholeRollout || layout == Layout::MegatronStagesRolloutTp) {
    const bool stages = layout == Layout::MegatronStagesRolloutTp;
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"), std::string("critic.strategy=megatron"),
          std::string("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=") + (stages ? "1" : "2"),
          std::string("critic.megatron.tensor_model_parallel_size=") + (stages ? "1" : "2"),
          std::string("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=") + (stages ? "2" : "1"),
          std::string("critic.megatron.pipeline_model_parallel_size=") + (stages ? "2" : "1"),
          std::string("actor_rollout_ref.rollout.tensor_model_parallel_size=") + (stages ? "2" : "1")}) {
      o.push_back(extra);
    }
  }
  if (layout == Layout::TensorParallel || layout == Layout::TensorParallelTwoStages ||
      layout == Layout::TensorAndContextParallel) {
    const std::string pp = layout == Layout::TensorParallelTwoStages ? "2" : "1";
    const std::string cp = layout == Layout::TensorAndContextParallel ? "2" : "1";
    for (const std::string& extra :
         {std::string("actor_rollout_ref.actor.strategy=megatron"), std::string("critic.strategy=megatron"),
          std::string("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"),
          std::string("actor_rollout_ref.rollout.tensor_model_parallel_size=2"),
          std::string("critic.megatron.tensor_model_parallel_size=2"),
          "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=" + pp,
          "critic.megatron.pipeline_model_parallel_size=" + pp,
          "actor_rollout_ref.actor.megatron.context_parallel_size=" + cp,
          "critic.megatron.context_parallel_size=" + cp}) {
      o.push_back(extra);
    }
  }
  if (layout == Layout::FsdpRolloutTp) o.push_back("actor_rollout_ref.rollout.tensor_model_parallel_size=2");
  if (layout == Layout::Ulysses) {
    o.push_back("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2");
    o.push_back("actor_rollout_ref.ref.ulysses_sequence_parallel_size=2");
    o.push_back("critic.ulysses_sequence_parallel_size=2");
  }
  return o;
}

void expect_same_multi_turn_run(const std::string& one_dir, const std::string& dir) {
  for (const std::string role : {"actor", "critic"}) {
    const std::string hf = "/global_step_2/" + role + "/huggingface/model.safetensors";
    ASSERT_TRUE(fs::exists(dir + hf)) << role;
    // As tests/dist/test_megatron.cpp: split GEMMs round differently (<= 2e-4 relative after AdamW turns a ~0
    // gradient into a step of up to lr); a wrong slice, turn or reduction moves every element by ~lr, 1e-1 relative.
    auto [diff, name] = max_relative_difference(dir + hf, one_dir + hf);
    EXPECT_LT(diff, 1e-3) << role << ": " << name;
  }
  const trainer::MetricHistory m1 = trainer::read_metrics_jsonl(one_dir + "/metrics.jsonl");
  const trainer::MetricHistory m2 = trainer::read_metrics_jsonl(dir + "/metrics.jsonl");
  for (const char* key : {"actor/pg_loss", "actor/grad_norm", "actor/entropy", "critic/vf_loss", "critic/grad_norm",
                          "critic/values/mean", "critic/advantages/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) {
      ASSERT_TRUE(m1.at(key).count(step) && m2.at(key).count(step)) << key << " step " << step;
      const double expected = m1.at(key).at(step);
      EXPECT_NEAR(m2.at(key).at(step), expected, 1e-4 * std::max(std::abs(expected), 1e-2)) << key << " step " << step;
    }
  }
  // The conversations: the same turns and the same tokens in each (equal lengths, masks and scores).
  for (const char* key :
       {"num_turns/mean", "num_turns/max", "response_length/mean", "response_length/max", "critic/score/mean"}) {
    ASSERT_TRUE(m1.count(key) && m2.count(key)) << key;
    for (int64_t step = 1; step <= 2; ++step) EXPECT_EQ(m2.at(key).at(step), m1.at(key).at(step)) << key << step;
  }
  // Several policy turns per conversation (verl counts turns as user + assistant + 1): the interaction answered.
  EXPECT_GT(m1.at("num_turns/mean").at(1), 3.0);
}

// The 1-rank run both tests compare with (run once); empty output when it succeeded, else its error.
const std::pair<std::string, std::string>& one_rank_run() {
  static const std::pair<std::string, std::string> run = [] {
    const std::string dir = make_temp_dir("dist_multi_turn_one");
    CommandResult one = run_command(verl_train_command(multi_turn_gae_run(dir, Layout::One)));
    return std::make_pair(dir, one.exit_code == 0 ? std::string() : one.err);
  }();
  return run;
}

// `layouts` under mpirun -np `np` (1 + their slots), each against the 1-rank run.
void expect_layouts_equal_one_rank(int np, const std::vector<Layout>& layouts) {
  const auto& [one_dir, one_error] = one_rank_run();
  ASSERT_EQ(one_error, "");
  for (Layout layout : layouts) {
    SCOPED_TRACE(static_cast<int>(layout));
    const std::string dir = make_temp_dir("dist_multi_turn_parallel");
    CommandResult run = run_command(mpirun(np) + verl_train_command(multi_turn_gae_run(dir, layout)));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    expect_same_multi_turn_run(one_dir, dir);
  }
}

TEST(MultiTurnParallel, TensorParallelWithPipelineStagesOrContextParallelEqualsOneRank) {
  expect_layouts_equal_one_rank(3, {Layout::TensorParallel});
  expect_layouts_equal_one_rank(5, {Layout::TensorParallelTwoStages, Layout::TensorAndContextParallel});
}

TEST(MultiTurnParallel, UlyssesTwoEqualsOneRank) { expect_layouts_equal_one_rank(3, {Layout::Ulysses}); }

// fsdp training with a tensor-parallel rollout (verl's usual layout: vLLM TP over the FSDP ranks): both ranks'
// conversations are driven by the first, the second generates each turn with it on its slices.
TEST(MultiTurnParallel, FsdpWithATensorParallelRolloutEqualsOneRank) {
  expect_layouts_equal_one_rank(3, {Layout::FsdpRolloutTp});
}

// megatron with a rollout TP unlike the actor's: the copy's first rank drives alone on the gathered whole model
// (actor TP 2, rollout TP 1: its TP peer is idle), or drives its rollout group on slices cut again (2 stages,
// rollout TP 2).
TEST(MultiTurnParallel, MegatronWithARolloutTpUnlikeTheActorsEqualsOneRank) {
  expect_layouts_equal_one_rank(3, {Layout::MegatronTpWholeRollout, Layout::MegatronStagesRolloutTp});
}

}  // namespace
}  // namespace verl::test
