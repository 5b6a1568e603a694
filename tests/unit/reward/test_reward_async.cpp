// Async reward functions and verl 0.9.1's rate_limited manager, through the config as a run loads them: an
// `async def` compute_score is awaited for every call of a batch at once; rate_limited runs every call within
// reward.max_concurrent / max_rpm / max_tpm and reward.timeout, scoring failures 0 with "error" / "timeout". The
// functions record when each call starts and ends, so concurrency is read from their own log, not from timings.
// verl 0.9.1's remote manager runs each call in one of reward.num_workers worker processes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "support/error_text.h"
#include "support/run_command.h"
#include "verl/common/strings.h"
#include "verl/config/config_loader.h"
#include "verl/reward/reward_manager.h"
#include "verl/reward/scorers/reward_worker_pool.h"
#include "verl/tokenizer/unicode.h"

namespace verl::reward {
namespace {

using Json = nlohmann::json;
using protocol::DataProto;
using verl::test::error_of;

// Logs ("start" | "end", time) per call to LOG, a file named by extra_info["log"]; the response text picks the
// behaviour: "raise", "slow" (never returns in time), "block" (blocks the event loop), else a short wait and a
// score of len(response).
const char* const kAsyncReward = R"PY(
import asyncio, json, time

def log(extra_info, what):
    with open(extra_info["log"], "a") as f:
        f.write(json.dumps([what, time.monotonic()]) + "\n")

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    log(extra_info, "start")
    try:
        if solution_str == "raise":
            raise ValueError("judge unavailable")
        if solution_str == "slow":
            await asyncio.sleep(1000)
        if solution_str == "block":
            time.sleep(1000)
        await asyncio.sleep(0.2)
        return float(len(solution_str))
    finally:
        log(extra_info, "end")

def plain_score(data_source, solution_str, ground_truth, extra_info=None):
    log(extra_info, "start")
    try:
        if solution_str == "raise":
            raise ValueError("judge unavailable")
        time.sleep(0.2)
        return {"score": float(len(solution_str)), "judge": "ok"}
    finally:
        log(extra_info, "end")
)PY";

// A byte-level tokenizer folder (ids = bytes), enough to decode the responses.
std::shared_ptr<const tokenizer::Tokenizer> async_test_tokenizer() {
  static const std::shared_ptr<const tokenizer::Tokenizer> tok = [] {
    Json vocab = Json::object();
    for (int b = 0; b < 256; ++b) vocab[tokenizer::byte_to_unicode(static_cast<uint8_t>(b))] = b;
    const Json tokenizer_json = {
        {"version", "1.0"},
        {"added_tokens", Json::array({{{"id", 256},
                                       {"content", "<|endoftext|>"},
                                       {"single_word", false},
                                       {"lstrip", false},
                                       {"rstrip", false},
                                       {"normalized", false},
                                       {"special", true}}})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}}},
        {"post_processor", nullptr},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", true}}},
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}}};
    const std::string dir = test::make_temp_dir("reward_async_tokenizer");
    test::write_file(dir + "/tokenizer.json", tokenizer_json.dump());
    test::write_file(dir + "/tokenizer_config.json", R"({"eos_token": "<|endoftext|>"})");
    return std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_folder(dir));
  }();
  return tok;
}

// One row per response, each response right-padded to the longest; extra_info names the log file.
DataProto async_batch(const std::vector<std::string>& responses, const std::string& log) {
  const auto B = static_cast<int64_t>(responses.size());
  int64_t R = 1;
  for (const auto& r : responses) R = std::max<int64_t>(R, static_cast<int64_t>(r.size()));
  torch::Tensor prompts = torch::full({B, 1}, 'q', torch::kInt64);
  torch::Tensor out = torch::zeros({B, R}, torch::kInt64);
  torch::Tensor mask = torch::zeros({B, 1 + R}, torch::kInt64);
  std::vector<Json> sources, reward_models, extras;
  for (int64_t i = 0; i < B; ++i) {
    const std::string& r = responses[static_cast<size_t>(i)];
    mask[i][0] = 1;
    for (size_t j = 0; j < r.size(); ++j) {
      out[i][static_cast<int64_t>(j)] = static_cast<unsigned char>(r[j]);
      mask[i][1 + static_cast<int64_t>(j)] = 1;
    }
    sources.push_back("judge");
    reward_models.push_back({{"ground_truth", "x"}});
    extras.push_back({{"log", log}});
  }
  return DataProto::from_dict({{"prompts", prompts}, {"responses", out}, {"attention_mask", mask}},
                              {{"data_source", sources}, {"reward_model", reward_models}, {"extra_info", extras}});
}

struct CallLog {
  int max_in_flight = 0;
  std::vector<double> starts;  // seconds after the first start, in start order
};

CallLog read_call_log(const std::string& path) {
  std::vector<std::pair<double, int>> events;  // time, +1 start / -1 end
  for (const std::string& line : split(test::read_file(path), '\n')) {
    if (line.empty()) continue;
    const Json event = Json::parse(line);
    events.emplace_back(event[1].get<double>(), event[0] == "start" ? 1 : -1);
  }
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;  // an end before a start at the same time
  });
  CallLog out;
  int in_flight = 0;
  for (const auto& [time, delta] : events) {
    in_flight += delta;
    out.max_in_flight = std::max(out.max_in_flight, in_flight);
    if (delta > 0) out.starts.push_back(time - events.front().first);
  }
  return out;
}

// A reward function file written to a temp folder, and managers loaded over it with the fixture's overrides.
struct RewardFunctionFixture {
  std::string dir, path;
  std::vector<std::string> fixed_overrides;
  RewardFunctionFixture(const std::string& name, const char* source, std::vector<std::string> overrides = {})
      : dir(test::make_temp_dir(name)), path(dir + "/reward.py"), fixed_overrides(std::move(overrides)) {
    test::write_file(path, source);
  }

  std::unique_ptr<RewardManager> manager(std::vector<std::string> overrides) const {
    overrides.push_back("custom_reward_function.path=" + path);
    overrides.insert(overrides.end(), fixed_overrides.begin(), fixed_overrides.end());
    config::ConfigArgs args;
    args.overrides = std::move(overrides);
    return load_reward_manager(config::load_config(args).ppo, async_test_tokenizer(), 0);
  }
};

struct AsyncRewardFixture : RewardFunctionFixture {
  AsyncRewardFixture() : RewardFunctionFixture("reward_async", kAsyncReward) {}
};

TEST(AsyncRewardFunction, EveryCallOfABatchIsAwaitedAtOnce) {
  const AsyncRewardFixture f;
  const std::string log = f.dir + "/naive.log";
  const RewardResult r = f.manager({})->compute(async_batch({"a", "bb", "ccc", "dddd", "e", "ff"}, log));
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{1.0, 2.0, 3.0, 4.0, 1.0, 2.0}));
  EXPECT_FLOAT_EQ(r.reward_tensor[3][3].item<float>(), 4.0f);
  EXPECT_EQ(read_call_log(log).max_in_flight, 6);  // all six started before any ended
}

TEST(AsyncRewardFunction, FailuresFollowOnErrorAndTimeoutsAreTheFunctions) {
  const AsyncRewardFixture f;
  const std::string log = f.dir + "/failures.log";
  const DataProto batch = async_batch({"ok", "raise", "slow", "fine"}, log);
  std::string e = error_of([&] { f.manager({"custom_reward_function.timeout=0.5"})->compute(batch); });
  EXPECT_NE(e.find("raised on row 1 (data_source 'judge'): ValueError: judge unavailable (at " + f.path),
            std::string::npos)
      << e;
  testing::internal::CaptureStderr();
  const RewardResult r =
      f.manager({"custom_reward_function.timeout=0.5", "custom_reward_function.on_error=zero"})->compute(batch);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{2.0, 0.0, 0.0, 4.0}));
  EXPECT_NE(err.find("2 of 4 samples scored 0"), std::string::npos) << err;
  // "slow" is cancelled at its timeout; "block" holds the event loop until the batch's backstop stops it.
  e = error_of(
      [&] { f.manager({"custom_reward_function.timeout=0.5"})->compute(async_batch({"slow"}, f.dir + "/slow.log")); });
  EXPECT_NE(e.find("did not return within 0.5 s (custom_reward_function.timeout)"), std::string::npos) << e;
  e = error_of([&] {
    f.manager({"custom_reward_function.timeout=0.5"})->compute(async_batch({"block"}, f.dir + "/block.log"));
  });
  EXPECT_NE(e.find("blocked the event loop past the batch's time limit (custom_reward_function.timeout)"),
            std::string::npos)
      << e;
}

// A function that stops the event loop ends the batch with an error; the batch's other calls are cancelled, so
// none of them runs (and writes its line) while the next batch is on the shared loop.
TEST(AsyncRewardFunction, AStoppedLoopLeavesNoCallOfItsBatchForTheNext) {
  const AsyncRewardFixture f;
  const std::string path = f.dir + "/stopping.py";
  test::write_file(path, R"PY(
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if solution_str == "stop":
        asyncio.get_running_loop().stop()
    await asyncio.sleep(0.3)
    with open(extra_info["log"], "a") as f:
        f.write(solution_str + "\n")
    return 1.0
)PY");
  config::ConfigArgs args;
  args.overrides = {"custom_reward_function.path=" + path};
  const std::unique_ptr<RewardManager> manager =
      load_reward_manager(config::load_config(args).ppo, async_test_tokenizer(), 0);
  const std::string first_log = f.dir + "/stopped.log";
  const std::string e = error_of([&] { manager->compute(async_batch({"stop", "late"}, first_log)); });
  EXPECT_NE(e.find("the event loop stopped"), std::string::npos) << e;
  const std::string next_log = f.dir + "/next.log";
  const RewardResult r = manager->compute(async_batch({"next"}, next_log));
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{1.0}));
  EXPECT_EQ(test::read_file(next_log), "next\n");
  EXPECT_FALSE(std::filesystem::exists(first_log)) << test::read_file(first_log);
}

TEST(RateLimitedRewardManager, AtMostMaxConcurrentCallsAtOnceAsyncOrPlain) {
  const AsyncRewardFixture f;
  const std::vector<std::string> responses = {"a", "bb", "ccc", "dddd", "e", "ff", "g"};
  const std::string async_log = f.dir + "/limited_async.log";
  const RewardResult r = f.manager({"reward.reward_manager.name=rate_limited", "+reward.max_concurrent=2"})
                             ->compute(async_batch(responses, async_log));
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 1.0}));
  EXPECT_EQ(read_call_log(async_log).max_in_flight, 2);

  // A plain function runs on threads of its own, also at most two at once; its dict's keys are kept.
  const std::string plain_log = f.dir + "/limited_plain.log";
  const RewardResult p = f.manager({"reward.reward_manager.name=rate_limited", "+reward.max_concurrent=2",
                                    "custom_reward_function.name=plain_score"})
                             ->compute(async_batch(responses, plain_log));
  EXPECT_EQ(p.reward_extra_info.at("score"), (std::vector<Json>{1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 1.0}));
  EXPECT_EQ(p.reward_extra_info.at("judge").front(), "ok");
  EXPECT_EQ(read_call_log(plain_log).max_in_flight, 2);
}

TEST(RateLimitedRewardManager, FailedAndTimedOutCallsScoreZeroWithTheirReason) {
  const AsyncRewardFixture f;
  testing::internal::CaptureStderr();
  const RewardResult r =
      f.manager({"reward_model.reward_manager=rate_limited", "+reward.max_concurrent=4", "+reward.timeout=0.5",
                 "custom_reward_function.on_error=raise"})  // not rate_limited's concern: it never raises
          ->compute(async_batch({"ok", "raise", "slow", "fine"}, f.dir + "/limited_failures.log"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.reward_extra_info.at("acc"), (std::vector<Json>{2.0, 0.0, 0.0, 4.0}));
  EXPECT_EQ(r.reward_extra_info.at("error"), (std::vector<Json>{nullptr, "judge unavailable", nullptr, nullptr}));
  EXPECT_EQ(r.reward_extra_info.at("timeout"), (std::vector<Json>{nullptr, nullptr, true, nullptr}));
  EXPECT_FLOAT_EQ(r.reward_tensor.sum().item<float>(), 6.0f);
  EXPECT_NE(err.find("2 of 4 samples scored 0"), std::string::npos) << err;
}

// max_rpm 600: ten requests a second with a burst of ten, so the 25th call starts 1.5 s or more after the first;
// max_tpm 60000 with 1500 tokens a request: each request waits for its deficit (1000 tokens a second, a burst of
// 1000), the first 0.5 s and the second 1.5 s more.
TEST(RateLimitedRewardManager, RequestAndTokenBudgetsPaceTheCalls) {
  const AsyncRewardFixture f;
  const std::string rpm_log = f.dir + "/rpm.log";
  const std::vector<std::string> many(25, "x");
  f.manager({"reward.reward_manager.name=rate_limited", "+reward.max_concurrent=25", "+reward.max_rpm=600"})
      ->compute(async_batch(many, rpm_log));
  const CallLog rpm = read_call_log(rpm_log);
  ASSERT_EQ(rpm.starts.size(), 25u);
  EXPECT_LT(rpm.starts[9], 0.5);  // the burst
  EXPECT_GE(rpm.starts[24], 1.45);

  const std::string tpm_log = f.dir + "/tpm.log";
  f.manager({"reward.reward_manager.name=rate_limited", "+reward.max_concurrent=4", "+reward.max_tpm=60000",
             "+reward.estimated_tokens_per_request=1500"})
      ->compute(async_batch({"x", "y"}, tpm_log));
  const CallLog tpm = read_call_log(tpm_log);
  ASSERT_EQ(tpm.starts.size(), 2u);
  EXPECT_GE(tpm.starts[1], 1.45);
}

// Logs ("start" | "end", time, pid) per call; "raise" raises, "die" kills its own process (no "end"), "break" also
// leaves its file unloadable, and the others sleep 0.3 s and score len(response) with the pid that scored it. It prints
// to stdout too: the worker's stdout is the trainer's, and the replies go their own way.
const char* const kProcessReward = R"PY(
import json, os, time

def log(extra_info, what):
    with open(extra_info["log"], "a") as f:
        f.write(json.dumps([what, time.monotonic(), os.getpid()]) + "\n")

def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    log(extra_info, "start")
    print("scoring", solution_str, flush=True)
    if solution_str == "die":
        os.kill(os.getpid(), 9)
    if solution_str == "break":  # dies, and leaves a file the next worker cannot load
        with open(__file__, "w") as f:
            f.write("def compute_score(:\n")
        os.kill(os.getpid(), 9)
    try:
        if solution_str == "raise":
            raise ValueError("judge unavailable")
        time.sleep(0.3)
        return {"score": float(len(solution_str)), "pid": os.getpid(), "unit": 1.5}
    finally:
        log(extra_info, "end")
)PY";

struct RemoteRewardFixture : RewardFunctionFixture {
  RemoteRewardFixture()
      : RewardFunctionFixture("reward_remote", kProcessReward, {"reward.reward_manager.name=remote"}) {
    set_reward_worker_executable(test::verl_binary());  // this test binary is not verl
  }
};

TEST(RemoteRewardManager, EachCallRunsInOneOfTheWorkerProcessesAtOnce) {
  const RemoteRewardFixture f;
  const std::string log = f.dir + "/remote.log";
  testing::internal::CaptureStdout();
  const RewardResult r =
      f.manager({"reward.num_workers=3"})->compute(async_batch({"a", "bb", "ccc", "dddd", "e", "ff"}, log));
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{1.0, 2.0, 3.0, 4.0, 1.0, 2.0}));
  EXPECT_EQ(r.reward_extra_info.at("unit"), (std::vector<Json>(6, 1.5)));
  EXPECT_FLOAT_EQ(r.reward_tensor[3][3].item<float>(), 4.0f);
  std::set<int64_t> pids;
  for (const Json& pid : r.reward_extra_info.at("pid")) pids.insert(pid.get<int64_t>());
  EXPECT_EQ(pids.size(), 3u);
  EXPECT_EQ(pids.count(static_cast<int64_t>(::getpid())), 0u);
  EXPECT_EQ(read_call_log(log).max_in_flight, 3);
  EXPECT_NE(out.find("scoring dddd"), std::string::npos) << out;
}

TEST(RemoteRewardManager, FailuresFollowOnErrorAndADeadWorkerFailsItsCallOnly) {
  const RemoteRewardFixture f;
  std::string e = error_of([&] {
    f.manager({"reward.num_workers=2"})->compute(async_batch({"ok", "raise", "fine"}, f.dir + "/raise.log"));
  });
  EXPECT_NE(e.find("raised on row 1 (data_source 'judge'): ValueError: judge unavailable (at " + f.path),
            std::string::npos)
      << e;
  const std::unique_ptr<RewardManager> zero =
      f.manager({"reward.num_workers=2", "custom_reward_function.on_error=zero"});
  testing::internal::CaptureStderr();
  const RewardResult r = zero->compute(async_batch({"ok", "die", "raise", "fine"}, f.dir + "/die.log"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.reward_extra_info.at("score"), (std::vector<Json>{2.0, 0.0, 0.0, 4.0}));
  EXPECT_NE(err.find("2 of 4 samples scored 0"), std::string::npos) << err;
  EXPECT_NE(err.find("ended while scoring this sample: killed by signal 9"), std::string::npos) << err;
  // The worker that died is started again for the next batch: both score it.
  const RewardResult next = zero->compute(async_batch({"a", "bb", "ccc"}, f.dir + "/next.log"));
  EXPECT_EQ(next.reward_extra_info.at("score"), (std::vector<Json>{1.0, 2.0, 3.0}));
  std::set<int64_t> pids;
  for (const Json& pid : next.reward_extra_info.at("pid")) pids.insert(pid.get<int64_t>());
  EXPECT_EQ(pids.size(), 2u);
}

// A worker that cannot start again ends the batch with the load error; the workers still scoring that batch are
// stopped, so none of their replies lands in the next batch.
TEST(RemoteRewardManager, AWorkerThatCannotRestartEndsTheBatchAndLeavesNoReplyBehind) {
  const RemoteRewardFixture f;
  const std::unique_ptr<RewardManager> manager =
      f.manager({"reward.num_workers=2", "custom_reward_function.on_error=zero"});
  const std::string e =
      error_of([&] { manager->compute(async_batch({"break", "a", "bb", "ccc"}, f.dir + "/break.log")); });
  EXPECT_NE(e.find("SyntaxError"), std::string::npos) << e;
  test::write_file(f.path, kProcessReward);
  const RewardResult next = manager->compute(async_batch({"dddd", "ee", "f"}, f.dir + "/after.log"));
  EXPECT_EQ(next.reward_extra_info.at("score"), (std::vector<Json>{4.0, 2.0, 1.0}));
}

TEST(RemoteRewardManager, AFunctionThatDoesNotLoadIsOneErrorNamingIt) {
  const RemoteRewardFixture f;
  const std::string broken = f.dir + "/broken.py";
  test::write_file(broken, "def compute_score(data_source, solution_str:\n");
  const std::string e = error_of([&] {
    config::ConfigArgs args;
    args.overrides = {"custom_reward_function.path=" + broken, "reward.reward_manager.name=remote",
                      "reward.num_workers=2"};
    load_reward_manager(config::load_config(args).ppo, async_test_tokenizer(), 0);
  });
  EXPECT_NE(e.find(broken), std::string::npos) << e;
  EXPECT_NE(e.find("SyntaxError"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

}  // namespace
}  // namespace verl::reward
