#include "verl/single_controller/mpi_transport.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "verl/common/error.h"
#include "verl/common/logging.h"

namespace verl::single_controller {

namespace {

using protocol::Json;

constexpr const char* kComponent = "mpi_transport";
constexpr int kCommandTag = 7101;
constexpr int kReplyTag = 7102;
constexpr int kController = 0;
constexpr size_t kPieceBytes = size_t{1} << 30;

enum class CommandKind : uint8_t { Call = 0, MeshInfo = 1, Shutdown = 2 };
enum class ReplyStatus : uint8_t { Output = 0, NoOutput = 1, Failed = 2 };

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  VERL_FAIL(kComponent, call, " failed: ", std::string(text, static_cast<size_t>(length)));
}

void send_message(MPI_Comm comm, int dest, int tag, const std::string& bytes) {
  uint64_t length = bytes.size();
  check_mpi(MPI_Send(&length, 1, MPI_UINT64_T, dest, tag, comm), "MPI_Send");
  for (size_t offset = 0; offset < bytes.size(); offset += kPieceBytes) {
    const size_t piece = std::min(kPieceBytes, bytes.size() - offset);
    check_mpi(MPI_Send(bytes.data() + offset, static_cast<int>(piece), MPI_BYTE, dest, tag, comm), "MPI_Send");
  }
}

std::string receive_message(MPI_Comm comm, int source, int tag) {
  uint64_t length = 0;
  check_mpi(MPI_Recv(&length, 1, MPI_UINT64_T, source, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
  std::string bytes(length, '\0');
  for (size_t offset = 0; offset < bytes.size(); offset += kPieceBytes) {
    const size_t piece = std::min(kPieceBytes, bytes.size() - offset);
    check_mpi(MPI_Recv(bytes.data() + offset, static_cast<int>(piece), MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE),
              "MPI_Recv");
  }
  return bytes;
}

// Waits for a message from `source` by probing with short sleeps: a blocking MPI_Recv spins a core in Open
// MPI, which would take the CPU from the ranks doing the work (several ranks share a node's cores).
bool message_waiting(MPI_Comm comm, int source, int tag) {
  int flag = 0;
  check_mpi(MPI_Iprobe(source, tag, comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
  return flag != 0;
}

void idle_pause() { std::this_thread::sleep_for(std::chrono::microseconds(500)); }

void put_u32(std::string& out, uint32_t value) { out.append(reinterpret_cast<const char*>(&value), sizeof value); }

std::string encode_command(CommandKind kind, const std::string& method, const std::optional<DataProto>& input) {
  std::string out(1, static_cast<char>(kind));
  put_u32(out, static_cast<uint32_t>(method.size()));
  out += method;
  out += static_cast<char>(input ? 1 : 0);
  if (input) out += input->serialize();
  return out;
}

struct Command {
  CommandKind kind = CommandKind::Shutdown;
  std::string method;
  std::optional<DataProto> input;
};

Command decode_command(const std::string& bytes) {
  VERL_CHECK(bytes.size() >= 6, kComponent, "truncated command (", bytes.size(), " bytes)");
  Command command;
  command.kind = static_cast<CommandKind>(static_cast<uint8_t>(bytes[0]));
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + 1, sizeof length);
  VERL_CHECK(5 + static_cast<size_t>(length) + 1 <= bytes.size(), kComponent, "truncated command method name");
  command.method = bytes.substr(5, length);
  const size_t at = 5 + length;
  if (bytes[at] != 0) command.input = DataProto::deserialize(bytes.substr(at + 1));
  return command;
}

std::string encode_reply(ReplyStatus status, const std::string& payload) {
  return std::string(1, static_cast<char>(status)) + payload;
}

}  // namespace

MpiTransport::MpiTransport(std::string group_name, std::vector<int> world_ranks,
                           std::shared_ptr<parallel::MpiComm> control, const WorkerFactory& factory)
    : group_name_(std::move(group_name)), world_ranks_(std::move(world_ranks)), control_(std::move(control)) {
  VERL_CHECK(!world_ranks_.empty(), kComponent, "worker group '", group_name_, "' needs at least one rank");
  for (int rank : world_ranks_) {
    VERL_CHECK(rank > kController && rank < control_->size(), kComponent, "worker group '", group_name_,
               "' is placed on world rank ", rank, ", which is not a worker rank of this ", control_->size(),
               "-process job");
  }
  probe_ = factory(WorkerContext{0, world_size(), group_name_, nullptr});
  thread_ = std::thread([this] { run_queue(); });
}

MpiTransport::~MpiTransport() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::vector<MeshRankInfo> MpiTransport::mesh_info(const std::string& mesh) const {
  // Through the call queue, so the query's replies never interleave with those of a call in flight.
  auto promise = std::make_shared<std::promise<std::vector<MeshRankInfo>>>();
  auto future = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back([this, mesh, promise]() {
      try {
        std::vector<MeshRankInfo> infos;
        for (int rank : world_ranks_) {
          send_message(control_->handle(), rank, kCommandTag, encode_command(CommandKind::MeshInfo, mesh, std::nullopt));
        }
        for (int rank : world_ranks_) {
          const std::string reply = receive_message(control_->handle(), rank, kReplyTag);
          const Json info = Json::parse(reply.substr(1));
          infos.push_back(MeshRankInfo{info.at("dp_rank").get<int>(), info.at("is_collect").get<bool>()});
        }
        promise->set_value(std::move(infos));
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
  }
  wake_.notify_one();
  return future.get();
}

std::future<RankOutputs> MpiTransport::execute(const std::string& method, std::vector<std::optional<DataProto>> inputs) {
  VERL_ASSERT(inputs.size() == world_ranks_.size(), kComponent, "one input slot per rank");
  probe_->method_spec(method);  // unknown method: error now, in the caller's thread
  auto promise = std::make_shared<std::promise<RankOutputs>>();
  std::future<RankOutputs> future = promise->get_future();
  auto task = [this, method, inputs = std::move(inputs), promise]() {
    try {
      promise->set_value(run_call(method, inputs));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return future;
}

RankOutputs MpiTransport::run_call(const std::string& method, const std::vector<std::optional<DataProto>>& inputs) const {
  MPI_Comm comm = control_->handle();
  std::vector<size_t> pending;
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    if (!inputs[rank]) continue;
    send_message(comm, world_ranks_[rank], kCommandTag, encode_command(CommandKind::Call, method, inputs[rank]));
    pending.push_back(rank);
  }
  // Replies in whatever order they come: a failed rank must be reported even while its peers wait for it in
  // a collective and will never answer.
  RankOutputs outputs(inputs.size());
  while (!pending.empty()) {
    bool got_one = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const size_t rank = *it;
      if (!message_waiting(comm, world_ranks_[rank], kReplyTag)) {
        ++it;
        continue;
      }
      got_one = true;
      const std::string reply = receive_message(comm, world_ranks_[rank], kReplyTag);
      VERL_CHECK(!reply.empty(), kComponent, "empty reply from world rank ", world_ranks_[rank]);
      const auto status = static_cast<ReplyStatus>(static_cast<uint8_t>(reply[0]));
      if (status == ReplyStatus::Failed) {
        VERL_FAIL("worker", "worker group '", group_name_, "' rank ", rank, " (world rank ", world_ranks_[rank],
                  ") failed in '", method, "': ", reply.substr(1));
      }
      if (status == ReplyStatus::Output) outputs[rank] = DataProto::deserialize(reply.substr(1));
      it = pending.erase(it);
    }
    if (!got_one) idle_pause();
  }
  return outputs;
}

void MpiTransport::run_queue() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void serve_worker(parallel::MpiComm& control, const std::function<std::unique_ptr<Worker>()>& make_worker) {
  MPI_Comm comm = control.handle();
  std::unique_ptr<Worker> worker;
  for (;;) {
    while (!message_waiting(comm, kController, kCommandTag)) idle_pause();
    const Command command = decode_command(receive_message(comm, kController, kCommandTag));
    if (command.kind == CommandKind::Shutdown) return;
    std::string reply;
    try {
      if (!worker) worker = make_worker();
      if (command.kind == CommandKind::MeshInfo) {
        const MeshRankInfo info = worker->mesh_info(command.method);
        reply = encode_reply(ReplyStatus::Output,
                             Json{{"dp_rank", info.dp_rank}, {"is_collect", info.is_collect}}.dump());
      } else {
        DataProto output = worker->invoke(command.method, command.input.value_or(DataProto()));
        reply = encode_reply(ReplyStatus::Output, output.serialize());
      }
    } catch (const std::exception& e) {
      // The controller reports it (one line naming rank and method) and ends the job.
      VERL_LOG(Error, kComponent) << "'" << command.method << "' failed: " << e.what();
      reply = encode_reply(ReplyStatus::Failed, e.what());
    }
    send_message(comm, kController, kReplyTag, reply);
  }
}

void shutdown_workers(parallel::MpiComm& control, const std::vector<int>& world_ranks) {
  for (int rank : world_ranks) {
    send_message(control.handle(), rank, kCommandTag, encode_command(CommandKind::Shutdown, "", std::nullopt));
  }
}

}  // namespace verl::single_controller
