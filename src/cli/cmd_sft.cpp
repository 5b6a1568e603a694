// `verl sft`: supervised fine-tuning as verl's SFT trainers (configs/sft_trainer.yaml, sft_trainer_engine.yaml).
#include "verl/cli/cli.h"
#include "verl/trainer/sft_main.h"

namespace verl::cli {

const char* const kSftUsage =
    "usage: verl sft [--config-name sft_trainer|sft_trainer_engine] [--config FILE] [key=value ...]\n"
    "\n"
    "Supervised fine-tuning with either of verl's two SFT trainers' keys:\n"
    "  sft_trainer (default): verl's fsdp_sft_trainer, sft_trainer.yaml keys (data.prompt_key, data.response_key,\n"
    "    model.partial_pretrain, optim.warmup_steps_ratio, ...). One prompt and one response per row; the loss\n"
    "    covers the response (+ eos), a mean per micro-batch.\n"
    "  sft_trainer_engine: verl 0.9.1's sft_trainer (python -m verl.trainer.sft_trainer), sft_trainer_engine.yaml\n"
    "    keys (data.messages_key, data.pad_mode, data.use_dynamic_bsz, model.path, engine.*, optim.*, ...).\n"
    "    A conversation per row, every assistant message trained; the loss is a mean over the batch's tokens.\n"
    "    trainer.device defaults to cuda, as verl's: verl sft trains on the CPU, so pass trainer.device=cpu.\n"
    "Logs train/loss, train/lr, train/grad_norm, val/loss to trainer.logger; writes\n"
    "trainer.default_local_dir/global_step_N/huggingface.\n"
    "Under mpirun -np N (the same command on every rank): N / sp data-parallel ranks splitting\n"
    "data.train_batch_size (global, as verl's), sp = ulysses_sequence_parallel_size\n"
    "(engine.ulysses_sequence_parallel_size) ranks splitting each row's sequence, the AdamW state sharded over\n"
    "the ranks (ZeRO-2; engine.fsdp_size=1 keeps it whole); world rank 0 logs and saves.\n"
    "\n"
    "examples:\n"
    "  verl sft data.train_files=data/sft_train.parquet data.val_files=data/sft_val.parquet \\\n"
    "    data.prompt_key=prompt data.response_key=response model.partial_pretrain=tiny \\\n"
    "    trainer.default_local_dir=runs/sft trainer.total_epochs=1 optim.lr=1e-3\n"
    "  verl sft --config-name sft_trainer_engine data.train_files=data/multiturn.parquet model.path=tiny \\\n"
    "    trainer.device=cpu trainer.default_local_dir=runs/sft trainer.total_epochs=1 optim.lr=1e-4\n";

int run_sft_command(const Args& args) { return trainer::run_sft_main(args); }

}  // namespace verl::cli
