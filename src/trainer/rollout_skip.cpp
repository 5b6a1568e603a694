#include "verl/trainer/rollout_skip.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "verl/common/atomic_file.h"
#include "verl/common/error.h"
#include "verl/common/logging.h"
#include "verl/data/rl_dataset.h"

namespace verl::trainer {
namespace fs = std::filesystem;

namespace {
constexpr const char* kGenBatch = "gen_batch.dp";
constexpr const char* kMeta = "meta.json";
}  // namespace

RolloutSkip::RolloutSkip(const config::PPOConfig& config) : config_(config.skip_rollout) {
  // verl's _get_project_dump_dir: the generation batch (data.gen_batch_size, else train_batch_size), n and the
  // lengths name the folder, so a dump is only found by a run of the same shape.
  const int64_t gbs = config.data.gen_batch_size.value_or(config.data.train_batch_size);
  const fs::path root = fs::absolute(data::expand_user(config_.dump_dir)).lexically_normal();
  project_dir_ =
      (root / (config.trainer.experiment_name + "_" + config.trainer.project_name) /
       ("GBS" + std::to_string(gbs) + "_N" + std::to_string(config.actor_rollout_ref.rollout.sampling.n) + "_in" +
        std::to_string(config.data.max_prompt_length) + "_out" + std::to_string(config.data.max_response_length)))
          .string();
}

bool RolloutSkip::applies(int64_t step) const {
  return config_.enable && std::find(config_.steps.begin(), config_.steps.end(), step) != config_.steps.end();
}

std::string RolloutSkip::step_dir(int64_t step) const {
  return (fs::path(project_dir_) / std::to_string(step)).string();
}

bool RolloutSkip::has_dump(int64_t step) const {
  const fs::path dir = step_dir(step);
  std::error_code ec;
  return fs::is_regular_file(dir / kGenBatch, ec) && fs::is_regular_file(dir / kMeta, ec);
}

std::optional<int64_t> RolloutSkip::nearest_dump(int64_t step) const {
  if (has_dump(step)) return step;
  std::vector<int64_t> available;
  std::error_code ec;
  for (fs::directory_iterator it(project_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (name.size() > 18) continue;  // not a step number int64 holds
    const int64_t s = std::stoll(name);
    if (has_dump(s)) available.push_back(s);
  }
  std::sort(available.begin(), available.end());
  const auto after = std::upper_bound(available.begin(), available.end(), step);
  if (after != available.begin()) return *(after - 1);  // the latest before
  if (after != available.end()) return *after;          // else the earliest after
  return std::nullopt;
}

std::optional<protocol::DataProto> RolloutSkip::load(int64_t step, int64_t rows) const {
  const std::optional<int64_t> from =
      config_.action == "cache" ? (has_dump(step) ? std::optional<int64_t>(step) : std::nullopt) : nearest_dump(step);
  if (!from) {
    VERL_LOG(Info, "trainer") << "skip.rollout: no dump for step " << step << " under " << project_dir_
                              << "; generating and dumping it";
    return std::nullopt;
  }
  const std::string path = (fs::path(step_dir(*from)) / kGenBatch).string();
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK(in.good(), "trainer", "skip.rollout: cannot read ", path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  protocol::DataProto output;
  try {
    output = protocol::DataProto::deserialize(bytes);
  } catch (const Error& e) {
    VERL_FAIL("trainer", "skip.rollout: ", path, " is not a verl.cpp rollout dump (", e.what(), ")");
  }
  VERL_CHECK(output.size() == rows, "trainer", "skip.rollout: ", path, " holds ", output.size(),
             " responses, but step ", step, " generates ", rows, " (a dump of another batch)");
  VERL_LOG(Info, "trainer") << "skip.rollout: step " << step << " reads the rollout dumped at step " << *from << " ("
                            << path << ") instead of generating";
  return output;
}

void RolloutSkip::dump(int64_t step, const protocol::DataProto& output) const {
  const fs::path dir = step_dir(step);
  try {
    fs::create_directories(dir);
    write_file_atomic((dir / kGenBatch).string(), output.serialize());
    // meta.json last: a folder counts as a dump only once both files are there.
    write_file_atomic((dir / kMeta).string(), nlohmann::json{{"global_steps", step}}.dump());
    VERL_LOG(Info, "trainer") << "skip.rollout: dumped step " << step << "'s rollout to " << dir.string();
  } catch (const std::exception& e) {
    VERL_LOG(Warn, "trainer") << "skip.rollout: could not dump step " << step << "'s rollout to " << dir.string()
                              << ": " << e.what();
  }
}

}  // namespace verl::trainer
