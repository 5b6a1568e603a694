// RewardModelWorker: the score lands on each row's last valid response token and equals the model's
// reward_scores; micro-batch size does not matter; an LM folder is refused; verl's chat-template switch
// re-encodes decoded responses with the reward model's own template (checked against hand-built ids).
#include <gtest/gtest.h>

#include "verl/common/error.h"
#include "verl/single_controller/worker_group.h"
#include "verl/workers/reward_model_worker.h"
#include "unit/workers/worker_test_util.h"

namespace verl::workers {
namespace {

using protocol::DataProto;
using protocol::Json;
using single_controller::WorkerContext;

std::unique_ptr<RewardModelWorker> make_rm(const std::vector<std::string>& overrides) {
  auto worker = std::make_unique<RewardModelWorker>(WorkerContext{0, 1, "rm"}, test::ppo_config(overrides));
  worker->init_model(DataProto());
  return worker;
}

std::vector<std::string> rm_overrides(const std::string& dir, int64_t micro) {
  return {"reward_model.enable=true", "reward_model.model.path=" + dir, "reward_model.model.input_tokenizer=null",
          "reward_model.micro_batch_size_per_gpu=" + std::to_string(micro)};
}

TEST(RewardModelWorker, ScoreSitsOnTheLastValidResponseTokenAndEqualsRewardScores) {
  const std::string lm = test::make_lm_folder("rm_score_lm");
  const std::string rm = test::make_value_folder(lm, "rm_score_value", 21);
  DataProto batch = test::make_ppo_batch(5, 4, 3, 13);
  auto worker = make_rm(rm_overrides(rm, 2));
  torch::Tensor scores = worker->compute_rm_score(batch).tensor("rm_scores");
  ASSERT_EQ(scores.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(scores.scalar_type(), torch::kFloat32);

  torch::NoGradGuard no_grad;
  model::CausalLM& m = worker->module();
  torch::Tensor expected = model::reward_scores(m, batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                                batch.tensor("position_ids"));
  // Independently: the value head over every position of the row, read at its last valid response token.
  torch::Tensor every = m->values(m->hidden_states(batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                                   batch.tensor("position_ids")));
  torch::Tensor response_mask = batch.tensor("response_mask");
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t r = response_mask[i].sum().item<int64_t>();
    for (int64_t t = 0; t < 3; ++t) {
      if (t == r - 1) {
        EXPECT_NEAR(scores[i][t].item<float>(), expected[i].item<float>(), 1e-5) << i;
        EXPECT_NEAR(scores[i][t].item<float>(), every[i][4 + t].item<float>(), 1e-5) << i;
        EXPECT_NE(scores[i][t].item<float>(), 0.0f);
      } else {
        EXPECT_EQ(scores[i][t].item<float>(), 0.0f) << i << "," << t;
      }
    }
  }
  torch::Tensor one_by_one = make_rm(rm_overrides(rm, 1))->compute_rm_score(batch).tensor("rm_scores");
  EXPECT_TRUE(torch::allclose(one_by_one, scores, 1e-5, 1e-6));
  // Through a worker group of 2 slots with an uneven batch: same numbers, original order.
  auto cfg = test::ppo_config(rm_overrides(rm, 2));
  auto transport = std::make_shared<single_controller::InProcessTransport>("rm", 2, reward_model_worker_factory(cfg));
  single_controller::WorkerGroup group("rm", transport);
  group.call("init_model");
  EXPECT_TRUE(torch::allclose(group.call("compute_rm_score", batch).tensor("rm_scores"), scores, 1e-5, 1e-6));
}

TEST(RewardModelWorker, RefusesAnLmFolderAndMissingSettings) {
  const std::string lm = test::make_lm_folder("rm_refuse_lm");
  std::string message = test::error_text([&] { make_rm(rm_overrides(lm, 2)); });
  EXPECT_NE(message.find("has no score.weight"), std::string::npos) << message;
  auto overrides = rm_overrides(lm, 2);
  overrides.back() = "reward_model.micro_batch_size_per_gpu=null";
  message = test::error_text([&] { make_rm(overrides); });
  EXPECT_NE(message.find("reward_model.micro_batch_size_per_gpu must be set"), std::string::npos) << message;
  overrides = rm_overrides(lm, 2);
  overrides.front() = "reward_model.enable=false";
  message = test::error_text([&] { make_rm(overrides); });
  EXPECT_NE(message.find("reward_model.enable is false"), std::string::npos) << message;
  // input_tokenizer set but the reward model folder has no tokenizer: a clear error with the remedy.
  const std::string rm = test::make_value_folder(lm, "rm_refuse_value");
  overrides = rm_overrides(rm, 2);
  overrides[2] = "reward_model.model.input_tokenizer=" + rm;
  message = test::error_text([&] { make_rm(overrides); });
  EXPECT_NE(message.find("has no tokenizer.json"), std::string::npos) << message;
  EXPECT_NE(message.find("input_tokenizer=null"), std::string::npos) << message;
}

// A character-level BPE tokenizer: `chars` get ids from `first_id` upward (in order), "</s>" and "<pad>" are
// special added tokens.
const std::string kChars = "abcdefghijklmnopqrstuvwxyz|<> ";

void write_char_tokenizer(const std::string& dir, bool reversed, const std::string& chat_template) {
  Json vocab = Json::object();
  const int n = static_cast<int>(kChars.size());
  for (int i = 0; i < n; ++i) vocab[std::string(1, kChars[i])] = reversed ? n - 1 - i : i;
  vocab["?"] = n;
  Json tokenizer = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}, {"unk_token", "?"}}},
      {"decoder", {{"type", "Fuse"}}},
      {"added_tokens",
       Json::array({{{"id", n + 1}, {"content", "</s>"}, {"lstrip", false}, {"rstrip", false}, {"single_word", false},
                     {"normalized", false}, {"special", true}},
                    {{"id", n + 2}, {"content", "<pad>"}, {"lstrip", false}, {"rstrip", false}, {"single_word", false},
                     {"normalized", false}, {"special", true}}})}};
  test::write_file(dir + "/tokenizer.json", tokenizer.dump());
  Json config = {{"eos_token", "</s>"}, {"pad_token", "<pad>"}};
  if (!chat_template.empty()) config["chat_template"] = chat_template;
  test::write_file(dir + "/tokenizer_config.json", config.dump());
}

int64_t reversed_id(char c) { return static_cast<int64_t>(kChars.size() - 1 - kChars.find(c)); }

TEST(RewardModelWorker, SwitchChatTemplateReencodesWithTheRewardModelsTemplate) {
  const std::string lm = test::make_lm_folder("rm_switch_lm");
  const std::string rm = test::make_value_folder(lm, "rm_switch_value", 5);
  write_char_tokenizer(rm, /*reversed=*/false,
                       "{% for m in messages %}<{{ m['role'][0] }}>{{ m['content'] }}|{% endfor %}");
  const std::string actor_tok = test::make_temp_dir("rm_switch_actor_tokenizer");
  write_char_tokenizer(actor_tok, /*reversed=*/true, "");
  const int64_t eos = static_cast<int64_t>(kChars.size()) + 1, pad = eos + 1;

  // Policy layout, P = R = 4; responses in the actor tokenizer's ids.
  torch::Tensor prompts = torch::tensor({{pad, pad, 7, 8}, {pad, 3, 4, 5}}, torch::kInt64);
  torch::Tensor responses = torch::tensor({{reversed_id('c'), reversed_id('d'), eos, pad},
                                           {reversed_id('w'), reversed_id('x'), reversed_id('y'), reversed_id('z')}},
                                          torch::kInt64);
  torch::Tensor attention_mask = torch::tensor({{0, 0, 1, 1, 1, 1, 1, 0}, {0, 1, 1, 1, 1, 1, 1, 1}}, torch::kInt64);
  DataProto batch = DataProto::from_dict(
      {{"prompts", prompts},
       {"responses", responses},
       {"input_ids", torch::cat({prompts, responses}, 1)},
       {"attention_mask", attention_mask},
       {"position_ids", torch::clamp(attention_mask.cumsum(1) - 1, 0)}},
      {{"raw_prompt",
        {Json::array({{{"role", "user"}, {"content", "hi"}}}),
         Json::array({{{"role", "system"}, {"content", "be"}}, {{"role", "user"}, {"content", "ok"}}})}}});

  auto overrides = rm_overrides(rm, 1);
  overrides[2] = "reward_model.model.input_tokenizer=" + actor_tok;
  overrides.push_back("reward_model.max_length=16");
  auto worker = make_rm(overrides);
  DataProto inputs = worker->reward_model_inputs(batch);
  // Row 0: "<u>hi|<a>cd|" (the eos text removed), right-padded to 16. Row 1 is cut to its first 16 characters.
  const std::vector<std::string> texts = {"<u>hi|<a>cd|", "<s>be|<u>ok|<a>w"};
  torch::Tensor ids = torch::full({2, 16}, pad, torch::kInt64);
  torch::Tensor mask = torch::zeros({2, 16}, torch::kInt64);
  for (int64_t i = 0; i < 2; ++i) {
    for (size_t t = 0; t < texts[i].size(); ++t) {
      ids[i][t] = static_cast<int64_t>(kChars.find(texts[i][t]));
      mask[i][t] = 1;
    }
  }
  EXPECT_TRUE(torch::equal(inputs.tensor("input_ids"), ids)) << inputs.tensor("input_ids");
  EXPECT_TRUE(torch::equal(inputs.tensor("attention_mask"), mask));
  EXPECT_TRUE(torch::equal(inputs.tensor("position_ids"), torch::clamp(mask.cumsum(1) - 1, 0)));

  torch::Tensor scores = worker->compute_rm_score(batch).tensor("rm_scores");
  torch::NoGradGuard no_grad;
  torch::Tensor expected =
      model::reward_scores(worker->module(), ids, mask, torch::clamp(mask.cumsum(1) - 1, 0));
  // Placed on the policy layout's last valid token: response column 2 for row 0, column 3 for row 1.
  torch::Tensor placed = torch::zeros({2, 4});
  placed[0][2] = expected[0];
  placed[1][3] = expected[1];
  EXPECT_TRUE(torch::allclose(scores, placed, 1e-5, 1e-6)) << scores << placed;

  batch.non_tensor_batch.erase("raw_prompt");
  std::string message = test::error_text([&] { worker->compute_rm_score(batch); });
  EXPECT_NE(message.find("data.return_raw_chat=true"), std::string::npos) << message;
}

}  // namespace
}  // namespace verl::workers
