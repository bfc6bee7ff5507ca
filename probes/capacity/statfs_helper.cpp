#include "probes/capacity/statfs_helper.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>

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
  for (auto& [path, h] : handoff_) {  // a prefetch's helper no run took
    close_pipe_child(h, true);
    ending_[h.pid] = path;
  }
  handoff_.clear();
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
  {
    std::lock_guard l(mu_);
    busy_.erase(h.pid);
    ending_[h.pid] = path;
  }
  reap_soon({h.pid});
}

void StatfsHelpers::reap_soon(const std::vector<pid_t>& pids) {
  if (pids.empty()) return;
  await_ended(pids);
  std::lock_guard l(mu_);
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

// Waits for the answer to the one request `h` has pending, for `path`. Past the deadline only the answer
// (or the helper's end) finishes the wait; see the header. On anything but an answer the helper is
// retired: `lost` tells a helper that ended without answering (worth one retry) from a cancel or error.
Result<CallAnswer> StatfsHelpers::await_answer(const Helper& h, const std::string& path, const std::stop_token& stop,
                                               const Clock& clock, SteadyTime deadline, bool& lost) {
  lost = false;
  pollfd p{h.reply, POLLIN, 0};
  while (true) {
    const bool before_deadline = clock.now() < deadline;
    if (before_deadline && stop.stop_requested()) {
      retire(h, true, path);  // stuck or not, this answer is no longer wanted
      return err("cancelled while statvfs was running");
    }
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
    lost = true;
    return err("the statfs helper ended without answering");
  }
  return answer;
}

Result<CallAnswer> StatfsHelpers::call(std::uint8_t op, const std::string& path, const std::stop_token& stop,
                                       const Clock& clock, SteadyTime deadline) {
  if (path.empty() || path.size() > PATH_MAX) return err("path too long for statvfs");
  if (op == 0) {
    // An answer prefetch() got for this run, or the helper prefetch() left waiting on this path.
    std::optional<Early> early;
    std::optional<Helper> handoff;
    {
      std::lock_guard l(mu_);
      if (auto it = early_.find(path); it != early_.end()) {
        early = std::move(it->second);
        early_.erase(it);
      } else if (auto ht = handoff_.find(path); ht != handoff_.end()) {
        handoff = ht->second;
        handoff_.erase(ht);
      }
    }
    if (early && std::chrono::steady_clock::now() - early->at <= kFresh)
      return CallAnswer{early->err, std::move(early->data)};
    if (handoff) {
      bool lost = false;
      auto answer = await_answer(*handoff, path, stop, clock, deadline, lost);
      // Its pipe still holds the prefetch's later requests: it is not reused.
      if (answer) retire(*handoff, true, "");
      return answer;
    }
  }
  // A helper that ended since its last answer shows only when written to: one retry with a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (clock.now() < deadline && stop.stop_requested()) return err("cancelled before statvfs started");
    auto taken = take_helper(path);
    if (!taken) return err(taken.error());
    Helper h = *taken;
    // One write per request (atomic up to PIPE_BUF): a helper woken by a partial request would only
    // sleep again until the rest came, two more context switches per call.
    std::string request;
    append_request(request, op, path);
    request_writes_.fetch_add(1, std::memory_order_relaxed);
    if (!write_all(h.request, request.data(), request.size())) {
      retire(h, true, "");
      continue;
    }
    bool lost = false;
    auto answer = await_answer(h, path, stop, clock, deadline, lost);
    if (!answer) {
      if (lost && attempt == 0) continue;
      return answer;
    }
    give_back(h);
    return answer;
  }
  return err("the statfs helper ended without answering");
}

void StatfsHelpers::append_request(std::string& out, std::uint8_t op, const std::string& path) {
  const auto len = static_cast<std::uint32_t>(path.size());
  const std::size_t at = out.size();
  out.resize(at + sizeof len + 1 + len);
  std::memcpy(out.data() + at, &len, sizeof len);
  out[at + sizeof len] = static_cast<char>(op);
  std::memcpy(out.data() + at + sizeof len + 1, path.data(), len);
}

// Why a call on `path` must not start (an earlier one is blocked in the kernel there), or empty.
std::string StatfsHelpers::blocked_locked(const std::string& path) const {
  for (const auto& [pid, p] : ending_)
    if (p == path)
      return "an earlier call on this path is still blocked in the kernel (helper pid " + std::to_string(pid) + ")";
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [pid, b] : busy_)
    if (b.path == path && now - b.since > kStillBlocked)
      return "another call on this path has been blocked for " +
             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - b.since).count()) +
             " s (helper pid " + std::to_string(pid) + ")";
  return "";
}

// An idle helper, or a new one, marked busy on `path`; one that died idle is replaced.
Result<StatfsHelpers::Helper> StatfsHelpers::take_helper(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    Helper h;
    {
      std::lock_guard l(mu_);
      reap_locked();
      if (auto why = blocked_locked(path); !why.empty()) return err(why);
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
    return h;
  }
  return err("the statfs helper ended before its request");
}

void StatfsHelpers::give_back(const Helper& h) {
  std::vector<pid_t> ended;
  {
    std::lock_guard l(mu_);
    busy_.erase(h.pid);
    idle_.put(h, std::chrono::steady_clock::now(), ended);
    for (pid_t pid : ended) ending_[pid] = "";
  }
  reap_soon(ended);
}

void StatfsHelpers::prefetch(const std::vector<std::string>& paths, const std::stop_token& stop, const Clock& clock,
                             SteadyTime until) {
  std::vector<const std::string*> todo;
  {
    std::lock_guard l(mu_);
    reap_locked();
    early_.clear();  // answers no run took (a target removed meanwhile)
    // A helper left waiting for a run that never came: retired, on its path if it is still blocked there.
    for (auto& [path, h] : handoff_) {
      busy_.erase(h.pid);
      close_pipe_child(h, true);
      ending_[h.pid] = path;
    }
    handoff_.clear();
    todo.reserve(paths.size());
    for (const auto& p : paths)
      if (!p.empty() && p.size() <= PATH_MAX && blocked_locked(p).empty()) todo.push_back(&p);
  }
  if (todo.empty()) return;
  auto taken = take_helper(*todo.front());
  if (!taken) return;  // each run asks on its own, and reports why it could not
  const Helper h = *taken;
  std::string request;
  // Room after a read for the rest of the answer it ended in (a statvfs answer at most).
  constexpr std::size_t kSpare = sizeof(AnswerHead) + sizeof(struct statvfs);
  std::vector<char> buf(32 * 1024 + kSpare);
  std::size_t next = 0;
  while (next < todo.size()) {
    // Requests go out in pieces of at most PIPE_BUF bytes: each write is atomic and fits in the empty
    // request pipe, so it never waits for the helper, which may itself wait for us to read its answers.
    request.clear();
    std::size_t end = next;
    while (end < todo.size() && request.size() + sizeof(std::uint32_t) + 1 + todo[end]->size() <= PIPE_BUF)
      append_request(request, 0, *todo[end++]);
    if (end == next) append_request(request, 0, *todo[end++]);  // one long path alone (never past PATH_MAX)
    {
      std::lock_guard l(mu_);
      busy_[h.pid] = Busy{*todo[next], std::chrono::steady_clock::now()};
    }
    request_writes_.fetch_add(1, std::memory_order_relaxed);
    if (!write_all(h.request, request.data(), request.size())) return retire(h, true, "");
    // Answers come back in order, as they are made.
    while (next < end) {
      pollfd p{h.reply, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock.now()).count();
      int r = left > 0 && !stop.stop_requested() ? ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100))) : 0;
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        if (left > 0 && !stop.stop_requested()) continue;
        // Out of time (a slow or hung filesystem): the helper is left to the run of the path it is
        // on, which waits for that answer under its own deadline; the rest ask on their own.
        std::lock_guard l(mu_);
        busy_[h.pid] = Busy{*todo[next], std::chrono::steady_clock::now()};
        handoff_[*todo[next]] = h;
        return;
      }
      ssize_t n = r > 0 ? ::read(h.reply, buf.data(), buf.size() - kSpare) : -1;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return retire(h, true, "");
      // Each answer was one atomic write: when a read ends inside one, its rest is already in the
      // pipe. Completing it here means no partial answer is ever left behind in `buf`.
      std::size_t have = static_cast<std::size_t>(n), used = 0;
      while (used < have) {
        AnswerHead a{};
        if (have - used < sizeof a) {
          if (!read_all(h.reply, buf.data() + have, sizeof a - (have - used))) return retire(h, true, "");
          have = used + sizeof a;
        }
        std::memcpy(&a, buf.data() + used, sizeof a);
        if (next == end || a.size > kMaxAnswer || (a.err == 0 && a.size != sizeof(struct statvfs)) ||
            (a.err != 0 && a.size != 0))
          return retire(h, true, "");  // not the helper's protocol: nothing it said is used
        if (have - used < sizeof a + a.size) {
          if (!read_all(h.reply, buf.data() + have, sizeof a + a.size - (have - used))) return retire(h, true, "");
          have = used + sizeof a + a.size;
        }
        Early e{a.err, std::string(buf.data() + used + sizeof a, a.size), std::chrono::steady_clock::now()};
        used += sizeof a + a.size;
        std::lock_guard l(mu_);
        early_[*todo[next++]] = std::move(e);
      }
    }
  }
  give_back(h);
}

}  // namespace fsaudit::capacity
