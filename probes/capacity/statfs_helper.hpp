#pragma once
// statvfs(2) in helper processes. On a dead FUSE or network filesystem statvfs can wait in the kernel
// forever, uninterruptibly (even SIGKILL waits). Done on a daemon thread, that thread can never end:
// the daemon cannot exit (it stays a zombie its parent cannot reap) and every new attempt adds one more
// stuck thread. Done in a helper process, the daemon's own thread only waits in poll(2), which exit and
// SIGKILL interrupt; the stuck call belongs to a process the daemon can leave behind.
//
// Helpers are started once and reused (a request is one pipe round trip, not a new process). A call
// takes an idle helper, or starts one when all are busy, so there is never more than one helper per
// call in flight (one unused for a minute ends, see IdleChildren); a call that hangs keeps its helper, and its caller (the scheduler does not start that
// target again while the run is stuck) keeps waiting, so a hung filesystem holds one helper and one
// waiting thread however long it hangs.
#include <sys/statvfs.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/pipe_child.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit::capacity {

// A call a helper makes for a probe besides statvfs (an ioctl on a mount point, say), by number:
// `path` in, 0 or an errno out, up to `cap` bytes of answer in `out` (*n of them). It may run in a
// forked child of the multi-threaded daemon: system calls only, no allocation.
using HelperCall = int (*)(const char* path, void* out, std::size_t cap, std::size_t* n);
// Names a call by a number from 1 to 255 (0 is statvfs), as a namespace-scope static next to it, so
// that an exec'd helper knows it too. The first registration of a number wins.
struct HelperCallRegistration {
  HelperCallRegistration(std::uint8_t op, HelperCall fn);
};
struct CallAnswer {
  int err = 0;        // the call's errno; ENOSYS: no call of that number in this program
  std::string data;   // its answer when err == 0
};

class StatfsHelpers {
 public:
  StatfsHelpers() = default;
  ~StatfsHelpers();
  StatfsHelpers(const StatfsHelpers&) = delete;
  StatfsHelpers& operator=(const StatfsHelpers&) = delete;

  // statvfs(path) in a helper. Ok with the errno statvfs returned (0 = *out filled); an error when no
  // helper could run it, or when `stop` was requested before `deadline` (daemon stopping, target
  // removed: the helper is killed and reaped once it can end). Past the deadline it keeps waiting for
  // the answer: the scheduler has then marked the run stuck, and returning would only start another
  // call on the same hung filesystem.
  Result<int> statvfs(const std::string& path, struct statvfs* out, const std::stop_token& stop, const Clock& clock,
                      SteadyTime deadline);
  // statvfs of many paths at once, for the statvfs() calls that follow (a batched probe's runs, see
  // Probe::prepare_batch): one helper, requests in pieces of PIPE_BUF bytes, answers read as they come,
  // so a cycle of a thousand calls costs a few wake-ups, not two per call. A statvfs() call on a path
  // answered here (at most kFresh ago) takes that answer. Waits until `until` at most: the helper is then
  // on a slow or hung path, and is left to the statvfs() call of that path, which waits for its answer
  // under that call's own deadline (and so is stuck, as without prefetch); paths after it are asked by
  // their own calls. Skips paths a call could not start on (blocked in the kernel); never fails.
  void prefetch(const std::vector<std::string>& paths, const std::stop_token& stop, const Clock& clock,
                SteadyTime until);
  static constexpr std::chrono::seconds kFresh{10};

  // Call number `op` (a HelperCallRegistration) on `path` in a helper, with statvfs's rules.
  Result<CallAnswer> call(std::uint8_t op, const std::string& path, const std::stop_token& stop, const Clock& clock,
                          SteadyTime deadline);
  static constexpr std::size_t kMaxAnswer = 64 * 1024;

  // Helper processes that exist now (idle, busy, or killed and not yet reaped).
  std::size_t processes() const;
  // Writes of requests to helpers so far: what a helper woke for (tests, benchmarks).
  std::uint64_t request_writes() const { return request_writes_.load(std::memory_order_relaxed); }

  // A call on a path whose earlier call was cancelled while its helper is still alive (stuck in the
  // kernel), or has been running for longer than this, fails at once instead of starting one more
  // helper on the same hung filesystem: at most a couple of helpers per hung path, however many calls.
  static constexpr std::chrono::seconds kStillBlocked{5};

 private:
  using Helper = PipeChild;  // requests: paths; answers: errno and struct statvfs
  struct Busy {
    std::string path;
    std::chrono::steady_clock::time_point since;
  };
  struct Early {  // a prefetched answer
    int err = 0;
    std::string data;
    std::chrono::steady_clock::time_point at;
  };
  Result<Helper> spawn();
  Result<Helper> take_helper(const std::string& path);
  void give_back(const Helper& h);
  std::string blocked_locked(const std::string& path) const;
  Result<CallAnswer> await_answer(const Helper& h, const std::string& path, const std::stop_token& stop,
                                  const Clock& clock, SteadyTime deadline, bool& lost);
  static void append_request(std::string& out, std::uint8_t op, const std::string& path);
  void retire(Helper h, bool kill, const std::string& path);  // closes its pipes; reaped now or later
  void reap_locked();
  // Helpers just told to end (in ending_): waited for a moment each, then reaped.
  void reap_soon(const std::vector<pid_t>& pids);

  mutable std::mutex mu_;
  IdleChildren idle_{4, std::chrono::seconds(60)};
  std::map<pid_t, std::string> ending_;  // told to end (or killed), not yet reaped -> path it was on
  std::map<pid_t, Busy> busy_;
  std::atomic<std::uint64_t> request_writes_{0};
  std::unordered_map<std::string, Early> early_;      // by path, until its call takes it
  // A prefetch's helper, by the path whose answer had not come in time: that path's call takes it.
  std::unordered_map<std::string, Helper> handoff_;
};

// One set of helpers for the whole process, for callers without a probe object of their own
// (the setup probe's stack facts).
StatfsHelpers& shared_statfs_helpers();

}  // namespace fsaudit::capacity
