// Pieces shared by the helpers that talk to a child process over a Unix socket, one JSON line per message
// (reward/scorers/reward_worker_pool.h, reward/scorers/python_code_runner.h).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace verl {

// Writes all of `text` to a socket; false when the other end is gone. MSG_NOSIGNAL: a peer that died is a false
// here, never a SIGPIPE that would end this process.
bool send_all(int fd, const std::string& text);

// The next whole line of `buffer` (without its newline), removed from it; nullopt while none is complete.
std::optional<std::string> take_line(std::string& buffer);

// Waits up to `grace_seconds` for the child to exit (its end of the socket closed, it should), then kills it with
// SIGKILL; reaps it either way.
void stop_child(pid_t pid, double grace_seconds);

}  // namespace verl
