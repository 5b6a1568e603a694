// What this process is doing now, in words, for someone who asks why it is silent: a worker rank marks the
// method it runs ("in 'update_actor'") and the collective it waits in, and a thread of its own reports the
// marks to the controller when a call times out (single_controller/mpi_transport.h), so the controller's line
// can tell the rank that hangs from the ranks waiting for it in a collective.
//
//   ActivityScope scope("in 'update_actor'");   // marked until the scope ends
//   current_activity();                          // "in 'update_actor' (3.2 s)"
#pragma once

#include <cstdint>
#include <string>

namespace verl {

class ActivityScope {
 public:
  explicit ActivityScope(std::string what);
  ~ActivityScope();
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  uint64_t id_ = 0;
};

// The live marks of every thread, oldest first, each with the seconds since it was set, joined by ", ";
// "" when there is none. Safe to call from any thread.
std::string current_activity();

}  // namespace verl
