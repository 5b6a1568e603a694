// NCCL: the collectives of ranks that each drive one CUDA device, on the device (no host copies).
//
//   auto group = parallel::device_comm(mpi_group, torch::Device(torch::kCUDA, local_rank));  // collective
//   group->all_reduce(gradients_on_the_gpu);   // NCCL on the device's current stream
//
// Why NCCL's own API with its unique id broadcast over the host communicator (not c10d's ProcessGroupNCCL over
// a TCP store): MPI (or the in-process thread communicator) is already the launcher and the controller's channel,
// so it carries the 128-byte id and needs no store, no port and no rendezvous address; nccl.h and libnccl come
// with the PyPI LibTorch (nvidia-nccl) that libtorch_cuda already loads; and c10d's headers are internal API.
//
// Determinism as in every Comm: all_reduce and reduce_scatter move chunks with NCCL (all-to-all by grouped
// send / recv, then all-gather) and sum them on the device in rank order (parallel::reduce_in_rank_order), so
// every rank gets the same bits on every run and the same bits as the MPI path (elementwise IEEE additions in
// the same order), whatever ring or tree NCCL picks. all_gather and broadcast move bytes only.
//
// CPU tensors, barrier() and broadcast_bytes() go through the host communicator, so one Comm serves a worker
// whose gradients are on the GPU and whose metrics are on the host. Every CUDA tensor must be on this rank's
// device. Operations are enqueued on that device's current CUDA stream, ordered with LibTorch's kernels there;
// the host does not wait for them.
#pragma once

#include <torch/types.h>

#include <memory>

#include "verl/parallel/comm.h"

namespace verl::parallel {

// Whether this build has NCCL (a CUDA LibTorch with nccl.h found at configure time).
bool nccl_available();

// An NCCL communicator over the ranks of `host` (this rank drives `device`, a CUDA device). Collective: every
// rank of `host` calls it. An error naming NCCL's message when the build has no NCCL, the device is not CUDA,
// or NCCL refuses (e.g. two ranks on one GPU).
std::shared_ptr<Comm> nccl_comm(std::shared_ptr<Comm> host, const torch::Device& device);

// The communicator a worker group on `device` uses: NCCL over `host` for a CUDA device when `host` has more than
// one rank and the build has NCCL; `host` itself otherwise (CPU devices, one rank, or VERL_NCCL=0, which stages
// CUDA tensors through host memory as the MPI communicator does). Collective when it makes an NCCL one.
std::shared_ptr<Comm> device_comm(std::shared_ptr<Comm> host, const torch::Device& device);

}  // namespace verl::parallel
