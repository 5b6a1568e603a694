#include "verl/parallel/nccl_comm.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "verl/common/error.h"
#include "verl/common/logging.h"

#if VERL_HAS_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <nccl.h>
#endif

namespace verl::parallel {
namespace {

constexpr const char* kComponent = "nccl";

bool nccl_disabled_by_env() {
  const char* value = std::getenv("VERL_NCCL");
  return value != nullptr && std::string(value) == "0";
}

}  // namespace

#if VERL_HAS_NCCL

namespace {

void check_nccl(ncclResult_t code, const char* call) {
  if (code == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  VERL_FAIL(kComponent, call, " failed: ", ncclGetErrorString(code),
            (last != nullptr && *last != '\0') ? std::string(" (") + last + ")" : std::string());
}
#define VERL_NCCL(call) check_nccl((call), #call)

class NcclComm : public Comm {
 public:
  NcclComm(std::shared_ptr<Comm> host, const torch::Device& device) : host_(std::move(host)), device_(device) {
    VERL_CHECK(host_ != nullptr, kComponent, "an NCCL communicator needs a host communicator for its unique id");
    VERL_CHECK(device_.is_cuda() && device_.has_index(), kComponent, "an NCCL communicator needs a CUDA device "
               "with an index, got ", device_.str());
    // Rank 0 makes the id; the host communicator carries it to the others.
    std::string id_bytes(sizeof(ncclUniqueId), '\0');
    if (host_->rank() == 0) {
      ncclUniqueId id;
      VERL_NCCL(ncclGetUniqueId(&id));
      std::memcpy(id_bytes.data(), &id, sizeof(id));
    }
    host_->broadcast_bytes(id_bytes, 0);
    VERL_ASSERT(id_bytes.size() == sizeof(ncclUniqueId), kComponent, "the broadcast NCCL id has the wrong size");
    ncclUniqueId id;
    std::memcpy(&id, id_bytes.data(), sizeof(id));
    c10::cuda::CUDAGuard guard(device_);
    VERL_NCCL(ncclCommInitRank(&comm_, host_->size(), id, host_->rank()));
  }
  ~NcclComm() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override { return "nccl"; }

  void all_reduce(torch::Tensor& tensor, ReduceOp op) override {
    if (!on_device(tensor, "all_reduce")) return host_->all_reduce(tensor, op);
    // As MpiComm: reduce-scatter of equal chunks, then all-gather, so one rank reduces each chunk in rank order.
    torch::Tensor flat = tensor.contiguous().reshape({-1});
    const int64_t n = flat.numel();
    const int64_t chunk = (n + size() - 1) / size();
    torch::Tensor padded = torch::zeros({chunk * size()}, flat.options());
    padded.narrow(0, 0, n).copy_(flat);
    torch::Tensor gathered = all_gather(reduce_scatter(padded, op));
    tensor.copy_(gathered.narrow(0, 0, n).view(tensor.sizes()));
  }

  torch::Tensor all_gather(const torch::Tensor& tensor) override {
    if (!on_device(tensor, "all_gather")) return host_->all_gather(tensor);
    torch::Tensor send = tensor.contiguous();
    std::vector<int64_t> shape = send.sizes().vec();
    if (shape.empty()) shape.push_back(1);
    shape[0] *= size();
    torch::Tensor out = torch::empty(shape, send.options());
    c10::cuda::CUDAGuard guard(device_);
    VERL_NCCL(ncclAllGather(send.data_ptr(), out.data_ptr(), bytes_of(send), ncclUint8, comm_, stream()));
    return out;
  }

  torch::Tensor reduce_scatter(const torch::Tensor& tensor, ReduceOp op) override {
    if (!on_device(tensor, "reduce_scatter")) return host_->reduce_scatter(tensor, op);
    VERL_CHECK(tensor.dim() >= 1 && tensor.size(0) % size() == 0, kComponent, "reduce_scatter needs dim 0 (",
               tensor.dim() >= 1 ? tensor.size(0) : 0, ") divisible by the communicator size ", size());
    torch::Tensor send = tensor.contiguous();
    std::vector<int64_t> chunk_shape = send.sizes().vec();
    chunk_shape[0] /= size();
    // All-to-all: rank q's chunk r goes to rank r, so received row q is rank q's part of this rank's chunk.
    torch::Tensor received = torch::empty(send.sizes(), send.options());
    const size_t chunk_bytes = bytes_of(send) / static_cast<size_t>(size());
    auto* send_base = static_cast<char*>(send.data_ptr());
    auto* receive_base = static_cast<char*>(received.data_ptr());
    c10::cuda::CUDAGuard guard(device_);
    cudaStream_t s = stream();
    VERL_NCCL(ncclGroupStart());
    for (int q = 0; q < size(); ++q) {
      VERL_NCCL(ncclSend(send_base + q * chunk_bytes, chunk_bytes, ncclUint8, q, comm_, s));
      VERL_NCCL(ncclRecv(receive_base + q * chunk_bytes, chunk_bytes, ncclUint8, q, comm_, s));
    }
    VERL_NCCL(ncclGroupEnd());
    const std::vector<int64_t> stacked = {size(), send.numel() / size()};
    return reduce_in_rank_order(received.view(stacked).unbind(0), op).view(chunk_shape);
  }

  void broadcast(torch::Tensor& tensor, int root) override {
    if (!on_device(tensor, "broadcast")) return host_->broadcast(tensor, root);
    VERL_CHECK(root >= 0 && root < size(), kComponent, "broadcast root ", root, " is not a rank (size ", size(), ")");
    torch::Tensor buffer = tensor.contiguous();
    c10::cuda::CUDAGuard guard(device_);
    VERL_NCCL(ncclBroadcast(buffer.data_ptr(), buffer.data_ptr(), bytes_of(buffer), ncclUint8, root, comm_, stream()));
    if (buffer.data_ptr() != tensor.data_ptr()) tensor.copy_(buffer);
  }

  void barrier() override { host_->barrier(); }

  std::shared_ptr<Comm> split(int color, int key) override {
    return std::make_shared<NcclComm>(host_->split(color, key), device_);
  }

  void broadcast_bytes(std::string& bytes, int root) override { host_->broadcast_bytes(bytes, root); }

 private:
  // True for a tensor on this rank's device (NCCL moves it); false for a CPU tensor (the host communicator does).
  bool on_device(const torch::Tensor& tensor, const char* what) const {
    if (!tensor.is_cuda()) return false;
    VERL_CHECK(tensor.device() == device_, kComponent, what, " of a tensor on ", tensor.device().str(),
               " through the NCCL communicator of ", device_.str(), ": each rank's CUDA tensors must be on its device");
    return true;
  }
  static size_t bytes_of(const torch::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }
  cudaStream_t stream() const { return at::cuda::getCurrentCUDAStream(device_.index()).stream(); }

  std::shared_ptr<Comm> host_;
  torch::Device device_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_available() { return true; }

std::shared_ptr<Comm> nccl_comm(std::shared_ptr<Comm> host, const torch::Device& device) {
  return std::make_shared<NcclComm>(std::move(host), device);
}

#else  // no NCCL in this build

bool nccl_available() { return false; }

std::shared_ptr<Comm> nccl_comm(std::shared_ptr<Comm>, const torch::Device&) {
  VERL_FAIL(kComponent, "this build of verl.cpp has no NCCL (a CPU LibTorch, or nccl.h not found at configure "
            "time); CUDA tensors go through the host communicator");
}

#endif

std::shared_ptr<Comm> device_comm(std::shared_ptr<Comm> host, const torch::Device& device) {
  if (host == nullptr || !device.is_cuda() || host->size() == 1) return host;
  if (nccl_disabled_by_env()) return host;
  if (!nccl_available()) {
    log_line(LogLevel::Warn, kComponent, "no NCCL in this build: CUDA collectives are staged through host memory");
    return host;
  }
  return nccl_comm(std::move(host), device);
}

}  // namespace verl::parallel
