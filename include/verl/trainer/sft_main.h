// Torch-free entry point of `verl sft` (the cli area does not include LibTorch): verl's main of
// fsdp_sft_trainer -- load the SFT config (configs/sft_trainer.yaml + --config + overrides), train, print the
// final metrics.
#pragma once

#include <string>
#include <vector>

namespace verl::trainer {

int run_sft_main(const std::vector<std::string>& args);

}  // namespace verl::trainer
