#include "verl/common/watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace verl {

namespace {

using Clock = std::chrono::steady_clock;

struct Armed {
  WatchdogAlarm alarm;
  Clock::time_point soft_at;
  Clock::time_point hard_at;
  bool soft_done = false;
};

// The process's watchdog thread (started on first use, detached: it never keeps the process alive, and it only
// touches the table under its mutex).
class Watchdog {
 public:
  static Watchdog& instance() {
    static Watchdog* watchdog = new Watchdog();  // never destroyed: the thread may outlive static destructors
    return *watchdog;
  }

  uint64_t arm(WatchdogAlarm alarm) {
    const auto now = Clock::now();
    Armed armed;
    armed.soft_at = alarm.soft_after_s > 0 ? now + to_duration(alarm.soft_after_s) : Clock::time_point::max();
    armed.hard_at = alarm.hard_after_s > 0 ? now + to_duration(alarm.hard_after_s) : Clock::time_point::max();
    armed.soft_done = alarm.soft_after_s <= 0;
    armed.alarm = std::move(alarm);
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = ++next_id_;
    armed_.emplace(id, std::move(armed));
    if (!started_) {
      started_ = true;
      std::thread([this] { run(); }).detach();
    }
    wake_.notify_one();
    return id;
  }

  void disarm(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_.erase(id);
  }

 private:
  static Clock::duration to_duration(double seconds) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      auto next = Clock::time_point::max();
      const auto now = Clock::now();
      for (auto& [id, armed] : armed_) {
        if (now >= armed.hard_at) end_process_now(armed.alarm.hard_message, armed.alarm.exit_code);
        if (!armed.soft_done && now >= armed.soft_at) {
          armed.soft_done = true;
          if (armed.alarm.on_soft) armed.alarm.on_soft();
        }
        if (!armed.soft_done) next = std::min(next, armed.soft_at);
        next = std::min(next, armed.hard_at);
      }
      if (next == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, next);
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<uint64_t, Armed> armed_;
  uint64_t next_id_ = 0;
  bool started_ = false;
};

std::mutex g_exit_guard_mutex;
int g_exit_guards = 0;
std::string g_exit_guard_message;

void on_exit_inside_guard() {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(g_exit_guard_mutex);
    if (g_exit_guards == 0) return;
    message = g_exit_guard_message;
  }
  end_process_now(message, 1);
}

}  // namespace

ExitGuard::ExitGuard(std::string message) {
  static const bool registered = std::atexit(on_exit_inside_guard) == 0;
  (void)registered;
  std::lock_guard<std::mutex> lock(g_exit_guard_mutex);
  ++g_exit_guards;
  g_exit_guard_message = std::move(message);
}

ExitGuard::~ExitGuard() {
  std::lock_guard<std::mutex> lock(g_exit_guard_mutex);
  --g_exit_guards;
}

WatchdogGuard::WatchdogGuard(WatchdogAlarm alarm) : id_(Watchdog::instance().arm(std::move(alarm))) {}

WatchdogGuard::~WatchdogGuard() { Watchdog::instance().disarm(id_); }

void end_process_now(const std::string& message, int exit_code) {
  const std::string line = "error: " + message + "\n";
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::_exit(exit_code);
}

}  // namespace verl
