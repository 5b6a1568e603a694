// Reward managers on hand-built batches with a real (byte-level BPE) tokenizer: where the score lands, what the
// scorer receives, reward_extra_info, the printed samples, rm_scores, custom functions through the config,
// on_error, DAPO's overlong penalty. Expected values are worked out by hand from verl 0.9.1's reward-loop naive.py /
// dapo.py (test_reward_loop_oracle.cpp runs them).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "support/error_text.h"
#include "support/fake_sandbox_fusion.h"
#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/config/config_loader.h"
#include "verl/reward/reward_manager.h"
#include "verl/tokenizer/unicode.h"

namespace verl::reward {
namespace {

using verl::test::error_of;

using Json = nlohmann::json;
using protocol::DataProto;

constexpr int64_t kEos = 256;    // <|endoftext|>, special
constexpr int64_t kPad = 257;    // <|pad|>, special
constexpr int64_t kStart = 258;  // <|im_start|>, special

// A byte-level BPE tokenizer folder: token id = byte value (GPT-2 alphabet, no merges) plus three specials.
std::shared_ptr<const tokenizer::Tokenizer> byte_tokenizer() {
  static const std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    Json vocab = Json::object();
    for (int b = 0; b < 256; ++b) vocab[tokenizer::byte_to_unicode(static_cast<uint8_t>(b))] = b;
    Json added = Json::array();
    int id = 256;
    for (const char* content : {"<|endoftext|>", "<|pad|>", "<|im_start|>"}) {
      added.push_back({{"id", id++}, {"content", content}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
    }
    const Json tokenizer_json = {
        {"version", "1.0"},
        {"added_tokens", added},
        {"normalizer", nullptr},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                           {"use_regex", true}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false},
                     {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}}};
    const std::string dir = test::make_temp_dir("reward_manager_tokenizer");
    test::write_file(dir + "/tokenizer.json", tokenizer_json.dump());
    test::write_file(dir + "/tokenizer_config.json",
                     R"({"eos_token": "<|endoftext|>", "pad_token": "<|pad|>"})");
    return std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir));
  }();
  return tok;
}

std::vector<int64_t> bytes(const std::string& text) { return std::vector<int64_t>(text.begin(), text.end()); }

std::vector<int64_t> operator+(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Sample {
  std::vector<int64_t> prompt;    // valid prompt ids (left-padded to P)
  std::vector<int64_t> response;  // valid response ids (right-padded to R)
  std::string data_source;
  Json ground_truth;
  Json extra_info = nullptr;
};

// verl's layout: prompts [B,P] left-padded, responses [B,R] right-padded, attention_mask [B,P+R].
DataProto make_batch(const std::vector<Sample>& samples, int64_t P, int64_t R,
                     const std::string& source_key = "data_source") {
  const auto B = static_cast<int64_t>(samples.size());
  torch::Tensor prompts = torch::full({B, P}, kPad, torch::kInt64);
  torch::Tensor responses = torch::full({B, R}, kPad, torch::kInt64);
  torch::Tensor mask = torch::zeros({B, P + R}, torch::kInt64);
  std::vector<Json> sources, reward_models, extras;
  for (int64_t i = 0; i < B; ++i) {
    const Sample& s = samples[static_cast<size_t>(i)];
    const auto np = static_cast<int64_t>(s.prompt.size());
    const auto nr = static_cast<int64_t>(s.response.size());
    for (int64_t j = 0; j < np; ++j) {
      prompts[i][P - np + j] = s.prompt[static_cast<size_t>(j)];
      mask[i][P - np + j] = 1;
    }
    for (int64_t j = 0; j < nr; ++j) {
      responses[i][j] = s.response[static_cast<size_t>(j)];
      mask[i][P + j] = 1;
    }
    sources.push_back(s.data_source);
    reward_models.push_back({{"ground_truth", s.ground_truth}, {"style", "rule"}});
    extras.push_back(s.extra_info);
  }
  return DataProto::from_dict({{"prompts", prompts}, {"responses", responses}, {"attention_mask", mask}},
                              {{source_key, sources}, {"reward_model", reward_models}, {"extra_info", extras}});
}

// Rewards as {row, column, value} for every non-zero entry.
std::vector<std::tuple<int64_t, int64_t, float>> reward_cells(const torch::Tensor& t) {
  std::vector<std::tuple<int64_t, int64_t, float>> out;
  for (int64_t i = 0; i < t.size(0); ++i) {
    for (int64_t j = 0; j < t.size(1); ++j) {
      const float v = t[i][j].item<float>();
      if (v != 0.0f) out.emplace_back(i, j, v);
    }
  }
  return out;
}

using Cells = std::vector<std::tuple<int64_t, int64_t, float>>;

config::PPOConfig load_config(std::vector<std::string> overrides) {
  config::ConfigArgs args;
  args.overrides = std::move(overrides);
  return config::load_config(args).ppo;
}

// Two math_dapo rows: one wrong answer, one right answer with a special token inside and the eos at the end.
std::vector<Sample> math_dapo_samples() {
  return {{bytes("What?"), bytes("Answer: 5"), "math_dapo", "4"},
          {bytes("2+2=?"), std::vector<int64_t>{kStart} + bytes("Answer: 4") + std::vector<int64_t>{kEos},
           "math_dapo", "4"}};
}

TEST(NaiveRewardManager, ScoreOnLastValidTokenAndDictExtraInfo) {
  NaiveRewardManager manager(byte_tokenizer(), default_score_function(), {});
  const DataProto batch = make_batch(math_dapo_samples(), 6, 12);
  const RewardResult r = manager.compute(batch);
  ASSERT_EQ(r.reward_tensor.sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(r.reward_tensor.dtype(), torch::kFloat32);
  // Row 0: 9 valid response tokens -> column 8; row 1: 11 (special token and eos included) -> column 10.
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 8, -1.0f}, {1, 10, 1.0f}}));
  ASSERT_EQ(r.reward_extra_info.size(), 3u);
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{-1.0, 1.0}));
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{false, true}));
  EXPECT_EQ(r.reward_extra_info.at("pred"), (std::vector<Json>{"5", "4"}));
}

// verl 0.9.1's reward-loop managers record a plain number as "acc" too.
TEST(NaiveRewardManager, ScalarScoresAreAlsoAcc) {
  NaiveRewardManager manager(byte_tokenizer(), default_score_function(), {});
  const DataProto batch = make_batch({{bytes("q"), bytes("#### 1,000") + std::vector<int64_t>{kEos}, "openai/gsm8k",
                                       "1000"},
                                      {bytes("q"), bytes("#### 7"), "openai/gsm8k", "8"}},
                                     4, 12);
  const RewardResult r = manager.compute(batch);
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 10, 1.0f}}));
  ASSERT_EQ(r.reward_extra_info.size(), 1u);
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{1.0, 0.0}));
}

TEST(NaiveRewardManager, ScorerSeesDecodedTextGroundTruthAndExtraInfo) {
  struct Call {
    std::string data_source, solution;
    Json ground_truth, extra_info;
  };
  std::vector<Call> calls;
  ComputeScoreFn record = [&](const std::string& ds, const std::string& sol, const Json& gt, const Json& extra) {
    calls.push_back({ds, sol, gt, extra});
    return ScoreResult::scalar(static_cast<double>(calls.size()) + 0.5);
  };
  RewardManagerOptions options;
  options.reward_fn_key = "src";
  NaiveRewardManager manager(byte_tokenizer(), record, options);
  DataProto batch = make_batch({{bytes("ab"), std::vector<int64_t>{kStart} + bytes("x y") + std::vector<int64_t>{kEos},
                                 "s1", Json::array({1, 2}), Json{{"index", 3}}},
                                {bytes("c"), {}, "s2", "g"},  // nothing generated: score on the last column
                                {{}, bytes("z"), "s1", 5}},   // no valid prompt token
                               3, 6, "src");
  batch.non_tensor_batch["__num_turns__"] = {2, 3, 4};
  const RewardResult r = manager.compute(batch);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].data_source, "s1");
  EXPECT_EQ(calls[0].solution, "x y");  // special tokens skipped
  EXPECT_EQ(calls[0].ground_truth, Json::array({1, 2}));
  // verl 0.9.1's agent loop fields ([] for a single-turn rollout), then num_turns and rollout_reward_scores.
  EXPECT_EQ(calls[0].extra_info, (Json{{"index", 3},
                                       {"turn_scores", Json::array()},
                                       {"tool_rewards", Json::array()},
                                       {"num_turns", 2},
                                       {"rollout_reward_scores", Json::object()}}));
  EXPECT_EQ(calls[1].solution, "");
  EXPECT_EQ(calls[1].extra_info, (Json{{"turn_scores", Json::array()},
                                       {"tool_rewards", Json::array()},
                                       {"num_turns", 3},
                                       {"rollout_reward_scores", Json::object()}}));
  EXPECT_EQ(calls[2].ground_truth, 5);
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 4, 1.5f}, {1, 5, 2.5f}, {2, 0, 3.5f}}));
}

TEST(NaiveRewardManager, PrintsNumExamineSamplesPerDataSource) {
  RewardManagerOptions options;
  options.num_examine = 1;
  NaiveRewardManager manager(byte_tokenizer(), default_score_function(), options);
  std::vector<Sample> samples = math_dapo_samples();
  samples.push_back({bytes("1+2?"), bytes("Answer: 3"), "math", "3"});  // another source, same scorer
  testing::internal::CaptureStdout();
  std::string error;
  try {
    manager.compute(make_batch(samples, 6, 12));
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(error, "");
  EXPECT_EQ(out,
            "[prompt] What?\n[response] Answer: 5\n[ground_truth] 4\n[score] -1.0\n[acc] False\n[pred] 5\n"
            "[prompt] 1+2?\n[response] Answer: 3\n[ground_truth] 3\n[score] 1.0\n[acc] True\n[pred] 3\n");
  // num_examine = 0 (the training manager) prints nothing.
  NaiveRewardManager quiet(byte_tokenizer(), default_score_function(), {});
  testing::internal::CaptureStdout();
  quiet.compute(make_batch(samples, 6, 12));
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
}

TEST(NaiveRewardManager, RmScoresAreReturnedAsIs) {
  NaiveRewardManager manager(byte_tokenizer(), [](auto&&...) -> ScoreResult {
    ADD_FAILURE() << "rule scoring must be skipped when rm_scores exist";
    return ScoreResult::scalar(0);
  }, {});
  DataProto batch = make_batch(math_dapo_samples(), 6, 12);
  const torch::Tensor rm = torch::arange(24, torch::kFloat32).reshape({2, 12});
  batch.batch["rm_scores"] = rm;
  batch.non_tensor_batch["judge"] = {"good", "bad"};
  batch.meta_info["reward_extra_keys"] = {"judge"};
  const RewardResult r = manager.compute(batch);
  EXPECT_TRUE(torch::equal(r.reward_tensor, rm));
  EXPECT_EQ(r.reward_extra_info.at("judge"), (std::vector<Json>{"good", "bad"}));
}

TEST(NaiveRewardManager, BadBatchesAreClearErrors) {
  NaiveRewardManager manager(byte_tokenizer(), default_score_function(), {});
  DataProto batch = make_batch(math_dapo_samples(), 6, 12);
  DataProto no_source = batch;
  no_source.non_tensor_batch.erase("data_source");
  EXPECT_NE(error_of([&] { manager.compute(no_source); }).find("no non-tensor column 'data_source'"),
            std::string::npos);
  DataProto no_responses = batch;
  no_responses.batch.erase("responses");
  EXPECT_NE(error_of([&] { manager.compute(no_responses); }).find("no 'responses' tensor"), std::string::npos);
  DataProto unknown = make_batch({{bytes("q"), bytes("1"), "my_source", "1"}}, 2, 2);
  const std::string e = error_of([&] { manager.compute(unknown); });
  EXPECT_NE(e.find("row 0 (data_source 'my_source'): "), std::string::npos) << e;
  DataProto numeric = make_batch({{bytes("q"), bytes("1"), "openai/gsm8k", 1}}, 2, 2);
  EXPECT_NE(error_of([&] { manager.compute(numeric); }).find("ground_truth must be a string"), std::string::npos);
}

const char* const kPythonReward = R"PY(
def compute_score(data_source, solution_str, ground_truth, extra_info=None, scale=1.0):
    if "bad" in solution_str:
        raise ValueError("bad row")
    return {"score": scale * float(solution_str.strip() == ground_truth), "len": len(solution_str)}
)PY";

TEST(LoadRewardManager, PythonRewardFunctionThroughTheConfig) {
  const std::string dir = test::make_temp_dir("reward_manager_python");
  test::write_file(dir + "/reward.py", kPythonReward);
  auto manager = load_reward_manager(
      load_config({"custom_reward_function.path=" + dir + "/reward.py", "+custom_reward_function.reward_kwargs.scale=3"}),
      byte_tokenizer(), 0);
  const RewardResult r = manager->compute(make_batch(
      {{bytes("q"), bytes("42") + std::vector<int64_t>{kEos}, "anything", "42"}, {bytes("q"), bytes(" 7"), "x", "8"}},
      2, 4));
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 2, 3.0f}}));
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{3.0, 0.0}));
  EXPECT_EQ(r.reward_extra_info.at("len"), (std::vector<Json>{2, 2}));
}

TEST(LoadRewardManager, CodeRowsRunTheirTestsThroughTheDefaultScorer) {
  // verl's prime_code behind the default scorer, in a batch with a gsm8k row; the code rows' tests as verl's JSON
  // string and as an object. reward.num_workers=2: two code rows at once.
  const Json tests = {{"inputs", {"2\n", "5\n"}}, {"outputs", {"4\n", "25\n"}}};
  auto manager = load_reward_manager(load_config({"reward.num_workers=2"}), byte_tokenizer(), 0);
  const RewardResult r = manager->compute(
      make_batch({{bytes("q"), bytes("```python\nn = int(input())\nprint(n * n)\n```"), "codecontests", tests.dump()},
                  {bytes("q"), bytes("#### 3"), "openai/gsm8k", "3"},
                  {bytes("q"), bytes("print(2 * int(input()))"), "taco", tests},
                  {bytes("q"), bytes("print("), "apps", tests}},
                 2, 48));
  const torch::Tensor per_row = r.reward_tensor.sum(1);
  EXPECT_EQ((std::vector<float>(per_row.data_ptr<float>(), per_row.data_ptr<float>() + 4)),
            (std::vector<float>{1.0f, 1.0f, 0.5f, 0.0f}));
}

TEST(LoadRewardManager, CodeRowsGoToTheSandboxServiceWhenItsUrlIsSet) {
  // The batch above with reward.sandbox_fusion.url (or verl's legacy sandbox_fusion.url): the code rows are
  // requests to the service, which scores a response without a fence 0 where prime_code ran it.
  const Json tests = {{"inputs", {"2\n", "5\n"}}, {"outputs", {"4\n", "25\n"}}};
  const std::string dir = test::make_temp_dir("reward_manager_sandbox");
  test::FakeSandboxFusion service("--log " + dir + "/requests.jsonl");
  for (const std::string key : {"reward.sandbox_fusion.url", "sandbox_fusion.url"}) {
    auto manager = load_reward_manager(load_config({key + "=" + service.url()}), byte_tokenizer(), 0);
    const RewardResult r = manager->compute(
        make_batch({{bytes("q"), bytes("```python\nn = int(input())\nprint(n * n)\n```"), "codecontests", tests.dump()},
                    {bytes("q"), bytes("#### 3"), "openai/gsm8k", "3"},
                    {bytes("q"), bytes("print(2 * int(input()))"), "taco", tests},
                    {bytes("q"), bytes("```py\nprint(2 * int(input()))\n```"), "apps", tests}},
                   2, 48));
    const torch::Tensor per_row = r.reward_tensor.sum(1);
    EXPECT_EQ((std::vector<float>(per_row.data_ptr<float>(), per_row.data_ptr<float>() + 4)),
              (std::vector<float>{1.0f, 1.0f, 0.0f, 0.5f}))
        << key;
  }
  const std::string requests = test::read_file(dir + "/requests.jsonl");
  EXPECT_EQ(std::count(requests.begin(), requests.end(), '\n'), 8);  // 2 code rows with a fence, 2 tests, 2 runs
}

TEST(LoadRewardManager, RaisingFunctionUnderBothPolicies) {
  const std::string dir = test::make_temp_dir("reward_manager_raising");
  const std::string path = dir + "/reward.py";
  test::write_file(path, kPythonReward);
  const DataProto batch = make_batch({{bytes("q"), bytes("1"), "src_a", "1"},
                                      {bytes("q"), bytes("bad"), "src_b", "1"},
                                      {bytes("q"), bytes("bad"), "src_b", "1"},
                                      {bytes("q"), bytes("1"), "src_a", "1"}},
                                     2, 4);
  auto strict = load_reward_manager(load_config({"custom_reward_function.path=" + path}), byte_tokenizer(), 0);
  EXPECT_EQ(error_of([&] { strict->compute(batch); }),
            "[reward] reward function 'compute_score' from '" + path +
                "' raised on row 1 (data_source 'src_b'): ValueError: bad row (at " + path +
                ":4) (set custom_reward_function.on_error=zero to score such samples 0)");

  auto lenient = load_reward_manager(
      load_config({"custom_reward_function.path=" + path, "custom_reward_function.on_error=zero"}), byte_tokenizer(), 0);
  testing::internal::CaptureStderr();
  const RewardResult r = lenient->compute(batch);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 0, 1.0f}, {3, 0, 1.0f}}));
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{1.0, 0.0, 0.0, 1.0}));
  EXPECT_EQ(r.reward_extra_info.at("len"), (std::vector<Json>{1, nullptr, nullptr, 1}));
  // One warning for the step, naming the first failure.
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("2 of 4 samples scored 0"), std::string::npos) << err;
  EXPECT_NE(err.find("row 1 (data_source 'src_b')"), std::string::npos) << err;
}

// custom_reward_function.timeout: a call past it is the function's error, so on_error=zero scores the sample 0
// (and NaN likewise), and the run goes on.
TEST(LoadRewardManager, TimeoutAndNaNAreHandledLikeExceptions) {
  const std::string dir = test::make_temp_dir("reward_manager_timeout");
  const std::string path = dir + "/reward.py";
  test::write_file(path,
                   "import time\n"
                   "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                   "    if solution_str == 'slow':\n"
                   "        time.sleep(1000)\n"
                   "    if solution_str == 'nan':\n"
                   "        return float('nan')\n"
                   "    return 1.0\n");
  const DataProto batch = make_batch({{bytes("q"), bytes("1"), "src_a", "1"},
                                      {bytes("q"), bytes("slow"), "src_b", "1"},
                                      {bytes("q"), bytes("nan"), "src_c", "1"}},
                                     2, 4);
  auto lenient = load_reward_manager(load_config({"custom_reward_function.path=" + path,
                                                  "custom_reward_function.on_error=zero",
                                                  "custom_reward_function.timeout=0.5"}),
                                     byte_tokenizer(), 0);
  testing::internal::CaptureStderr();
  const RewardResult r = lenient->compute(batch);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 0, 1.0f}}));
  EXPECT_NE(err.find("2 of 3 samples scored 0"), std::string::npos) << err;
  EXPECT_NE(err.find("did not return within 0.5 s (custom_reward_function.timeout)"), std::string::npos) << err;
  auto strict = load_reward_manager(
      load_config({"custom_reward_function.path=" + path, "custom_reward_function.timeout=0.5"}), byte_tokenizer(), 0);
  EXPECT_NE(error_of([&] { strict->compute(batch); })
                .find("raised on row 1 (data_source 'src_b'): reward function 'compute_score' from '" + path +
                      "' did not return within 0.5 s"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_config({"custom_reward_function.timeout=-1"}); })
                .find("custom_reward_function.timeout must be a number of seconds >= 0"),
            std::string::npos);
}

TEST(LoadRewardManager, PluginThroughTheConfig) {
  auto manager = load_reward_manager(
      load_config({std::string("custom_reward_function.path=") + VERL_TEST_REWARD_PLUGIN}), byte_tokenizer(), 0);
  const RewardResult r = manager->compute(make_batch(
      {{bytes("q"), bytes("it is 42"), "s", "42"}, {bytes("q"), bytes("it is 4"), "s", "42"}}, 2, 10));
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 7, 1.0f}}));
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{1.0, 0.0}));
  const std::string e = error_of([&] {
    manager->compute(make_batch({{bytes("q"), bytes("1"), "s", "1"}, {bytes("q"), bytes("FAIL"), "s9", "1"}}, 2, 4));
  });
  EXPECT_NE(e.find("raised on row 1 (data_source 's9'): plugin returned 7: cannot score a FAIL answer"),
            std::string::npos)
      << e;
}

TEST(LoadRewardManager, DapoOverlongBufferPenalty) {
  auto manager = load_reward_manager(load_config({"reward_model.reward_manager=dapo",
                                                  "+reward_model.reward_kwargs.max_resp_len=12",
                                                  "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=true",
                                                  "+reward_model.reward_kwargs.overlong_buffer_cfg.len=4",
                                                  "+reward_model.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0",
                                                  "+reward_model.reward_kwargs.overlong_buffer_cfg.log=true"}),
                                     byte_tokenizer(), 0);
  std::vector<Sample> samples = math_dapo_samples();
  samples.push_back({bytes("q"), bytes("Answer: 4"), "math_dapo", "4"});
  samples[2].response.resize(5);  // "Answer" cut: 5 tokens, under expected_len = 12 - 4 = 8
  const RewardResult r = manager->compute(make_batch(samples, 6, 12));
  // Row 0: 9 tokens, exceed 1 -> -0.25, score -1; row 1: 11 tokens, exceed 3 -> -0.75, score 1;
  // row 2: no penalty, score -1 (no answer).
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 8, -1.25f}, {1, 10, 0.25f}, {2, 4, -1.0f}}));
  EXPECT_EQ(r.reward_extra_info.at("overlong_reward"), (std::vector<Json>{-0.25, -0.75, 0.0}));
  EXPECT_EQ(r.reward_extra_info.at("overlong"), (std::vector<Json>{true, true, false}));
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{-1.0, 1.0, -1.0}));
  // Without the buffer config dapo scores like naive.
  auto plain = load_reward_manager(load_config({"reward_model.reward_manager=dapo"}), byte_tokenizer(), 0);
  EXPECT_EQ(reward_cells(plain->compute(make_batch(math_dapo_samples(), 6, 12)).reward_tensor),
            (Cells{{0, 8, -1.0f}, {1, 10, 1.0f}}));
}

// verl's digit-completion e2e reward: 1/(len(gt)+1) on every response token that continues the ground truth's
// prefix, 0 from the first mismatch on; the EOS token repeats the last character's value. Hand-computed:
// "3,5:9,2" -> diff 2 -> "7,0" (3 characters, shares of 0.25).
TEST(DigitCompletionRewardManager, DenseRewardOnEveryResponseToken) {
  const std::vector<int64_t> eos{kEos};
  const std::vector<Sample> samples = {
      {bytes("3,5:9,2"), bytes("7,0") + eos, "digit_completion", "3,5:9,2"},   // right: 4 x 0.25 = 1
      {bytes("3,5:9,2"), bytes("7,1") + eos, "digit_completion", "3,5:9,2"},   // third character wrong
      {bytes("3,5:9,2"), bytes("7,") + eos, "digit_completion", "7,0"},        // short prefix, truth given directly
      {bytes("1,2:9,0"), eos, "digit_completion", "1,2:9,0"},                  // k = 0: empty answer scores 1
      {bytes("3,5:9,2"), bytes("8,0,1"), "digit_completion", "3,5:9,2"}};      // first wrong, no eos
  const RewardResult r = DigitCompletionRewardManager(byte_tokenizer(), 0).compute(make_batch(samples, 8, 6));
  EXPECT_EQ(reward_cells(r.reward_tensor), (Cells{{0, 0, 0.25f}, {0, 1, 0.25f}, {0, 2, 0.25f}, {0, 3, 0.25f},
                                                  {1, 0, 0.25f}, {1, 1, 0.25f},
                                                  {2, 0, 0.25f}, {2, 1, 0.25f}, {2, 2, 0.25f},
                                                  {3, 0, 1.0f}}));
  EXPECT_TRUE(r.reward_extra_info.empty());

  testing::internal::CaptureStdout();
  DigitCompletionRewardManager(byte_tokenizer(), 1).compute(make_batch(samples, 8, 6));
  EXPECT_EQ(testing::internal::GetCapturedStdout(),
            "[prompt] 3,5:9,2\n[response] 7,0\n[ground_truth] 7,0\n[score] 1.0\n");

  std::string e = error_of([&] {
    DigitCompletionRewardManager(byte_tokenizer(), 0)
        .compute(make_batch({{bytes("1"), bytes("1"), "digit_completion", "1,x:9,1"}}, 2, 2));
  });
  EXPECT_NE(e.find("'1,x:9,1'"), std::string::npos) << e;
  e = error_of([&] {
    DigitCompletionRewardManager(byte_tokenizer(), 0)
        .compute(make_batch({{bytes("1"), bytes("1"), "digit_completion", 7}}, 2, 2));
  });
  EXPECT_NE(e.find("string \"ground_truth\""), std::string::npos) << e;
  e = error_of([] {
    load_reward_manager(load_config({"reward_model.reward_manager=digit_completion",
                                     "custom_reward_function.path=/some/file.py"}),
                        byte_tokenizer(), 0);
  });
  EXPECT_NE(e.find("computes its own dense reward"), std::string::npos) << e;
}

TEST(LoadRewardManager, ConfigErrorsListTheChoices) {
  std::string e = error_of([] { load_config({"reward_model.reward_manager=prime"}); });
  EXPECT_NE(e.find("expected one of: naive, dapo, gdpo, rate_limited, remote, digit_completion"), std::string::npos)
      << e;
  for (const std::string& name : supported_reward_managers()) {
    EXPECT_NO_THROW(load_reward_manager(load_config({"reward_model.reward_manager=" + name}), byte_tokenizer(), 0));
  }
  config::PPOConfig config = load_config({});
  config.reward_model.reward_manager = "batch";
  e = error_of([&] { load_reward_manager(config, byte_tokenizer(), 0); });
  EXPECT_EQ(e,
            "[reward] reward_model.reward_manager is 'batch'; verl.cpp implements: naive, dapo, gdpo, rate_limited, "
            "remote, digit_completion");
  e = error_of([] { load_reward_manager(load_config({"+reward_model.reward_kwargs.max_resp_len=3"}), byte_tokenizer(), 0); });
  EXPECT_NE(e.find("reward_model.reward_kwargs has key 'max_resp_len', which the naive reward manager does not take"),
            std::string::npos)
      << e;
  e = error_of([] {
    load_reward_manager(load_config({"reward_model.reward_manager=dapo",
                                     "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=true"}),
                        byte_tokenizer(), 0);
  });
  EXPECT_NE(e.find("max_resp_len must be set"), std::string::npos) << e;
  e = error_of([] {
    load_reward_manager(load_config({"reward_model.reward_manager=dapo", "+reward.reward_kwargs.max_resp_len=3",
                                     "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
                                     "+reward.reward_kwargs.overlong_buffer_cfg.len=4"}),
                        byte_tokenizer(), 0);
  });
  EXPECT_NE(e.find("max_resp_len (3) must be >= overlong_buffer_cfg.len (4)"), std::string::npos) << e;
  for (const char* bad : {"+reward.max_concurrent=0", "+reward.max_rpm=0", "+reward.timeout=0",
                          "+reward.estimated_tokens_per_request=-1"}) {
    e = error_of([&] { load_config({bad}); });
    EXPECT_NE(e.find(std::string(bad).substr(1, std::string(bad).find('=') - 1)), std::string::npos) << e;
  }
  e = error_of([] { load_config({"custom_reward_function.on_error=ignore"}); });
  EXPECT_NE(e.find("expected one of: raise, zero"), std::string::npos) << e;
  e = error_of([] { load_reward_manager(load_config({"custom_reward_function.path=/no/such.py"}), byte_tokenizer(), 0); });
  EXPECT_NE(e.find("reward function file '/no/such.py' not found"), std::string::npos) << e;
}

}  // namespace
}  // namespace verl::reward
