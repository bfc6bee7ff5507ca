#pragma once
// sample_stack() in a child process. A write+fsync on a hung filesystem (a dead FUSE or network
// server, a disk that never completes) waits in the kernel uninterruptibly. On a daemon thread, or in
// one of io_uring's io-wq workers (which are threads of the daemon), that wait keeps the whole daemon
// from ending: it exits, but stays a process its parent cannot reap until the filesystem answers.
// In a child process the daemon's own thread only waits in poll(2), which exit interrupts; the hung
// call belongs to a process the daemon can leave behind. The child times its own write+fsync exactly
// as the thread did (the measurement is the same code, the same clock), so it is still the stack's
// fsync latency; only the request and the answer cross a pipe, outside the timed interval.
//
// Children are started once and reused (a sample is one pipe round trip each way, not a new process).
// A call takes an idle child or starts one, so there is at most one child per sample in flight (a
// child unused for a minute ends, see IdleChildren); a sample that
// hangs keeps its child and its calling thread (the probe does not dispatch that stack again while it
// is in flight, and shows it stuck), however long it hangs. When the filesystem answers, the answer
// arrives, the stack records it and the child is idle again.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/pipe_child.hpp"
#include "probes/latency/probe.hpp"

namespace fsaudit::latency {

// The wire format between the daemon and a child (pure; tested on its own).
std::string encode_request(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                           const SamplerSettings& s, std::uint64_t seed, std::chrono::nanoseconds budget);
struct SampleRequest {
  std::filesystem::path mountpoint, dir;
  SamplerSettings settings;
  std::uint64_t seed = 0;
  std::chrono::nanoseconds budget{0};
};
// nullopt when the bytes are not a whole request.
std::optional<SampleRequest> decode_request(std::string_view bytes);
std::string encode_result(const SampleResult& r);
std::optional<SampleResult> decode_result(std::string_view bytes);

class SamplerChildren {
 public:
  SamplerChildren() = default;
  ~SamplerChildren();
  SamplerChildren(const SamplerChildren&) = delete;
  SamplerChildren& operator=(const SamplerChildren&) = delete;

  // sample_stack(mountpoint, dir, s, seed) in a child; the child stops sampling once `budget` has
  // passed since it started (sample_stack's keep_going). Waits for the answer however long the
  // filesystem takes. A failure to run the child at all is a result with State::error and a reason.
  SampleResult sample(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                      const SamplerSettings& s, std::uint64_t seed, std::chrono::nanoseconds budget);

  // Child processes that exist now (idle, busy, or ended and not yet reaped).
  std::size_t processes() const;
  // Child processes sampling now.
  std::size_t busy() const;

 private:
  using Child = PipeChild;  // requests: encode_request(); answers: encode_result()
  void retire(Child c, bool kill);  // closes its pipes; reaped now or later
  void reap_locked();
  // Children just told to end (in ending_): waited for a moment each, then reaped.
  void reap_soon(const std::vector<pid_t>& pids);

  mutable std::mutex mu_;
  IdleChildren idle_{8, std::chrono::seconds(60)};
  std::map<pid_t, Child> busy_;
  std::vector<pid_t> ending_;  // told to end (EOF) or killed, not yet reaped
};

// One set of children for the whole process. Never destroyed: a thread still waiting for a hung child
// may outlive every probe; at exit the kernel closes the pipes and idle children end on EOF.
SamplerChildren& shared_sampler_children();

}  // namespace fsaudit::latency
