#include "probes/latency/sampler_child.hpp"

#include <poll.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

namespace fsaudit::latency {

namespace {

// Fields are u64 (little-endian as the host writes them: both ends are the same binary) and
// length-prefixed strings; a message is a u32 length and that many bytes.
class Writer {
 public:
  void u64(std::uint64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void list(const std::vector<std::uint64_t>& v) {
    u64(v.size());
    for (auto x : v) u64(x);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u64(std::uint64_t& v) {
    if (in_.size() < sizeof v) return false;
    std::memcpy(&v, in_.data(), sizeof v);
    in_.remove_prefix(sizeof v);
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t n = 0;
    if (!u64(n) || n > in_.size()) return false;
    s.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return true;
  }
  bool list(std::vector<std::uint64_t>& v) {
    std::uint64_t n = 0;
    if (!u64(n) || n > in_.size() / sizeof(std::uint64_t)) return false;
    v.resize(n);
    for (auto& x : v) u64(x);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

constexpr std::uint32_t kMaxMessage = 64u << 20;

// Length and bytes in one write: two would wake the reader twice for one message.
bool send_message(int fd, const std::string& m) {
  if (m.size() > kMaxMessage) return false;
  auto len = static_cast<std::uint32_t>(m.size());
  std::string framed(sizeof len + m.size(), '\0');
  std::memcpy(framed.data(), &len, sizeof len);
  std::memcpy(framed.data() + sizeof len, m.data(), m.size());
  return write_all(fd, framed.data(), framed.size());
}

bool receive_message(int fd, std::string& m) {
  std::uint32_t len = 0;
  if (!read_all(fd, &len, sizeof len) || len > kMaxMessage) return false;
  m.resize(len);
  return read_all(fd, m.data(), len);
}

SampleResult failed(std::string why) {
  SampleResult r;
  r.state = State::error;
  r.reason = std::move(why);
  return r;
}

// The child's whole life: requests on fd 3, answers on fd 4, ends at EOF. Normally an exec'd copy of
// fsauditd (pipe_child.hpp); in a program without helper_entry() a fork without exec, where it still
// works because sample_stack() only allocates (glibc's and jemalloc's fork handlers leave malloc
// usable in the child) and takes no lock another thread could have held.
void child_main() {
  std::string msg;
  while (receive_message(3, msg)) {
    auto req = decode_request(msg);
    SampleResult r;
    if (!req) {
      r = failed("the sampler process got a request it cannot read");
    } else {
      const std::uint64_t until = mono_ns() + static_cast<std::uint64_t>(std::max<std::int64_t>(0, req->budget.count()));
      r = sample_stack(req->mountpoint, req->dir, req->settings, req->seed, [&] { return mono_ns() < until; });
    }
    if (!send_message(4, encode_result(r))) return;  // the daemon is gone
  }
}

const HelperRegistration kSampler{"fsaudit-sampler", child_main};

}  // namespace

std::string encode_request(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                           const SamplerSettings& s, std::uint64_t seed, std::chrono::nanoseconds budget) {
  Writer w;
  w.str(mountpoint.string());
  w.str(dir.string());
  w.u64(static_cast<std::uint64_t>(s.samples));
  w.u64(s.file_size);
  w.u64(static_cast<std::uint64_t>(s.mode));
  w.u64(s.direct_reads ? 1 : 0);
  w.u64(std::bit_cast<std::uint64_t>(s.fill_threshold));
  w.str(s.helper);
  w.u64(seed);
  w.u64(static_cast<std::uint64_t>(budget.count()));
  return w.take();
}

std::optional<SampleRequest> decode_request(std::string_view bytes) {
  Reader r(bytes);
  SampleRequest q;
  std::string mp, dir;
  std::uint64_t samples = 0, mode = 0, direct = 0, fill = 0, budget = 0;
  if (!r.str(mp) || !r.str(dir) || !r.u64(samples) || !r.u64(q.settings.file_size) || !r.u64(mode) ||
      !r.u64(direct) || !r.u64(fill) || !r.str(q.settings.helper) || !r.u64(q.seed) || !r.u64(budget) || !r.done())
    return std::nullopt;
  if (samples > 1'000'000 || mode > static_cast<std::uint64_t>(Mode::o_dsync) || direct > 1) return std::nullopt;
  q.mountpoint = mp;
  q.dir = dir;
  q.settings.samples = static_cast<int>(samples);
  q.settings.mode = static_cast<Mode>(mode);
  q.settings.direct_reads = direct == 1;
  q.settings.fill_threshold = std::bit_cast<double>(fill);
  q.budget = std::chrono::nanoseconds(static_cast<std::int64_t>(budget));
  return q;
}

std::string encode_result(const SampleResult& r) {
  Writer w;
  w.u64(static_cast<std::uint64_t>(r.state));
  w.str(r.reason);
  w.list(r.fsync_ns);
  w.list(r.read_ns);
  w.u64(r.fill_bytes);
  w.u64(r.bytes);
  w.u64(r.fsyncs);
  w.str(r.mode);
  return w.take();
}

std::optional<SampleResult> decode_result(std::string_view bytes) {
  Reader rd(bytes);
  SampleResult r;
  std::uint64_t state = 0;
  if (!rd.u64(state) || !rd.str(r.reason) || !rd.list(r.fsync_ns) || !rd.list(r.read_ns) || !rd.u64(r.fill_bytes) ||
      !rd.u64(r.bytes) || !rd.u64(r.fsyncs) || !rd.str(r.mode) || !rd.done())
    return std::nullopt;
  if (state >= state_names().size()) return std::nullopt;
  r.state = static_cast<State>(state);
  return r;
}

// ---- the children ---------------------------------------------------------------------------------

SamplerChildren::~SamplerChildren() {
  std::lock_guard l(mu_);
  for (pid_t pid : idle_.end_all()) ending_.push_back(pid);  // EOF: the child ends
  // Idle children end at once; a busy one stuck in the kernel is left to init rather than waited for.
  for (int i = 0; i < 20 && !ending_.empty(); ++i) {
    reap_locked();
    if (!ending_.empty()) ::usleep(5000);
  }
}

std::size_t SamplerChildren::processes() const {
  std::lock_guard l(mu_);
  return idle_.size() + busy_.size() + ending_.size();
}

std::size_t SamplerChildren::busy() const {
  std::lock_guard l(mu_);
  return busy_.size();
}

void SamplerChildren::reap_locked() {
  std::erase_if(ending_, reaped);
}

void SamplerChildren::retire(Child c, bool kill) {
  close_pipe_child(c, kill);
  {
    std::lock_guard l(mu_);
    busy_.erase(c.pid);
    ending_.push_back(c.pid);
  }
  reap_soon({c.pid});
}

void SamplerChildren::reap_soon(const std::vector<pid_t>& pids) {
  if (pids.empty()) return;
  await_ended(pids);
  std::lock_guard l(mu_);
  reap_locked();
}

SampleResult SamplerChildren::sample(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                                     const SamplerSettings& s, std::uint64_t seed, std::chrono::nanoseconds budget) {
  const std::string request = encode_request(mountpoint, dir, s, seed, budget);
  // A child that ended since its last answer shows only when written to: one retry with a fresh one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<Child> c;
    {
      std::lock_guard l(mu_);
      reap_locked();
      c = idle_.take();
    }
    if (!c) {
      auto made = start_pipe_child("fsaudit-sampler", child_main);
      if (!made) return failed("cannot start a sampler process: " + made.error());
      c = *made;
    }
    {
      std::lock_guard l(mu_);
      busy_[c->pid] = *c;
    }
    pollfd w{c->request, POLLOUT, 0};
    if (::poll(&w, 1, 0) < 0 || (w.revents & (POLLERR | POLLHUP)) != 0 || !send_message(c->request, request)) {
      retire(*c, true);
      continue;
    }
    // However long the filesystem takes: this thread waits in read(2), which the daemon's exit ends.
    std::string answer;
    if (!receive_message(c->reply, answer)) {
      retire(*c, true);
      if (attempt == 0) continue;
      return failed("the sampler process ended without answering");
    }
    std::vector<pid_t> ended;
    {
      std::lock_guard l(mu_);
      busy_.erase(c->pid);
      idle_.put(*c, std::chrono::steady_clock::now(), ended);
      ending_.insert(ending_.end(), ended.begin(), ended.end());
    }
    reap_soon(ended);
    auto r = decode_result(answer);
    if (!r) return failed("the sampler process answered something it cannot have sent");
    return *r;
  }
  return failed("the sampler process ended without answering");
}

SamplerChildren& shared_sampler_children() {
  static auto* children = new SamplerChildren;
  return *children;
}

}  // namespace fsaudit::latency
