// The extra-state file of a worker checkpoint (extra_state_world_size_W_rank_r.json) read back: the RNG states
// the actor restores must be strings; another JSON type there is one error naming the file and the key (before,
// extra["rng"]["cpu"].get<std::string>() threw nlohmann's type_error, which named neither).
#include <gtest/gtest.h>

#include <string>

#include "support/run_command.h"
#include "verl/common/error.h"
#include "verl/workers/checkpoint_rank_files.h"

namespace verl::workers {
namespace {

std::string rng_error(const std::string& text, const std::string& generator) {
  const std::string dir = test::make_temp_dir("extra_state_rng");
  test::write_file(dir + "/" + extra_state_file_name(1, 0), text);
  try {
    extra_state_rng(load_extra_state(dir, 1, 0, "actor"), generator, "f.json", "actor");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointRankFiles, RngStateIsReadOrNamed) {
  const std::string dir = test::make_temp_dir("extra_state_ok");
  test::write_file(dir + "/" + extra_state_file_name(1, 0), R"({"rng": {"cpu": "00ff", "rollout": "ab"}})");
  const nlohmann::json extra = load_extra_state(dir, 1, 0, "actor");
  EXPECT_EQ(extra_state_rng(extra, "cpu", "f.json", "actor"), "00ff");
  EXPECT_EQ(extra_state_rng(extra, "rollout", "f.json", "actor"), "ab");

  EXPECT_NE(rng_error(R"({"rng": {"cpu": 5}})", "cpu").find("'f.json': rng.cpu must be a hex string, it is number"),
            std::string::npos);
  EXPECT_NE(rng_error(R"({"rng": [1]})", "cpu").find("'f.json' lacks rng.cpu"), std::string::npos);
  EXPECT_NE(rng_error(R"([{"rng": 1}])", "rollout").find("'f.json' lacks rng.rollout"), std::string::npos);
}

}  // namespace
}  // namespace verl::workers
