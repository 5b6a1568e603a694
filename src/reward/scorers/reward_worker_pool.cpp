#include "verl/reward/scorers/reward_worker_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "verl/common/child_process.h"
#include "verl/common/error.h"
#include "verl/common/strings.h"

extern char** environ;

namespace verl::reward {

namespace {

using Json = nlohmann::json;

constexpr const char* kComponent = "reward";
constexpr int kWorkerFd = 3;               // the worker's end of its socket
constexpr double kStopGraceSeconds = 5.0;  // a worker that does not exit on EOF is killed after this

std::mutex& executable_mutex() {
  static std::mutex m;
  return m;
}
std::string& executable_override() {
  static std::string path;
  return path;
}

std::string worker_executable() {
  std::lock_guard<std::mutex> lock(executable_mutex());
  if (!executable_override().empty()) return executable_override();
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  VERL_CHECK(!ec, kComponent, "cannot find this process's executable (/proc/self/exe: ", ec.message(),
             ") to start the remote reward workers from");
  return self.string();
}

std::string dump_line(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

// Reads once into `buffer`; false at EOF or on an error.
bool read_some(int fd, std::string& buffer) {
  char chunk[65536];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

// Blocks until a whole line arrives; nullopt at EOF.
std::optional<std::string> read_line(int fd, std::string& buffer) {
  while (true) {
    if (auto line = take_line(buffer)) return line;
    if (!read_some(fd, buffer)) return std::nullopt;
  }
}

// ExtraValue <-> JSON: non-finite floats as {"float": "nan" | "inf" | "-inf"} (JSON has no such numbers).
Json extra_to_json(const ExtraValue& value) {
  if (std::holds_alternative<bool>(value)) return std::get<bool>(value);
  if (std::holds_alternative<int64_t>(value)) return std::get<int64_t>(value);
  if (std::holds_alternative<std::string>(value)) return std::get<std::string>(value);
  if (std::holds_alternative<double>(value)) {
    const double x = std::get<double>(value);
    if (std::isfinite(x)) return x;
    return Json{{"float", std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf")}};
  }
  return nullptr;
}

ExtraValue extra_from_json(const Json& value) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("float")) {
    const std::string text = value["float"].get<std::string>();
    if (text == "nan") return std::nan("");
    return text == "inf" ? HUGE_VAL : -HUGE_VAL;
  }
  return std::monostate{};
}

Json result_to_json(const ScoreResult& result) {
  Json extra = Json::array();
  for (const auto& [key, value] : result.extra) extra.push_back(Json::array({key, extra_to_json(value)}));
  return {{"score", result.score}, {"is_dict", result.is_dict}, {"extra", std::move(extra)}};
}

ScoreOutcome outcome_from_json(const Json& reply) {
  ScoreOutcome outcome;
  if (reply.contains("error")) {
    outcome.error = outcome.raised = reply["error"].get<std::string>();
    return outcome;
  }
  ScoreResult result;
  result.score = reply.at("score").get<double>();
  result.is_dict = reply.at("is_dict").get<bool>();
  for (const Json& entry : reply.at("extra")) {
    result.extra.emplace_back(entry.at(0).get<std::string>(), extra_from_json(entry.at(1)));
  }
  outcome.result = std::move(result);
  return outcome;
}

std::string exit_text(int status) {
  if (WIFSIGNALED(status))
    return str_cat("killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  if (WIFEXITED(status)) return str_cat("exit code ", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

struct RewardWorkerPool::Worker {
  pid_t pid = -1;
  int fd = -1;
  std::string buffer;          // bytes read that do not make a whole line yet
  std::optional<size_t> call;  // the call in flight
};

void set_reward_worker_executable(const std::string& path) {
  std::lock_guard<std::mutex> lock(executable_mutex());
  executable_override() = path;
}

RewardWorkerPool::RewardWorkerPool(RewardWorkerPoolOptions options)
    : options_(std::move(options)), who_("reward function '" + options_.name + "' from '" + options_.path + "'") {
  VERL_CHECK(options_.num_workers >= 1, kComponent, "reward.num_workers must be >= 1, got ", options_.num_workers);
  for (int64_t i = 0; i < options_.num_workers; ++i) workers_.push_back(std::make_unique<Worker>());
  try {
    // All spawned first: the workers load the function side by side.
    for (auto& worker : workers_) spawn(*worker);
    for (auto& worker : workers_) await_ready(*worker);
  } catch (...) {
    for (auto& worker : workers_) stop(*worker);
    throw;
  }
}

RewardWorkerPool::~RewardWorkerPool() {
  for (auto& worker : workers_) stop(*worker);
}

void RewardWorkerPool::start(Worker& worker) {
  spawn(worker);
  await_ready(worker);
}

void RewardWorkerPool::spawn(Worker& worker) {
  int sockets[2];
  VERL_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) == 0, kComponent,
             "cannot create a socket for a reward worker: ", std::strerror(errno));
  // The child's end is moved to fd 3 by the spawn; an end that already is fd 3 would keep its close-on-exec flag.
  int child_end = sockets[1];
  if (child_end == kWorkerFd) {
    child_end = ::fcntl(sockets[1], F_DUPFD_CLOEXEC, kWorkerFd + 1);
    ::close(sockets[1]);
  }
  const std::string executable = worker_executable();
  std::vector<std::string> args = {executable,
                                   "_reward-worker",
                                   options_.path,
                                   options_.name,
                                   str_cat(options_.limits.timeout_s),
                                   options_.limits.timeout_key,
                                   options_.reward_kwargs.dump()};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, kWorkerFd);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_end);
  if (rc != 0) {
    ::close(sockets[0]);
    VERL_FAIL(kComponent, "cannot start a reward worker process from '", executable, "': ", std::strerror(rc));
  }
  worker.pid = pid;
  worker.fd = sockets[0];
  worker.buffer.clear();
  worker.call.reset();
}

void RewardWorkerPool::await_ready(Worker& worker) {
  const std::optional<std::string> line = read_line(worker.fd, worker.buffer);
  Json ready;
  if (line) ready = Json::parse(*line, nullptr, false);
  if (ready.is_object() && ready.value("ready", false)) return;
  stop(worker);
  if (ready.is_object() && ready.contains("load_error")) VERL_FAIL(kComponent, ready["load_error"].get<std::string>());
  VERL_FAIL(kComponent, "the remote reward worker for ", who_, " ended before it loaded the function (",
            line ? "it said: " + *line : std::string("its message, if any, is above"), ")");
}

void RewardWorkerPool::stop(Worker& worker) {
  if (worker.fd >= 0) ::close(worker.fd);  // the worker reads EOF and exits
  worker.fd = -1;
  stop_child(worker.pid, kStopGraceSeconds);
  worker.pid = -1;
}

std::vector<ScoreOutcome> RewardWorkerPool::score(const std::vector<ScoreCall>& calls) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ScoreOutcome> outcomes(calls.size());
  try {
    dispatch_and_collect(calls, outcomes);
  } catch (...) {
    // Workers still scoring this batch would answer into the next one: they are stopped and start afresh.
    for (auto& worker : workers_) {
      if (!worker->call) continue;
      stop(*worker);
      worker->call.reset();
    }
    throw;
  }
  return outcomes;
}

void RewardWorkerPool::dispatch_and_collect(const std::vector<ScoreCall>& calls, std::vector<ScoreOutcome>& outcomes) {
  size_t next = 0, done = 0;
  // A worker that ended: its call in flight fails with what became of the process; it starts again when needed.
  const auto lost = [&](Worker& worker) {
    int status = 0;
    const pid_t pid = worker.pid;
    ::close(worker.fd);
    worker.fd = -1;
    if (pid > 0) ::waitpid(pid, &status, 0);
    worker.pid = -1;
    if (worker.call) {
      const std::string text = str_cat("the remote reward worker (pid ", pid, ") running ", who_,
                                       " ended while scoring this sample: ", exit_text(status));
      outcomes[*worker.call].error = outcomes[*worker.call].raised = text;
      worker.call.reset();
      ++done;
    }
  };
  while (done < calls.size()) {
    for (auto& worker : workers_) {
      if (next >= calls.size()) break;
      if (worker->call) continue;
      if (worker->pid < 0) start(*worker);
      const ScoreCall& c = calls[next];
      const Json request = {{"data_source", c.data_source},
                            {"solution_str", c.solution_str},
                            {"ground_truth", c.ground_truth},
                            {"extra_info", c.extra_info}};
      worker->call = next++;
      if (!send_all(worker->fd, dump_line(request))) lost(*worker);
    }
    std::vector<pollfd> polled;
    std::vector<Worker*> busy;
    for (auto& worker : workers_) {
      if (!worker->call) continue;
      polled.push_back({worker->fd, POLLIN, 0});
      busy.push_back(worker.get());
    }
    if (polled.empty()) continue;
    if (::poll(polled.data(), polled.size(), -1) < 0) {
      VERL_CHECK(errno == EINTR, kComponent, "waiting for the remote reward workers failed: ", std::strerror(errno));
      continue;
    }
    for (size_t k = 0; k < polled.size(); ++k) {
      if (polled[k].revents == 0) continue;
      Worker& worker = *busy[k];
      if (!read_some(worker.fd, worker.buffer)) {
        lost(worker);
        continue;
      }
      while (worker.call) {
        const std::optional<std::string> line = take_line(worker.buffer);
        if (!line) break;
        const Json reply = Json::parse(*line, nullptr, false);
        VERL_CHECK(reply.is_object(), kComponent, "the remote reward worker (pid ", worker.pid, ") sent '", *line,
                   "', not a reply");
        outcomes[*worker.call] = outcome_from_json(reply);
        worker.call.reset();
        ++done;
      }
    }
  }
}

std::shared_ptr<RewardWorkerPool> shared_reward_worker_pool(const RewardWorkerPoolOptions& options) {
  static std::mutex mutex;
  static std::map<std::string, std::weak_ptr<RewardWorkerPool>> pools;
  const std::string key = Json::array({options.path, options.name, options.reward_kwargs, options.limits.timeout_s,
                                       options.limits.timeout_key, options.num_workers})
                              .dump();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto pool = pools[key].lock()) return pool;
  auto pool = std::make_shared<RewardWorkerPool>(options);
  pools[key] = pool;
  return pool;
}

int serve_reward_worker(const std::vector<std::string>& args) {
  VERL_CHECK(args.size() == 5, kComponent,
             "usage: verl _reward-worker PATH NAME TIMEOUT_S TIMEOUT_KEY REWARD_KWARGS_JSON (started by the remote "
             "reward manager, with its socket on fd 3)");
  VERL_CHECK(::fcntl(kWorkerFd, F_GETFD) >= 0, kComponent,
             "verl _reward-worker is started by the remote reward manager, which passes it a socket on fd 3");
  RewardFunction function;
  try {
    UserCodeLimits limits;
    limits.timeout_s = std::stod(args[2]);
    limits.timeout_key = args[3];
    function = load_reward_function(args[0], args[1], Json::parse(args[4]), limits);
  } catch (const std::exception& e) {
    const Error* error = dynamic_cast<const Error*>(&e);
    send_all(kWorkerFd, dump_line({{"load_error", error != nullptr ? error->message() : std::string(e.what())}}));
    return 1;
  }
  if (!send_all(kWorkerFd, dump_line({{"ready", true}}))) return 1;
  std::string buffer;
  while (const std::optional<std::string> line = read_line(kWorkerFd, buffer)) {
    const Json request = Json::parse(*line);
    Json reply;
    try {
      reply = result_to_json(function.score(request.at("data_source").get<std::string>(),
                                            request.at("solution_str").get<std::string>(), request.at("ground_truth"),
                                            request.at("extra_info")));
    } catch (const Error& e) {  // the function's own error (RewardFunctionError) or one setting up the call
      reply = {{"error", e.message()}};
    }
    if (!send_all(kWorkerFd, dump_line(reply))) return 1;
  }
  return 0;
}

}  // namespace verl::reward
