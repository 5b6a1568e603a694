#include "verl/single_controller/mpi_transport.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "verl/common/activity.h"
#include "verl/common/error.h"
#include "verl/common/input_limits.h"
#include "verl/common/logging.h"
#include "verl/common/stopwatch.h"
#include "verl/common/watchdog.h"

namespace verl::single_controller {

namespace {

using protocol::Json;

constexpr const char* kMpiTransportComponent = "mpi_transport";
constexpr int kCommandTag = 7101;
constexpr int kReplyTag = 7102;
constexpr int kStatusTag = 7103;       // controller -> worker: "what are you doing?" (empty message)
constexpr int kStatusReplyTag = 7104;  // worker -> controller: its current_activity()
constexpr int kController = 0;
// How long the controller waits for the status of silent ranks before it names one as not responding.
constexpr double kStatusWaitSeconds = 3;

enum class CommandKind : uint8_t { Call = 0, MeshInfo = 1, Shutdown = 2 };
enum class ReplyStatus : uint8_t { Output = 0, Failed = 1 };

// Waiting ranks probe for messages with these sleeps in between: a blocking MPI_Recv spins a core in Open
// MPI, which would take the CPU from the ranks doing the work (several ranks share a node's cores).
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
  VERL_CHECK(bytes.size() >= 6, kMpiTransportComponent, "truncated command (", bytes.size(), " bytes)");
  Command command;
  command.kind = static_cast<CommandKind>(static_cast<uint8_t>(bytes[0]));
  uint32_t length = 0;
  std::memcpy(&length, bytes.data() + 1, sizeof length);
  VERL_CHECK(5 + static_cast<size_t>(length) + 1 <= bytes.size(), kMpiTransportComponent,
             "truncated command method name");
  command.method = bytes.substr(5, length);
  const size_t at = 5 + length;
  if (bytes[at] != 0) command.input = DataProto::deserialize(bytes.substr(at + 1));
  return command;
}

// What the controller waits for, for controller_waiting_for(): written before each wait, read by a signal
// handler (a torn read costs a garbled diagnostic, nothing else).
char g_waiting_for[256] = "";

void set_waiting_for(const std::string& text) {
  const size_t n = std::min(text.size(), sizeof(g_waiting_for) - 1);
  std::memcpy(g_waiting_for, text.data(), n);
  g_waiting_for[n] = '\0';
}

std::string encode_reply(ReplyStatus status, const std::string& payload) {
  return std::string(1, static_cast<char>(status)) + payload;
}

// A worker rank's status reporter: a thread of its own answers the controller's status queries with the
// rank's activity marks, so the answer does not depend on the main thread, which may be stuck in a method or
// in a collective. Only a rank whose whole process is stopped (SIGSTOP) or gone gives no answer.
class StatusReporter {
 public:
  explicit StatusReporter(parallel::MpiComm& comm) : comm_(comm), thread_([this] { run(); }) {}
  ~StatusReporter() {
    stop_ = true;
    thread_.join();
  }
  StatusReporter(const StatusReporter&) = delete;
  StatusReporter& operator=(const StatusReporter&) = delete;

 private:
  void run() {
    while (!stop_) {
      if (!comm_.message_waiting(kController, kStatusTag)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      comm_.receive_bytes(kController, kStatusTag);
      const std::string activity = current_activity();
      comm_.send_bytes(kController, kStatusReplyTag,
                       activity.empty() ? "idle, waiting for the controller's next command" : activity);
    }
  }

  parallel::MpiComm& comm_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Asks each of `world_ranks` what it is doing and waits up to kStatusWaitSeconds for the answers; a rank that
// does not answer is "not responding" (its process is stopped, or not even its status thread can run).
std::vector<std::string> ask_status(parallel::MpiComm& comm, const std::vector<int>& world_ranks) {
  std::vector<std::string> status(world_ranks.size());
  std::vector<bool> answered(world_ranks.size(), false);
  for (int rank : world_ranks) comm.send_bytes(rank, kStatusTag, "");  // a few bytes: sent eagerly, never blocks
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStatusWaitSeconds);
  size_t left = world_ranks.size();
  while (left > 0 && std::chrono::steady_clock::now() < until) {
    for (size_t i = 0; i < world_ranks.size(); ++i) {
      if (answered[i] || !comm.message_waiting(world_ranks[i], kStatusReplyTag)) continue;
      status[i] = comm.receive_bytes(world_ranks[i], kStatusReplyTag);
      answered[i] = true;
      --left;
    }
    if (left > 0) idle_pause();
  }
  for (size_t i = 0; i < world_ranks.size(); ++i) {
    if (!answered[i]) {
      status[i] = str_cat("not responding (no answer to a status query within ", kStatusWaitSeconds,
                          " s: the process is stopped or frozen)");
    }
  }
  return status;
}

}  // namespace

MpiTransport::MpiTransport(std::string group_name, std::vector<int> world_ranks,
                           std::shared_ptr<parallel::MpiComm> control, const WorkerFactory& factory,
                           double call_timeout_s)
    : group_name_(std::move(group_name)),
      world_ranks_(std::move(world_ranks)),
      control_(std::move(control)),
      call_timeout_s_(call_timeout_s) {
  VERL_CHECK(!world_ranks_.empty(), kMpiTransportComponent, "worker group '", group_name_, "' needs at least one rank");
  for (int rank : world_ranks_) {
    VERL_CHECK(rank > kController && rank < control_->size(), kMpiTransportComponent, "worker group '", group_name_,
               "' is placed on world rank ", rank, ", which is not a worker rank of this ", control_->size(),
               "-process job");
  }
  probe_ = factory(WorkerContext{0, world_size(), group_name_, nullptr, nullptr});
}

std::vector<MeshRankInfo> MpiTransport::mesh_info(const std::string& mesh) const {
  // Through the call queue, so the query's replies never interleave with those of a call in flight.
  auto promise = std::make_shared<std::promise<std::vector<MeshRankInfo>>>();
  auto future = promise->get_future();
  calls_.push([this, mesh, promise]() {
    try {
      std::vector<MeshRankInfo> infos;
      for (int rank : world_ranks_) {
        control_->send_bytes(rank, kCommandTag, encode_command(CommandKind::MeshInfo, mesh, std::nullopt));
      }
      for (int rank : world_ranks_) {
        const std::string reply = control_->receive_bytes(rank, kReplyTag);
        VERL_CHECK(!reply.empty() && static_cast<ReplyStatus>(static_cast<uint8_t>(reply[0])) == ReplyStatus::Output,
                   "worker", "worker group '", group_name_, "' world rank ", rank, " failed to give its place in mesh '",
                   mesh, "': ", reply.empty() ? std::string("empty reply") : reply.substr(1));
        check_json_limits(std::string_view(reply).substr(1), "worker reply");
        const Json info = Json::parse(reply.substr(1));
        infos.push_back(MeshRankInfo{info.at("dp_rank").get<int>(), info.at("is_collect").get<bool>()});
      }
      promise->set_value(std::move(infos));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  });
  return future.get();
}

std::future<RankOutputs> MpiTransport::execute(const std::string& method, std::vector<std::optional<DataProto>> inputs) {
  VERL_ASSERT(inputs.size() == world_ranks_.size(), kMpiTransportComponent, "one input slot per rank");
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
  calls_.push(std::move(task));
  return future;
}

RankOutputs MpiTransport::run_call(const std::string& method, const std::vector<std::optional<DataProto>>& inputs) const {
  parallel::MpiComm& comm = *control_;
  // A backstop for waits outside the loop below (a blocking send of a large command to a rank that never
  // receives it): the process ends, and mpirun with it the job, kBlockedGraceSeconds after the limit.
  constexpr double kBlockedGraceSeconds = 30;
  std::unique_ptr<WatchdogGuard> backstop;
  if (call_timeout_s_ > 0) {
    WatchdogAlarm alarm;
    alarm.hard_after_s = call_timeout_s_ + kBlockedGraceSeconds;
    alarm.hard_message = str_cat("[worker] worker group '", group_name_, "' did not complete '", method, "' within ",
                                 call_timeout_s_ + kBlockedGraceSeconds,
                                 " s (trainer.worker_call_timeout + 30 s; the controller was blocked sending to or "
                                 "receiving from a rank that does not answer); ending the job");
    backstop = std::make_unique<WatchdogGuard>(std::move(alarm));
  }
  std::vector<size_t> pending;
  for (size_t rank = 0; rank < inputs.size(); ++rank) {
    if (!inputs[rank]) continue;
    comm.send_bytes(world_ranks_[rank], kCommandTag, encode_command(CommandKind::Call, method, inputs[rank]));
    pending.push_back(rank);
  }
  // Replies in whatever order they come: a failed rank must be reported even while its peers wait for it in
  // a collective and will never answer.
  RankOutputs outputs(inputs.size());
  const auto start = std::chrono::steady_clock::now();
  set_waiting_for("worker group '" + group_name_ + "' to answer '" + method + "'");
  while (!pending.empty()) {
    bool got_one = false;
    for (auto it = pending.begin(); it != pending.end();) {
      const size_t rank = *it;
      if (!comm.message_waiting(world_ranks_[rank], kReplyTag)) {
        ++it;
        continue;
      }
      got_one = true;
      const std::string reply = comm.receive_bytes(world_ranks_[rank], kReplyTag);
      VERL_CHECK(!reply.empty(), kMpiTransportComponent, "empty reply from world rank ", world_ranks_[rank]);
      const auto status = static_cast<ReplyStatus>(static_cast<uint8_t>(reply[0]));
      if (status == ReplyStatus::Failed) {
        VERL_FAIL("worker", "worker group '", group_name_, "' rank ", rank, " (world rank ", world_ranks_[rank],
                  ") failed in '", method, "': ", reply.substr(1));
      }
      outputs[rank] = DataProto::deserialize(reply.substr(1));
      it = pending.erase(it);
    }
    if (got_one) continue;
    if (call_timeout_s_ > 0 && seconds_since(start) > call_timeout_s_) {
      std::string ranks, world;
      std::vector<int> silent;
      for (size_t rank : pending) {
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
        world += (world.empty() ? "" : ", ") + std::to_string(world_ranks_[rank]);
        silent.push_back(world_ranks_[rank]);
      }
      // What each silent rank does, from its status thread: the one that hangs is stopped or busy in the
      // method; the others wait for it in a collective.
      const std::vector<std::string> status = ask_status(comm, silent);
      std::string states;
      for (size_t i = 0; i < silent.size(); ++i) {
        states += str_cat(i == 0 ? "" : "; ", "world rank ", silent[i], ": ", status[i]);
      }
      VERL_FAIL("worker", "worker group '", group_name_, "' rank", pending.size() > 1 ? "s " : " ", ranks,
                " (world rank", pending.size() > 1 ? "s " : " ", world, ") did not answer '", method, "' within ",
                call_timeout_s_, " s (trainer.worker_call_timeout): ", states);
    }
    idle_pause();
  }
  set_waiting_for("");
  return outputs;
}

void serve_worker(parallel::MpiComm& control, const std::function<std::unique_ptr<Worker>()>& make_worker) {
  parallel::MpiComm& comm = control;
  std::unique_ptr<Worker> worker;
  StatusReporter reporter(comm);
  for (;;) {
    while (!comm.message_waiting(kController, kCommandTag)) idle_pause();
    const Command command = decode_command(comm.receive_bytes(kController, kCommandTag));
    if (command.kind == CommandKind::Shutdown) return;
    std::string reply;
    try {
      ActivityScope activity(command.kind == CommandKind::MeshInfo ? "giving its place in mesh '" + command.method + "'"
                                                                   : "in '" + command.method + "'");
      VERL_LOG(Debug, kMpiTransportComponent) << "'" << command.method << "' started";
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
      VERL_LOG(Error, kMpiTransportComponent) << "'" << command.method << "' failed: " << e.what();
      reply = encode_reply(ReplyStatus::Failed, e.what());
    }
    comm.send_bytes(kController, kReplyTag, reply);
  }
}

const char* controller_waiting_for() { return g_waiting_for; }

void shutdown_workers(parallel::MpiComm& control, const std::vector<int>& world_ranks) {
  for (int rank : world_ranks) {
    control.send_bytes(rank, kCommandTag, encode_command(CommandKind::Shutdown, "", std::nullopt));
  }
}

}  // namespace verl::single_controller
