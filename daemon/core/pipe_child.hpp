#pragma once
// Helper processes forked (without exec) from the multi-threaded daemon, each talking over two pipes:
// requests in, answers out. They hold calls that can wait in the kernel forever (statvfs, write+fsync
// on a hung filesystem): a daemon thread blocked there keeps the daemon from being reaped after it
// exits, a thread waiting for a helper in poll(2) or read(2) does not. Used by the statfs helpers
// (probes/capacity) and the latency sampler processes (probes/latency).
#include <sys/types.h>

#include <cstddef>

#include "daemon/core/result.hpp"

namespace fsaudit {

struct PipeChild {
  pid_t pid = -1;
  int request = -1;  // write end: requests
  int reply = -1;    // read end: answers
};

// Forks a child that runs child_main() with only fd 3 (its requests) and fd 4 (its answers) open,
// named `name` (prctl), the daemon's stop signals back to their default and unblocked (systemd's stop
// of the unit ends an idle helper), SIGPIPE ignored (a write to a daemon that is gone is EPIPE).
// Between fork and child_main only system calls run: another daemon thread may have held a lock.
Result<PipeChild> fork_pipe_child(const char* name, void (*child_main)());

// Closes both pipe ends (an idle child reads EOF and ends), after SIGKILL when `kill`.
void close_pipe_child(const PipeChild& c, bool kill);

// waitpid(WNOHANG): true when `pid` is reaped now, or is not our child (any more).
bool reaped(pid_t pid);

// Whole-buffer read/write on a pipe, retrying EINTR; false on an error or EOF.
bool write_all(int fd, const void* p, std::size_t n);
bool read_all(int fd, void* p, std::size_t n);

}  // namespace fsaudit
