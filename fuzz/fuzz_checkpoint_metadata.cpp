// Checkpoint metadata, read at resume through the trainer's and workers' own readers. The first byte picks the
// file the rest of the input becomes:
//   0  latest_checkpointed_iteration.txt  find_latest_checkpoint (global_step_1/ exists in the folder)
//   1  global_step_N/data.json            read_trainer_state, then the dataloader's load_state_dict and the
//                                         uid generator's load_state, as PPOTrainer::load_checkpoint does (the
//                                         sampler has the seed checkpoint's settings: 800 rows, batches of 8)
//   2  extra_state_world_size_1_rank_0.json  load_extra_state, then rng.cpu / rng.rollout (extra_state_rng)
//   3  <file>.crc32c                      verify_file_digest of a fixed 5-byte file
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz_support.h"
#include "verl/common/file_digest.h"
#include "verl/data/batch_sampler.h"
#include "verl/trainer/checkpoint_paths.h"
#include "verl/trainer/trainer_state.h"
#include "verl/trainer/uid_generator.h"
#include "verl/workers/checkpoint_rank_files.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = verl::fuzz::scratch_path("checkpoint");
  static const bool made = fs::create_directories(dir + "/global_step_1/actor") || true;
  (void)made;
  if (size == 0) return 0;
  const uint8_t* body = data + 1;
  const size_t n = size - 1;
  switch (data[0] % 4) {
    case 0: {
      verl::fuzz::write_bytes(verl::trainer::latest_tracker_path(dir), body, n);
      verl::fuzz::expect_only_verl_errors([&] { verl::trainer::find_latest_checkpoint(dir); });
      break;
    }
    case 1: {
      const std::string path = dir + "/global_step_1/data.json";
      verl::fuzz::write_bytes(path, body, n);
      verl::fuzz::expect_only_verl_errors([&] {
        const nlohmann::json state = verl::trainer::read_trainer_state(path);
        verl::data::BatchSampler sampler({/*dataset_size=*/800, /*batch_size=*/8, /*shuffle=*/true, /*seed=*/1,
                                          /*drop_last=*/true});
        sampler.load_state_dict(state["dataloader"]);
        verl::trainer::UidGenerator uids(1);
        if (state.contains("uid_generator")) uids.load_state(state["uid_generator"].get<std::string>());
        if (state.contains("kl_ctrl_in_reward")) (void)state["kl_ctrl_in_reward"].get<double>();
      });
      break;
    }
    case 2: {
      const std::string folder = dir + "/global_step_1/actor";
      const std::string path = folder + "/" + verl::workers::extra_state_file_name(1, 0);
      verl::fuzz::write_bytes(path, body, n);
      verl::fuzz::expect_only_verl_errors([&] {
        const nlohmann::json extra = verl::workers::load_extra_state(folder, 1, 0, "actor");
        verl::workers::extra_state_rng(extra, "cpu", path, "actor");
        verl::workers::extra_state_rng(extra, "rollout", path, "actor");
      });
      break;
    }
    case 3: {
      static const std::string file = dir + "/optim_world_size_1_rank_0.pt";
      static const bool written = (verl::fuzz::write_bytes(file, reinterpret_cast<const uint8_t*>("state"), 5), true);
      (void)written;
      verl::fuzz::write_bytes(verl::digest_path_for(file), body, n);
      verl::fuzz::expect_only_verl_errors([&] { verl::verify_file_digest(file, "optim"); });
      break;
    }
  }
  return 0;
}
