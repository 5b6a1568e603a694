#include "verl/workers/checkpoint_rank_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "verl/common/error.h"
#include "verl/common/input_limits.h"

namespace verl::workers {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointRankFilesComponent = "checkpoint";

std::string rank_suffix(int world_size, int rank) {
  return "world_size_" + std::to_string(world_size) + "_rank_" + std::to_string(rank);
}

}  // namespace

std::string model_file_name(int world_size, int rank) { return "model_" + rank_suffix(world_size, rank) + ".safetensors"; }
std::string optim_file_name(int world_size, int rank) { return "optim_" + rank_suffix(world_size, rank) + ".pt"; }
std::string extra_state_file_name(int world_size, int rank) {
  return "extra_state_" + rank_suffix(world_size, rank) + ".json";
}

std::string expand_user(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  if (path.size() > 1 && path[1] != '/') return path;  // ~user: left as is
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return path;
  return std::string(home) + path.substr(1);
}

void check_checkpoint_rank_file(const std::string& dir, const std::string& file_name, int world_size) {
  VERL_CHECK(fs::is_directory(dir), kCheckpointRankFilesComponent, "checkpoint folder '", dir, "' does not exist");
  if (fs::exists(fs::path(dir) / file_name)) return;
  // Name the world size the folder was saved with, if any rank file is there.
  const std::string marker = "_world_size_";
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    auto at = name.find(marker);
    if (at == std::string::npos) continue;
    auto end = name.find("_rank_", at);
    if (end == std::string::npos) continue;
    const std::string saved = name.substr(at + marker.size(), end - at - marker.size());
    VERL_FAIL(kCheckpointRankFilesComponent, "checkpoint folder '", dir, "' was saved with world size ", saved, " (",
              name, "); this run has world size ", world_size, ": resume needs the same world size");
  }
  VERL_FAIL(kCheckpointRankFilesComponent, "checkpoint folder '", dir, "' has no '", file_name, "'");
}

nlohmann::json load_extra_state(const std::string& dir, int world_size, int rank, const char* component) {
  check_checkpoint_rank_file(dir, extra_state_file_name(world_size, rank), world_size);
  const std::string path = (std::filesystem::path(dir) / extra_state_file_name(world_size, rank)).string();
  std::ifstream in(path);
  VERL_CHECK(in.good(), component, "cannot read '", path, "'");
  std::stringstream text;
  text << in.rdbuf();
  check_json_limits(text.str(), path);
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    VERL_FAIL(component, "'", path, "' is not valid JSON: ", e.what());
  }
}

std::string extra_state_rng(const nlohmann::json& extra, const std::string& generator, const std::string& path,
                            const char* component) {
  const bool present = extra.is_object() && extra.contains("rng") && extra["rng"].is_object() &&
                       extra["rng"].contains(generator);
  VERL_CHECK(present, component, "'", path, "' lacks rng.", generator);
  const nlohmann::json& value = extra["rng"][generator];
  VERL_CHECK(value.is_string(), component, "'", path, "': rng.", generator, " must be a hex string, it is ",
             value.type_name());
  return value.get<std::string>();
}

}  // namespace verl::workers
