#include "probes/capacity/statfs_helper.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>

namespace fsaudit::capacity {

namespace {

// Calls by number, filled by static initialisers before main() (a plain array: no order to get
// wrong); 0 is statvfs.
HelperCall g_calls[256];

int statvfs_call(const char* path, void* out, std::size_t cap, std::size_t* n) {
  if (cap < sizeof(struct statvfs)) return ERANGE;
  if (::statvfs(path, static_cast<struct statvfs*>(out)) != 0) return errno;
  *n = sizeof(struct statvfs);
  return 0;
}

struct AnswerHead {
  std::int32_t err;
  std::uint32_t size;
};

// The helper's whole life: requests on fd 3 (u32 path length, u8 call, the path), answers on fd 4
// (i32 errno, u32 size, that many bytes); ends at EOF. Only system calls, no allocation, so it also
// runs safely where it is forked without exec (a program without helper_entry(), pipe_child.hpp).
void helper_main() {
  static char path[PATH_MAX + 1];
  // The answer's head and data go out in one write: the daemon's thread wakes once per answer.
  alignas(16) static unsigned char msg[sizeof(AnswerHead) + StatfsHelpers::kMaxAnswer];
  unsigned char* const out = msg + sizeof(AnswerHead);
  while (true) {
    std::uint32_t len = 0;
    std::uint8_t op = 0;
    if (!read_all(3, &len, sizeof len) || len == 0 || len > PATH_MAX || !read_all(3, &op, 1) || !read_all(3, path, len))
      return;
    path[len] = '\0';
    std::size_t n = 0;
    const HelperCall call = op == 0 ? statvfs_call : g_calls[op];
    AnswerHead a{call ? call(path, out, StatfsHelpers::kMaxAnswer, &n) : ENOSYS, 0};
    if (a.err != 0 || n > StatfsHelpers::kMaxAnswer) n = 0;
    a.size = static_cast<std::uint32_t>(n);
    std::memcpy(msg, &a, sizeof a);
    if (!write_all(4, msg, sizeof a + n)) return;  // the daemon is gone (SIGPIPE is ignored: EPIPE)
  }
}

const HelperRegistration kStatfs{"fsaudit-statfs", helper_main};

}  // namespace

HelperCallRegistration::HelperCallRegistration(std::uint8_t op, HelperCall fn) {
  if (op != 0 && !g_calls[op]) g_calls[op] = fn;
}

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
  auto r = call(0, path, stop, clock, deadline);
  if (!r) return err(r.error());
  if (r->err == 0) {
    if (r->data.size() != sizeof(struct statvfs)) return err("the statfs helper answered with the wrong size");
    std::memcpy(out, r->data.data(), sizeof(struct statvfs));
  }
  return r->err;
}

Result<CallAnswer> StatfsHelpers::call(std::uint8_t op, const std::string& path, const std::stop_token& stop,
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
        if (p == path) return err("an earlier call on this path is still blocked in the kernel (helper pid " +
                                  std::to_string(pid) + ")");
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [pid, b] : busy_)
        if (b.path == path && now - b.since > kStillBlocked)
          return err("another call on this path has been blocked for " +
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
    // One write per request (atomic up to PIPE_BUF): a helper woken by a partial request would only
    // sleep again until the rest came, two more context switches per call.
    const auto len = static_cast<std::uint32_t>(path.size());
    std::string request(sizeof len + 1 + len, '\0');
    std::memcpy(request.data(), &len, sizeof len);
    request[sizeof len] = static_cast<char>(op);
    std::memcpy(request.data() + sizeof len + 1, path.data(), len);
    if (!write_all(h.request, request.data(), request.size())) {
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
    AnswerHead a{};
    CallAnswer answer;
    if (read_all(h.reply, &a, sizeof a) && a.size <= kMaxAnswer) {
      answer.err = a.err;
      answer.data.resize(a.size);
    } else {
      a.size = ~0u;
    }
    if (a.size == ~0u || (a.size > 0 && !read_all(h.reply, answer.data.data(), a.size))) {
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
    return answer;
  }
  return err("the statfs helper ended without answering");
}

}  // namespace fsaudit::capacity
