#include "verl/common/activity.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

namespace verl {

namespace {

using Clock = std::chrono::steady_clock;

struct Mark {
  std::string what;
  Clock::time_point since;
};

// The process's marks by id (ids grow, so the map is in the order they were set). Never destroyed: the
// reporting thread may read it while the process exits.
struct Marks {
  std::mutex mutex;
  std::map<uint64_t, Mark> live;
  uint64_t next_id = 0;
};

Marks& marks() {
  static Marks* m = new Marks();
  return *m;
}

}  // namespace

ActivityScope::ActivityScope(std::string what) {
  Marks& m = marks();
  std::lock_guard<std::mutex> lock(m.mutex);
  id_ = ++m.next_id;
  m.live.emplace(id_, Mark{std::move(what), Clock::now()});
}

ActivityScope::~ActivityScope() {
  Marks& m = marks();
  std::lock_guard<std::mutex> lock(m.mutex);
  m.live.erase(id_);
}

std::string current_activity() {
  Marks& m = marks();
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(m.mutex);
  std::string text;
  for (const auto& [id, mark] : m.live) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, " (%.1f s)", std::chrono::duration<double>(now - mark.since).count());
    text += (text.empty() ? "" : ", ") + mark.what + seconds;
  }
  return text;
}

}  // namespace verl
