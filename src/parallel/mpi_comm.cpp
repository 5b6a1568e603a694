#include "verl/parallel/mpi_comm.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <vector>

#include "verl/common/activity.h"
#include "verl/common/error.h"

namespace verl::parallel {

namespace {

constexpr const char* kMpiCommComponent = "mpi";

// Every MPI call goes through this: a failure names the call and MPI's own message.
void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  VERL_FAIL(kMpiCommComponent, call, " failed: ", std::string(text, static_cast<size_t>(length)));
}
#define VERL_MPI(call) check_mpi((call), #call)

// Element count as MPI's int; a tensor beyond it is an error, not a silent truncation.
int mpi_count(int64_t count, const char* what) {
  VERL_CHECK(count >= 0 && count <= INT_MAX, kMpiCommComponent, what, ": ", count,
             " elements exceed what one MPI call can carry (", INT_MAX, ")");
  return static_cast<int>(count);
}

// A contiguous MPI type of one tensor element, so counts are in elements (not bytes) and stay within int.
class ElementType {
 public:
  explicit ElementType(int64_t element_bytes) {
    VERL_MPI(MPI_Type_contiguous(static_cast<int>(element_bytes), MPI_BYTE, &type_));
    VERL_MPI(MPI_Type_commit(&type_));
  }
  ~ElementType() { MPI_Type_free(&type_); }
  ElementType(const ElementType&) = delete;
  ElementType& operator=(const ElementType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// Marks a collective for the rank's status report (common/activity.h): a rank that does not answer the
// controller is then reported as waiting in it, not as the one that hangs. Collectives built of others
// (all_reduce: reduce_scatter + all_gather) keep the outer mark.
thread_local int t_collective_depth = 0;

class InCollective {
 public:
  InCollective(const char* name, int size) {
    if (t_collective_depth++ == 0) scope_.emplace(str_cat("waiting in collective ", name, " of ", size, " ranks"));
  }
  ~InCollective() { --t_collective_depth; }
  InCollective(const InCollective&) = delete;
  InCollective& operator=(const InCollective&) = delete;

 private:
  std::optional<ActivityScope> scope_;
};

// Host staging: MPI moves CPU memory; a CUDA tensor is copied to the host and back.
torch::Tensor host_contiguous(const torch::Tensor& tensor) { return tensor.to(torch::kCPU).contiguous(); }

}  // namespace

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

MpiSession::MpiSession() {
  int initialized = 0;
  VERL_MPI(MPI_Initialized(&initialized));
  VERL_CHECK(!initialized, kMpiCommComponent, "MPI is already initialized: only one MpiSession may exist per process");
  int provided = 0;
  VERL_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
  // Errors come back as codes that check_mpi turns into verl::Error, instead of MPI aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    VERL_FAIL(kMpiCommComponent, "the MPI library gives thread level ", provided, ", verl needs MPI_THREAD_MULTIPLE (",
              MPI_THREAD_MULTIPLE, "); use an Open MPI built with thread support");
  }
  VERL_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_));
  VERL_MPI(MPI_Comm_size(MPI_COMM_WORLD, &world_size_));
  MPI_Comm node = MPI_COMM_NULL;
  VERL_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank_, MPI_INFO_NULL, &node));
  VERL_MPI(MPI_Comm_rank(node, &local_rank_));
  VERL_MPI(MPI_Comm_size(node, &local_size_));
  MPI_Comm_free(&node);
}

std::shared_ptr<MpiSession> MpiSession::start() { return std::shared_ptr<MpiSession>(new MpiSession()); }

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::shared_ptr<Comm> MpiSession::world() {
  return std::make_shared<MpiComm>(shared_from_this(), MPI_COMM_WORLD, /*owned=*/false);
}

void MpiSession::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this only satisfies [[noreturn]]
}

void MpiSession::fail(const std::string& where, const std::exception& e) const {
  const std::string line = "error: " + where + e.what() + "\n";
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cerr.flush();
  abort(1);
}

MpiComm::MpiComm(std::shared_ptr<MpiSession> session, MPI_Comm comm, bool owned)
    : session_(std::move(session)), comm_(comm), owned_(owned) {
  VERL_ASSERT(session_ != nullptr, kMpiCommComponent, "an MpiComm needs its session");
  VERL_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  VERL_MPI(MPI_Comm_rank(comm_, &rank_));
  VERL_MPI(MPI_Comm_size(comm_, &size_));
}

MpiComm::~MpiComm() {
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiComm::all_reduce(torch::Tensor& tensor, ReduceOp op) {
  InCollective collective("all_reduce", size_);
  if (size_ == 1) {
    return;
  }
  // reduce-scatter of equal chunks, then all-gather: each chunk is reduced by exactly one rank, in rank
  // order, and everyone receives that rank's bits. Same traffic as a ring all-reduce.
  torch::Tensor flat = host_contiguous(tensor).reshape({-1});
  const int64_t n = flat.numel();
  const int64_t chunk = (n + size_ - 1) / size_;
  torch::Tensor padded = torch::zeros({chunk * size_}, flat.options());
  padded.narrow(0, 0, n).copy_(flat);
  torch::Tensor mine = reduce_scatter(padded, op);
  torch::Tensor gathered = all_gather(mine);
  tensor.copy_(gathered.narrow(0, 0, n).view(tensor.sizes()));
}

torch::Tensor MpiComm::all_gather(const torch::Tensor& tensor) {
  InCollective collective("all_gather", size_);
  torch::Tensor send = host_contiguous(tensor);
  std::vector<int64_t> shape = send.sizes().vec();
  if (shape.empty()) shape.push_back(1);
  const int64_t rows = shape[0];
  shape[0] = rows * size_;
  torch::Tensor out = torch::empty(shape, send.options());
  ElementType type(send.element_size());
  const int count = mpi_count(send.numel(), "all_gather");
  VERL_MPI(MPI_Allgather(send.data_ptr(), count, type.get(), out.data_ptr(), count, type.get(), comm_));
  return out.to(tensor.device());
}

torch::Tensor MpiComm::reduce_scatter(const torch::Tensor& tensor, ReduceOp op) {
  InCollective collective("reduce_scatter", size_);
  VERL_CHECK(tensor.dim() >= 1 && tensor.size(0) % size_ == 0, kMpiCommComponent, "reduce_scatter needs dim 0 (",
             tensor.dim() >= 1 ? tensor.size(0) : 0, ") divisible by the communicator size ", size_);
  torch::Tensor send = host_contiguous(tensor);
  std::vector<int64_t> chunk_shape = send.sizes().vec();
  chunk_shape[0] /= size_;
  torch::Tensor received = torch::empty(send.sizes(), send.options());
  ElementType type(send.element_size());
  const int count = mpi_count(send.numel() / size_, "reduce_scatter");
  // Rank q's chunk r goes to rank r: received row q is rank q's contribution to this rank's chunk.
  VERL_MPI(MPI_Alltoall(send.data_ptr(), count, type.get(), received.data_ptr(), count, type.get(), comm_));
  std::vector<int64_t> stacked = {size_, send.numel() / size_};
  torch::Tensor mine = reduce_in_rank_order(received.view(stacked).unbind(0), op);
  return mine.view(chunk_shape).to(tensor.device());
}

torch::Tensor MpiComm::all_to_all(const torch::Tensor& tensor) {
  InCollective collective("all_to_all", size_);
  VERL_CHECK(tensor.dim() >= 1 && tensor.size(0) % size_ == 0, kMpiCommComponent, "all_to_all needs dim 0 (",
             tensor.dim() >= 1 ? tensor.size(0) : 0, ") divisible by the communicator size ", size_);
  torch::Tensor send = host_contiguous(tensor);
  torch::Tensor received = torch::empty(send.sizes(), send.options());
  ElementType type(send.element_size());
  const int count = mpi_count(send.numel() / size_, "all_to_all");
  VERL_MPI(MPI_Alltoall(send.data_ptr(), count, type.get(), received.data_ptr(), count, type.get(), comm_));
  return received.to(tensor.device());
}

void MpiComm::broadcast(torch::Tensor& tensor, int root) {
  InCollective collective("broadcast", size_);
  VERL_CHECK(root >= 0 && root < size_, kMpiCommComponent, "broadcast root ", root, " is not a rank (size ", size_,
             ")");
  torch::Tensor buffer = host_contiguous(tensor);
  ElementType type(buffer.element_size());
  VERL_MPI(MPI_Bcast(buffer.data_ptr(), mpi_count(buffer.numel(), "broadcast"), type.get(), root, comm_));
  if (buffer.data_ptr() != tensor.data_ptr()) tensor.copy_(buffer);
}

void MpiComm::barrier() {
  InCollective collective("barrier", size_);
  VERL_MPI(MPI_Barrier(comm_));
}

std::shared_ptr<Comm> MpiComm::split(int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  VERL_MPI(MPI_Comm_split(comm_, color, key, &part));
  return std::make_shared<MpiComm>(session_, part, /*owned=*/true);
}

void MpiComm::send_bytes(int dest, int tag, const std::string& bytes) {
  constexpr size_t kPieceBytes = size_t{1} << 30;
  uint64_t length = bytes.size();
  VERL_MPI(MPI_Send(&length, 1, MPI_UINT64_T, dest, tag, comm_));
  for (size_t offset = 0; offset < bytes.size(); offset += kPieceBytes) {
    const size_t piece = std::min(kPieceBytes, bytes.size() - offset);
    VERL_MPI(MPI_Send(bytes.data() + offset, static_cast<int>(piece), MPI_BYTE, dest, tag, comm_));
  }
}

std::string MpiComm::receive_bytes(int source, int tag) {
  constexpr size_t kPieceBytes = size_t{1} << 30;
  uint64_t length = 0;
  VERL_MPI(MPI_Recv(&length, 1, MPI_UINT64_T, source, tag, comm_, MPI_STATUS_IGNORE));
  std::string bytes(length, '\0');
  for (size_t offset = 0; offset < bytes.size(); offset += kPieceBytes) {
    const size_t piece = std::min(kPieceBytes, bytes.size() - offset);
    VERL_MPI(MPI_Recv(bytes.data() + offset, static_cast<int>(piece), MPI_BYTE, source, tag, comm_, MPI_STATUS_IGNORE));
  }
  return bytes;
}

bool MpiComm::message_waiting(int source, int tag) {
  int flag = 0;
  VERL_MPI(MPI_Iprobe(source, tag, comm_, &flag, MPI_STATUS_IGNORE));
  return flag != 0;
}

void MpiComm::broadcast_bytes(std::string& bytes, int root) {
  InCollective collective("broadcast", size_);
  VERL_CHECK(root >= 0 && root < size_, kMpiCommComponent, "broadcast root ", root, " is not a rank (size ", size_,
             ")");
  int64_t length = static_cast<int64_t>(bytes.size());
  VERL_MPI(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm_));
  bytes.resize(static_cast<size_t>(length));
  VERL_MPI(MPI_Bcast(bytes.data(), mpi_count(length, "broadcast_bytes"), MPI_BYTE, root, comm_));
}

}  // namespace verl::parallel
