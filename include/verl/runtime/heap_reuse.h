// Keeps freed memory in the process heap for reuse instead of handing it back to the kernel.
//
// LibTorch allocates every CPU tensor with malloc. glibc serves blocks above its mmap threshold (at most
// 32 MiB) with a fresh mmap and unmaps them on free, so each logits tensor, KV cache or activation of that size
// is page-faulted in again, zero-filled page by page, on every step. Measured on the 2-core development VM:
// a 32 MiB elementwise op took 60 ms with a fresh output and 0.7 ms with a reused one, and one PPO step of the
// 25M bench model went from 40% to 76% MFU in old_log_prob (bench/RESULTS.md). Training reuses the same shapes
// every step, so the heap, once grown to the peak, serves them all; peak memory is unchanged.
#pragma once

namespace verl::runtime {

// Disables mmap for large blocks and trimming of the heap top (mallopt). Does nothing when the user tunes
// glibc malloc (MALLOC_MMAP_MAX_, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) or sets
// VERL_HEAP_REUSE=0. Returns whether it applied the settings.
bool configure_heap_reuse();

}  // namespace verl::runtime
