// `verl sft`: supervised fine-tuning as verl's fsdp_sft_trainer (config: configs/sft_trainer.yaml).
#include "verl/cli/cli.h"
#include "verl/trainer/sft_main.h"

namespace verl::cli {

const char* const kSftUsage =
    "usage: verl sft [--config FILE] [key=value ...]\n"
    "\n"
    "Supervised fine-tuning, verl's fsdp_sft_trainer: verl's sft_trainer.yaml keys (data.train_files,\n"
    "data.val_files, data.prompt_key, data.response_key, data.max_length, data.truncation,\n"
    "data.train_batch_size, data.micro_batch_size_per_gpu, model.partial_pretrain, optim.*, trainer.*).\n"
    "The loss covers response tokens only (prompt through the chat template, response + eos). Logs train/loss,\n"
    "train/lr, val/loss to trainer.logger; writes trainer.default_local_dir/global_step_N/huggingface.\n"
    "\n"
    "example:\n"
    "  verl sft data.train_files=data/sft_train.parquet data.val_files=data/sft_val.parquet \\\n"
    "    data.prompt_key=prompt data.response_key=response model.partial_pretrain=tiny \\\n"
    "    trainer.default_local_dir=runs/sft trainer.total_epochs=1 optim.lr=1e-3\n";

int run_sft_command(const Args& args) { return trainer::run_sft_main(args); }

}  // namespace verl::cli
