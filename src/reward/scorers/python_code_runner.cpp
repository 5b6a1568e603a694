#include "verl/reward/scorers/python_code_runner.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "verl/common/child_process.h"
#include "verl/common/error.h"
#include "verl/python/interpreter.h"

extern char** environ;
extern const char verl_embedded_python_code_runner_py[];  // src/reward/scorers/python_code_runner.py

namespace verl::reward {

namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kComponent = "reward";
constexpr double kStartSeconds = 60.0;  // for the server to import what it needs and say it is ready
constexpr double kReplyMargin = 30.0;   // past a check's own limit, for the server to fork, reap and answer
constexpr double kStopGraceSeconds = 2.0;

std::atomic<size_t> g_started{0};

}  // namespace

bool CodeCheckResult::all_passed() const {
  return std::all_of(verdicts.begin(), verdicts.end(), [](bool passed) { return passed; });
}

PythonCodeRunner::PythonCodeRunner() { start(); }

PythonCodeRunner::~PythonCodeRunner() { stop(); }

void PythonCodeRunner::start() {
  // One Unix socket, the server's stdin and stdout: a request sent to a server that died is a failed send (and a
  // restart), where a pipe would raise SIGPIPE and end this process.
  int sockets[2];
  VERL_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) == 0, kComponent,
             "cannot create the socket of the Python code runner: ", std::strerror(errno));
  const std::string python = python::embedded_python_executable();
  std::vector<std::string> args = {python, "-c", verl_embedded_python_code_runner_py};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, sockets[1], STDOUT_FILENO);
  // Signals as a fresh process has them, whatever this thread blocks or this process ignores: the checks' SIGALRM
  // must end them, and the server must see its children exit (SIGCHLD ignored would reap them behind its back).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (const int sig : {SIGALRM, SIGCHLD, SIGHUP, SIGINT, SIGTERM}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, python.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sockets[1]);
  if (rc != 0) {
    ::close(sockets[0]);
    VERL_FAIL(kComponent, "cannot start the Python code runner for the code data sources' reward (prime_code) with '",
              python, "': ", std::strerror(rc));
  }
  pid_ = pid;
  fd_ = sockets[0];
  buffer_.clear();
  ++g_started;
  bool timed_out = false;
  const std::string line = read_reply(kStartSeconds, timed_out);
  const Json ready = Json::parse(line, nullptr, false);
  if (ready.is_object() && ready.value("ready", false)) return;
  stop();
  VERL_FAIL(kComponent, "the Python code runner for the code data sources' reward (prime_code), started with '", python,
            "', ",
            timed_out ? str_cat("did not start within ", kStartSeconds, " s")
                      : "ended before it was ready (its error, if any, is above)");
}

void PythonCodeRunner::stop() {
  if (fd_ >= 0) ::close(fd_);  // the server reads EOF and exits
  fd_ = -1;
  stop_child(pid_, kStopGraceSeconds);
  pid_ = -1;
}

std::string PythonCodeRunner::read_reply(double seconds, bool& timed_out) {
  timed_out = false;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (true) {
    if (std::optional<std::string> line = take_line(buffer_)) return *line;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      return "";
    }
    pollfd polled{fd_, POLLIN, 0};
    const int ready = ::poll(&polled, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return "";
    if (ready <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

CodeCheckResult PythonCodeRunner::run(const CodeCheck& check) {
  const Json request = {{"code", check.code}, {"in_outs", check.in_outs}, {"timeout", check.timeout_s}};
  const std::string line = request.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (pid_ < 0) start();
    bool timed_out = false;
    const std::string reply_line =
        send_all(fd_, line) ? read_reply(check.timeout_s + 1 + kReplyMargin, timed_out) : std::string();
    const Json reply = Json::parse(reply_line, nullptr, false);
    if (reply.is_object() && reply.contains("results")) {
      CodeCheckResult result;
      for (const Json& verdict : reply["results"])
        result.verdicts.push_back(verdict.is_boolean() && verdict.get<bool>());
      result.replied = reply.value("replied", false);
      result.killed = reply.value("killed", false);
      result.error = reply.value("error", "");
      return result;
    }
    const pid_t pid = pid_;
    stop();
    VERL_CHECK(!timed_out, kComponent, "the Python code runner (pid ", pid, ") did not answer a check within ",
               check.timeout_s + 1 + kReplyMargin, " s");
    VERL_CHECK(reply_line.empty(), kComponent, "the Python code runner (pid ", pid, ") sent '",
               reply_line.substr(0, 200), "', not a check's result");
  }
  VERL_FAIL(kComponent, "the Python code runner ended twice while running one check (its error, if any, is above)");
}

namespace {

// The idle runners; a thread takes one (or starts one) for a check and gives it back after.
struct RunnerSet {
  std::mutex mutex;
  std::vector<std::unique_ptr<PythonCodeRunner>> idle;
};

RunnerSet& runner_set() {
  static RunnerSet* set = new RunnerSet;  // never destroyed: at exit the servers read EOF and end by themselves
  return *set;
}

}  // namespace

CodeCheckResult run_code_check(const CodeCheck& check) {
  RunnerSet& set = runner_set();
  std::unique_ptr<PythonCodeRunner> runner;
  {
    std::lock_guard<std::mutex> lock(set.mutex);
    if (!set.idle.empty()) {
      runner = std::move(set.idle.back());
      set.idle.pop_back();
    }
  }
  if (!runner) runner = std::make_unique<PythonCodeRunner>();
  CodeCheckResult result = runner->run(check);  // a runner that threw is dropped (and stopped)
  std::lock_guard<std::mutex> lock(set.mutex);
  set.idle.push_back(std::move(runner));
  return result;
}

size_t python_code_runners_started() { return g_started.load(); }

size_t python_code_runners_idle() {
  RunnerSet& set = runner_set();
  std::lock_guard<std::mutex> lock(set.mutex);
  return set.idle.size();
}

}  // namespace verl::reward
