// verl sft --config-name sft_trainer_engine's loss against verl 0.9.1's own sft_loss
// (tests/golden/trainer/sft_engine_loss_reference.py under .venv/test): the model's next-token log-probs of a batch of
// conversations, handed to verl's function as its no_padding micro-batches with the batch's token count, must give
// the trainer's micro-batch losses and their sum (the train/loss metric), padded and packed forwards alike.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.h"
#include "support/test_python.h"
#include "support/tiny_sft_setup.h"
#include "verl/config/sft_config.h"
#include "verl/io/parquet/writer.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::test {
namespace {

using loss_json = nlohmann::json;

io::Value chat_message(const std::string& role, const std::string& content) {
  return io::Value(io::Struct{{"role", io::Value(role)}, {"content", io::Value(content)}});
}

// Conversations of one to three exchanges over the arithmetic SFT rows' text.
std::string write_conversations(const std::string& dir, int64_t rows) {
  std::vector<io::Value> out;
  for (int64_t i = 0; i < rows; ++i) {
    io::List messages;
    if (i % 3 == 1) messages.push_back(chat_message("system", "answer with a number"));
    for (int64_t turn = 0; turn <= i % 3; ++turn) {
      const int64_t a = 3 * i + turn, b = i + 2 * turn + 1;
      messages.push_back(chat_message("user", std::to_string(a) + "+" + std::to_string(b) + "="));
      messages.push_back(chat_message("assistant", std::to_string(a + b)));
    }
    out.push_back(io::Value(io::Struct{{"messages", io::Value(std::move(messages))}}));
  }
  const std::string path = dir + "/talks.parquet";
  io::parquet::write_parquet(path, out);
  return path;
}

TEST(SFTEngineLossGolden, MicroBatchLossesEqualVerlsSftLoss) {
  const std::string dir = make_temp_dir("sft_engine_loss_golden");
  TinySFTSetup s = make_tiny_sft_setup(dir, 2, 2, /*hidden=*/32, /*layers=*/2, /*seed=*/7);
  const std::string talks = write_conversations(dir, 6);
  for (const bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "packed" : "padded");
    config::ConfigArgs args;
    args.config_name = "sft_trainer_engine";
    args.overrides = {"trainer.device=cpu",
                      "data.train_files=" + talks,
                      "data.train_batch_size=6",
                      "data.micro_batch_size_per_gpu=2",
                      "data.use_dynamic_bsz=false",
                      "data.max_length=64",
                      "model.path=" + s.model_dir,
                      std::string("model.use_remove_padding=") + (packed ? "true" : "false"),
                      "trainer.default_local_dir=" + dir + "/run",
                      "trainer.logger=[]"};
    trainer::SFTTrainer t(config::load_sft_config(args).sft, "");
    const data::SFTBatch batch = t.train_dataset().all();
    ASSERT_EQ(batch.size(), 6);

    // The model's log-prob of each next token (the last real token's is never weighed: 0).
    torch::NoGradGuard no_grad;
    t.model()->eval();
    const torch::Tensor logits = t.model()->forward(batch.input_ids, batch.attention_mask, batch.position_ids);
    const torch::Tensor next = torch::log_softmax(logits.to(torch::kFloat64), -1)
                                   .slice(1, 0, -1)
                                   .gather(-1, batch.input_ids.slice(1, 1).unsqueeze(-1))
                                   .squeeze(-1);
    loss_json spec = {{"rows", loss_json::array()}, {"micro_batches", {{0, 1}, {2, 3}, {4, 5}}}};
    for (int64_t r = 0; r < batch.size(); ++r) {
      const int64_t length = batch.attention_mask[r].sum().item<int64_t>();
      std::vector<double> log_probs(static_cast<size_t>(length), 0.0);
      std::vector<int64_t> mask(static_cast<size_t>(length));
      for (int64_t j = 0; j < length; ++j) {
        if (j + 1 < length) log_probs[static_cast<size_t>(j)] = next[r][j].item<double>();
        mask[static_cast<size_t>(j)] = batch.loss_mask[r][j].item<int64_t>();
      }
      spec["rows"].push_back({{"log_probs", log_probs}, {"loss_mask", mask}});
    }
    write_file(dir + "/spec.json", spec.dump());
    const std::string script =
        std::string(VERL_SOURCE_DIR_FOR_TESTS) + "/tests/golden/trainer/sft_engine_loss_reference.py";
    const CommandResult r = run_command(test_python() + script + " " + dir + "/spec.json " + dir + "/out.json");
    ASSERT_EQ(r.exit_code, 0) << test_python_missing_hint() << "\n" << r.err;
    const loss_json out = loss_json::parse(read_file(dir + "/out.json"));

    const double batch_tokens = batch.loss_mask.sum().item<double>();
    EXPECT_EQ(out["batch_num_tokens"].get<double>(), batch_tokens);
    for (int64_t m = 0; m < 3; ++m) {
      const double got = t.micro_batch_loss(batch.slice(2 * m, 2 * m + 2), 3, false, batch_tokens).item<double>();
      const double want = out["micro_losses"][m].get<double>();
      EXPECT_NEAR(got, want, 1e-5 * std::abs(want)) << "micro batch " << m;
    }
    const double want_loss = out["loss"].get<double>();
    EXPECT_GT(want_loss, 1.0);  // a random model: far from fitted
    EXPECT_NEAR(t.batch_loss(batch, false), want_loss, 1e-5 * want_loss);
  }
}

}  // namespace
}  // namespace verl::test
