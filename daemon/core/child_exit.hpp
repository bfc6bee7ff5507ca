#pragma once
// Waiting for a child process to exit without reaping it, so that whoever reaps it (the runner, a
// helper pool under its lock) does so the moment it is gone: a zombie lives microseconds, not until
// a poll interval or the pool's next use.
#include <sys/types.h>

#include <chrono>

namespace fsaudit {

// Waits at most `limit` for `pid`, our child, to exit, without reaping it: true once it has (or it is
// not our child). One wake-up on a pidfd; on a kernel without pidfd_open, a look every millisecond.
bool await_exit(pid_t pid, std::chrono::milliseconds limit);

}  // namespace fsaudit
