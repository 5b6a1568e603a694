#include "verl/trainer/sft_main.h"

#include <iostream>

#include "verl/config/sft_config.h"
#include "verl/config/yaml_io.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::trainer {

int run_sft_main(const std::vector<std::string>& args) {
  config::LoadedSFTConfig loaded = config::load_sft_config(config::parse_config_args(args));
  SFTTrainer trainer(loaded.sft, config::to_yaml(loaded.resolved));
  std::cerr << "sft: " << trainer.train_dataset().size() << " train rows, "
            << (trainer.has_validation() ? trainer.val_dataset().size() : 0) << " val rows, "
            << trainer.steps_per_epoch() << " steps/epoch, " << trainer.total_training_steps() << " steps\n";
  SFTFitResult result = trainer.fit();
  std::cout << "sft: steps=" << result.global_steps << " train/loss=" << result.last_train_loss;
  if (result.last_val_loss) std::cout << " val/loss=" << *result.last_val_loss;
  std::cout << " train_time_s=" << result.train_seconds << " checkpoint=" << result.last_checkpoint << "\n";
  return 0;
}

}  // namespace verl::trainer
