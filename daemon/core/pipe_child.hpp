#pragma once
// Helper processes of the multi-threaded daemon, each talking over two pipes: requests in, answers
// out. They hold calls that can wait in the kernel forever (statvfs, write+fsync on a hung
// filesystem): a daemon thread blocked there keeps the daemon from being reaped after it exits, a
// thread waiting for a helper in poll(2) or read(2) does not. Used by the statfs helpers
// (probes/capacity) and the latency sampler processes (probes/latency).
//
// A helper is the same binary started again (exec of /proc/self/exe, so a package upgrade that
// replaced the file on disk still starts the running version): it holds its own small heap, not a
// copy-on-write image of the daemon's (a forked child keeps every page of the daemon's arenas it
// touches), and it starts with clean locks. A program opts in by calling helper_entry() first thing
// in main(); one that does not forks its helpers without exec. Static initialisers run again in
// every helper: one with a side effect on the process (a test program's unshare of its mount
// namespace) must check started_as_helper().
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit {

struct PipeChild {
  pid_t pid = -1;
  int request = -1;  // write end: requests
  int reply = -1;    // read end: answers
};

// Names a helper's main function, so that an exec'd copy of this program can find it. Declare one as
// a namespace-scope static next to the function (the name is also the process name shown by ps).
struct HelperRegistration {
  HelperRegistration(const char* name, void (*child_main)());
};

// First thing in main(): when argv is a helper's (the exec below), runs that helper and never
// returns; otherwise returns, and helpers of this process start by exec from then on.
void helper_entry(int argc, char** argv);

// Whether this process was started as a helper (argv[1] is the helper flag), from /proc/self/cmdline:
// for code that runs before main() (static initialisers), where argv is not at hand yet.
bool started_as_helper();

// What helpers exec: /proc/self/exe unless set (tests point it elsewhere to see the fallback).
// Empty turns exec off: helpers fork without exec. Exec needs helper_entry() in main() all the same.
void set_helper_executable(std::optional<std::string> path);

// Starts a helper running child_main() (registered under `name`) with only fd 3 (its requests) and
// fd 4 (its answers) open, named `name`, the daemon's stop signals back to their default and
// unblocked (systemd's stop of the unit ends an idle helper), SIGPIPE ignored (a write to a daemon
// that is gone is EPIPE). By exec when helper_entry() was called and the exec works, else forked:
// then between fork and child_main only system calls run (another daemon thread may hold a lock).
Result<PipeChild> start_pipe_child(const char* name, void (*child_main)());

// Whether helpers start by exec now; false before helper_entry(), or after an exec failed (then the
// reason is in helper_exec_failure() and helpers fork without exec from then on).
bool helpers_exec();
std::string helper_exec_failure();

// Closes both pipe ends (an idle child reads EOF and ends), after SIGKILL when `kill`.
void close_pipe_child(const PipeChild& c, bool kill);

// The idle helpers of one kind, for its pool (which locks around every call). A call reuses the one
// used last; one left unused for `max_unused` is told to end (EOF) when another comes back, except
// the last idle one, and never more than `max_idle` wait: a burst of parallel calls (first fills,
// a start-up) leaves behind only the helpers that steady use needs, each a process and its memory.
class IdleChildren {
 public:
  using Time = std::chrono::steady_clock::time_point;
  IdleChildren(std::size_t max_idle, std::chrono::seconds max_unused) : max_idle_(max_idle), max_unused_(max_unused) {}
  std::optional<PipeChild> take();
  // Back into the pool at `now`; the pids of helpers told to end go to `ended` (for the caller to reap).
  void put(const PipeChild& c, Time now, std::vector<pid_t>& ended);
  // Every idle helper, told to end.
  std::vector<pid_t> end_all();
  std::size_t size() const { return idle_.size(); }

 private:
  struct Idle {
    PipeChild child;
    Time since;
  };
  std::size_t max_idle_;
  std::chrono::seconds max_unused_;
  std::deque<Idle> idle_;  // least recently used first
};

// waitpid(WNOHANG): true when `pid` is reaped now, or is not our child (any more).
bool reaped(pid_t pid);

// Waits up to 50 ms for each of `pids`, helpers a pool just told to end (EOF to an idle one, SIGKILL to
// a cancelled one), to exit, without reaping them: the pool then reaps under its lock, so a helper is
// not a zombie until the pool's next use (minutes apart once the probe budget stretches intervals).
// One blocked in the kernel costs its caller those 50 ms, once.
void await_ended(const std::vector<pid_t>& pids);

// Whole-buffer read/write on a pipe, retrying EINTR; false on an error or EOF.
bool write_all(int fd, const void* p, std::size_t n);
bool read_all(int fd, void* p, std::size_t n);

}  // namespace fsaudit
