#include "probes/capacity/statfs_helper.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

namespace fsaudit::capacity {

namespace {

struct Answer {
  std::int32_t err;
  struct statvfs st;
};

// The helper's whole life: requests on fd 3 (u32 length + path), answers on fd 4; ends at EOF.
// Only system calls, no allocation, so it also runs safely where it is forked without exec (a program
// without helper_entry(), pipe_child.hpp).
void helper_main() {
  static char path[PATH_MAX + 1];
  while (true) {
    std::uint32_t len = 0;
    if (!read_all(3, &len, sizeof len) || len == 0 || len > PATH_MAX || !read_all(3, path, len)) return;
    path[len] = '\0';
    Answer a{};
    a.err = ::statvfs(path, &a.st) == 0 ? 0 : errno;
    if (!write_all(4, &a, sizeof a)) return;  // the daemon is gone (SIGPIPE is ignored: EPIPE)
  }
}

const HelperRegistration kStatfs{"fsaudit-statfs", helper_main};

}  // namespace

StatfsHelpers::~StatfsHelpers() {
  std::lock_guard l(mu_);
  for (pid_t pid : idle_.end_all()) ending_[pid] = "";  // EOF: the helper ends
  // Idle helpers end at once; a killed one stuck in the kernel is left to init rather than waited for.
  for (int i = 0; i < 20 && !ending_.empty(); ++i) {
    reap_locked();
    if (!ending_.empty()) ::usleep(5000);
  }
}

std::size_t StatfsHelpers::processes() const {
  std::lock_guard l(mu_);
  return idle_.size() + busy_.size() + ending_.size();
}

void StatfsHelpers::reap_locked() {
  std::erase_if(ending_, [](const auto& e) { return reaped(e.first); });
}

Result<StatfsHelpers::Helper> StatfsHelpers::spawn() { return start_pipe_child("fsaudit-statfs", helper_main); }

void StatfsHelpers::retire(Helper h, bool kill, const std::string& path) {
  close_pipe_child(h, kill);
  std::lock_guard l(mu_);
  busy_.erase(h.pid);
  ending_[h.pid] = path;
  reap_locked();
}

StatfsHelpers& shared_statfs_helpers() {
  static StatfsHelpers helpers;
  return helpers;
}

Result<int> StatfsHelpers::statvfs(const std::string& path, struct statvfs* out, const std::stop_token& stop,
                                   const Clock& clock, SteadyTime deadline) {
  if (path.empty() || path.size() > PATH_MAX) return err("path too long for statvfs");
  // A helper that ended since its last answer shows only when written to: one retry with a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (clock.now() < deadline && stop.stop_requested()) return err("cancelled before statvfs started");
    Helper h;
    {
      std::lock_guard l(mu_);
      reap_locked();
      for (const auto& [pid, p] : ending_)
        if (p == path) return err("an earlier statvfs of this path is still blocked in the kernel (helper pid " +
                                  std::to_string(pid) + ")");
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [pid, b] : busy_)
        if (b.path == path && now - b.since > kStillBlocked)
          return err("another statvfs of this path has been blocked for " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - b.since).count()) +
                     " s (helper pid " + std::to_string(pid) + ")");
      if (auto idle = idle_.take()) h = *idle;
    }
    if (h.pid < 0) {
      auto s = spawn();
      if (!s) return err("cannot start the statfs helper: " + s.error());
      h = *s;
    }
    {
      std::lock_guard l(mu_);
      busy_[h.pid] = Busy{path, std::chrono::steady_clock::now()};
    }
    // A helper that died leaves its request pipe without reader (POLLERR): writing would raise SIGPIPE
    // (ignored by the daemon, not necessarily by every caller).
    pollfd w{h.request, POLLOUT, 0};
    if (::poll(&w, 1, 0) < 0 || (w.revents & (POLLERR | POLLHUP)) != 0) {
      retire(h, true, "");
      continue;
    }
    auto len = static_cast<std::uint32_t>(path.size());
    if (!write_all(h.request, &len, sizeof len) || !write_all(h.request, path.data(), len)) {
      retire(h, true, "");
      continue;
    }
    pollfd p{h.reply, POLLIN, 0};
    while (true) {
      const bool before_deadline = clock.now() < deadline;
      if (before_deadline && stop.stop_requested()) {
        retire(h, true, path);  // stuck or not, this answer is no longer wanted
        return err("cancelled while statvfs was running");
      }
      // Past the deadline only the answer (or the helper's end) finishes the call; see the header.
      int r = ::poll(&p, 1, before_deadline ? 100 : -1);
      if (r < 0 && errno != EINTR) {
        int e = errno;
        retire(h, true, path);
        return err(std::string("poll: ") + std::strerror(e));
      }
      if (r > 0) break;
    }
    Answer a{};
    if (!read_all(h.reply, &a, sizeof a)) {
      retire(h, true, "");
      if (attempt == 0) continue;
      return err("the statfs helper ended without answering");
    }
    {
      std::lock_guard l(mu_);
      busy_.erase(h.pid);
      std::vector<pid_t> ended;
      idle_.put(h, std::chrono::steady_clock::now(), ended);
      for (pid_t pid : ended) ending_[pid] = "";
    }
    if (a.err == 0) *out = a.st;
    return static_cast<int>(a.err);
  }
  return err("the statfs helper ended without answering");
}

}  // namespace fsaudit::capacity
