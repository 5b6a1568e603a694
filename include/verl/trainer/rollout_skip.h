// verl's skip.rollout (verl/utils/skip/rollout_skip.py): the training rollout of the global steps listed in
// skip.rollout.steps is dumped to disk, and a later run reads it back instead of generating, e.g. to debug what
// follows the rollout without paying for it again. The folder is verl's:
//   <dump_dir>/<experiment_name>_<project_name>/GBS<gen batch>_N<n>_in<max prompt>_out<max response>/<step>/
//     gen_batch.dp   the generation's output (verl.cpp's DataProto bytes; verl's is a pickle, not interchangeable)
//     meta.json      {"global_steps": step}
// action cache: a step with a dump reads it, one without generates and dumps. action repeat: the step's dump, else
// the latest dump before it, else the earliest after it; none: generate and dump. Validation never skips. A dump
// that cannot be written is a warning (the run goes on, as verl's); one that cannot be read, or holds another batch
// size, is an error naming the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "verl/config/ppo_config.h"
#include "verl/protocol/data_proto.h"

namespace verl::trainer {

class RolloutSkip {
 public:
  explicit RolloutSkip(const config::PPOConfig& config);

  // Whether `step`'s rollout is dumped or read back (skip.rollout.enable and the step listed).
  bool applies(int64_t step) const;
  // The dump to use instead of generating `step`'s `rows` responses, or std::nullopt (then generate and dump()).
  std::optional<protocol::DataProto> load(int64_t step, int64_t rows) const;
  // Writes `output` as `step`'s dump (atomically; a failure is a warning).
  void dump(int64_t step, const protocol::DataProto& output) const;

 private:
  std::string step_dir(int64_t step) const;
  bool has_dump(int64_t step) const;
  std::optional<int64_t> nearest_dump(int64_t step) const;  // action repeat

  config::RolloutSkipConfig config_;
  std::string project_dir_;
};

}  // namespace verl::trainer
