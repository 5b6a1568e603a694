// `verl sft`: one process, or `mpirun -np N verl sft` (every rank the same command): data (and Ulysses sequence)
// parallel ranks over MPI_COMM_WORLD, world rank 0 printing, logging and writing the run folder.
#include "verl/trainer/sft_main.h"

#include <iostream>

#include "verl/common/logging.h"
#include "verl/config/sft_config.h"
#include "verl/config/yaml_io.h"
#include "verl/parallel/mpi_comm.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::trainer {

namespace {

int run_sft(const config::LoadedSFTConfig& loaded, std::shared_ptr<parallel::Comm> world) {
  const bool prints = world == nullptr || world->rank() == 0;
  SFTTrainer trainer(loaded.sft, config::to_yaml(loaded.resolved), nullptr, world);
  if (prints) {
    std::cerr << "sft: " << trainer.train_dataset().size() << " train rows, "
              << (trainer.has_validation() ? trainer.val_dataset().size() : 0) << " val rows, "
              << trainer.steps_per_epoch() << " steps/epoch, " << trainer.total_training_steps() << " steps";
    if (world != nullptr && world->size() > 1) {
      std::cerr << ", " << world->size() << " ranks (data-parallel " << trainer.dp_size() << ")";
    }
    std::cerr << "\n";
  }
  SFTFitResult result = trainer.fit();
  if (prints) {
    std::cout << "sft: steps=" << result.global_steps << " train/loss=" << result.last_train_loss;
    if (result.last_val_loss) std::cout << " val/loss=" << *result.last_val_loss;
    std::cout << " train_time_s=" << result.train_seconds << " checkpoint=" << result.last_checkpoint << "\n";
  }
  return 0;
}

}  // namespace

int run_sft_main(const std::vector<std::string>& args) {
  config::LoadedSFTConfig loaded = config::load_sft_config(config::parse_config_args(args));
  if (!parallel::launched_by_mpi()) return run_sft(loaded, nullptr);
  auto session = parallel::MpiSession::start();
  const int rank = session->world_rank();
  if (rank != 0) set_log_prefix("rank " + std::to_string(rank));
  try {
    check_rank_layout(loaded.sft, session->world_size());
  } catch (const std::exception&) {
    // The same error on every rank: rank 0 reports it, the others leave quietly, all through MPI_Finalize.
    if (rank != 0) return 1;
    throw;
  }
  try {
    return run_sft(loaded, session->world());
  } catch (const std::exception& e) {
    // Another rank may wait in a collective this one will never join: the whole job ends here.
    session->fail(rank == 0 ? "" : "rank " + std::to_string(rank) + ": ", e);
  }
}

}  // namespace verl::trainer
