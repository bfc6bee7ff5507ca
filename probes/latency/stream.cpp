#include "probes/latency/stream.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/latency/stats.hpp"

namespace fsaudit::latency {

StreamSummary summarize_stream(std::vector<std::uint64_t> idle, std::vector<std::uint64_t> load) {
  std::sort(idle.begin(), idle.end());
  std::sort(load.begin(), load.end());
  StreamSummary s;
  s.idle_samples = idle.size();
  s.load_samples = load.size();
  if (!idle.empty()) {
    s.idle_p99_ns = *nearest_rank(idle, 990'000);
    s.idle_max_ns = idle.back();
  }
  if (!load.empty()) {
    s.load_p99_ns = *nearest_rank(load, 990'000);
    s.load_max_ns = load.back();
  }
  if (!idle.empty() && !load.empty() && s.idle_p99_ns > 0)
    s.ratio = static_cast<double>(s.load_p99_ns) / static_cast<double>(s.idle_p99_ns);
  return s;
}

bool stream_due(const CalendarWindow& w, std::chrono::milliseconds interval, WallTime now,
                std::optional<WallTime> last, long tz) {
  if (!w.contains(now, tz)) return false;
  if (last && now >= *last && now - *last < interval * 9 / 10) return false;
  return true;
}

std::map<std::string, double> parse_stream_state(std::string_view text) {
  std::map<std::string, double> m;
  for (auto line : lines(text)) {
    auto t = trim(line);
    auto sp = t.find(' ');
    if (sp == std::string_view::npos) continue;
    auto v = parse_double(t.substr(0, sp));
    if (!v) continue;
    m[std::string(trim(t.substr(sp + 1)))] = *v;
  }
  return m;
}

std::string format_stream_state(const std::map<std::string, double>& m) {
  std::ostringstream o;
  o.precision(15);
  for (const auto& [p, t] : m) o << t << ' ' << p << '\n';
  return o.str();
}

std::optional<ProbeSchedule> StreamProbe::own_schedule() const {
  const auto& s = c_.stream;
  auto per_target = s.duration + s.sample_period * s.idle_samples + std::chrono::seconds(30);
  auto n = static_cast<long>(std::max<std::size_t>(1, s.targets.size()));
  return ProbeSchedule{s.interval, std::chrono::seconds(0), per_target * n, s.window};
}

StreamProbe::StreamProbe(const config::LatencyConfig& c, std::filesystem::path state_dir)
    : c_(c), state_file_(state_dir / "latency_stream.last") {}

namespace {

// Waits until mono_ns() >= t, in short slices so a stop request is honoured promptly.
void wait_until_ns(std::uint64_t t, const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    auto now = mono_ns();
    if (now >= t) return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<std::uint64_t>(t - now, 50'000'000)));
  }
}

}  // namespace

StreamRun StreamProbe::run_once(const std::string& path, ProbeContext& ctx) {
  StreamRun r;
  r.started_at = ctx.clock.wall_seconds();
  auto fail = [&](State s, std::string why) {
    r.state = s;
    r.reason = std::move(why);
    return r;
  };
  const auto& sc = c_.stream;
  struct statvfs vfs;
  if (::statvfs(path.c_str(), &vfs) != 0) {
    int e = errno;
    return fail(classify_errno(e), "statvfs " + path + ": " + std::strerror(e));
  }
  if (vfs.f_flag & ST_RDONLY) return fail(State::read_only, path + " is mounted read-only");
  std::uint64_t avail = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  std::uint64_t total = static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  std::uint64_t used = total - std::min<std::uint64_t>(total, static_cast<std::uint64_t>(vfs.f_bfree) * vfs.f_frsize);
  std::uint64_t need = sc.size + c_.probe_file_size;
  if (avail < need || (used + need) > static_cast<std::uint64_t>(c_.fill_threshold * static_cast<double>(used + avail)))
    return fail(State::fill_threshold, path + " has " + std::to_string(avail >> 20) + " MiB free; the streaming test needs " +
                                           std::to_string(need >> 20) + " MiB and must stay under latency.fill_threshold");

  std::filesystem::path dir = std::filesystem::path(path) / c_.dir_name;
  ProbeFile file;
  std::uint64_t filled = 0;
  if (auto f = file.open(dir, c_.probe_file_size, 0, &filled)) return fail(f->state(), f->message);
  auto opened = make_writer(parse_mode(c_.mode).value_or(Mode::io_uring_fsync), file);
  auto& writer = opened.writer;
  OffsetPicker pick(mono_ns());
  const std::uint64_t period = static_cast<std::uint64_t>(std::chrono::nanoseconds(sc.sample_period).count());

  // Time left in this run: the idle phase first, the rest (up to latency.stream.duration) under load.
  auto left_ns = [&]() -> std::int64_t {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(ctx.deadline - ctx.clock.now()).count();
  };
  std::vector<std::uint64_t> idle, load;
  int sample_err = 0;
  auto take = [&](std::vector<std::uint64_t>& into) {
    auto t0 = mono_ns();
    int e = writer->write_sync(pick.next(file.size()));
    auto t1 = mono_ns();
    if (e) sample_err = e;
    else into.push_back(t1 - t0);
  };
  for (int i = 0; i < sc.idle_samples && !sample_err && !ctx.stop.stop_requested(); ++i) {
    auto next = mono_ns() + period;
    take(idle);
    wait_until_ns(next, ctx.stop);
  }
  if (sample_err) return fail(classify_errno(sample_err), std::string("idle write+fsync: ") + std::strerror(sample_err));

  std::int64_t budget_ns = left_ns() - 2'000'000'000;  // leave 2 s to stop and clean up
  std::int64_t dur_ns = std::min<std::int64_t>(std::chrono::nanoseconds(sc.duration).count(), budget_ns);
  if (dur_ns < 1'000'000'000)
    return fail(State::error, "no time left for the streaming phase; raise probes.latency_stream.timeout above "
                              "latency.stream.duration + idle_samples * sample_period + 5s");

  auto stream_path = dir / "latency.stream";
  ::unlink(stream_path.c_str());  // a leftover of an interrupted test
  std::atomic<bool> done{false};
  std::atomic<int> stream_err{0};
  std::atomic<std::uint64_t> streamed{0};
  const std::uint64_t t_start = mono_ns();
  const std::uint64_t t_end = t_start + static_cast<std::uint64_t>(dur_ns);
  std::stop_source streamer_stop;
  std::thread streamer([&] {
    int fd = ::open(stream_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      stream_err = errno;
      done = true;
      return;
    }
    std::vector<std::uint64_t> buf((1 << 20) / 8);
    std::mt19937_64 rng(t_start);
    for (auto& w : buf) w = rng();
    std::uint64_t n = 0;
    while (n < sc.size && mono_ns() < t_end && !streamer_stop.stop_requested()) {
      auto chunk = static_cast<std::size_t>(std::min<std::uint64_t>(1 << 20, sc.size - n));
      buf[0] ^= n;  // no two chunks alike
      auto w = ::write(fd, buf.data(), chunk);
      if (w < 0) {
        if (errno == EINTR) continue;
        stream_err = errno;
        break;
      }
      n += static_cast<std::uint64_t>(w);
      streamed = n;
    }
    ::close(fd);
    done = true;
  });
  while (!done && !sample_err && !ctx.stop.stop_requested() && mono_ns() < t_end) {
    auto next = mono_ns() + period;
    take(load);
    while (!done && mono_ns() < next && !ctx.stop.stop_requested())
      wait_until_ns(std::min(next, mono_ns() + 20'000'000), ctx.stop);
  }
  streamer_stop.request_stop();
  streamer.join();
  r.stream_seconds = static_cast<double>(mono_ns() - t_start) / 1e9;
  ::unlink(stream_path.c_str());
  r.bytes = streamed;
  r.summary = summarize_stream(idle, load);
  if (sample_err) return fail(classify_errno(sample_err), std::string("write+fsync under load: ") + std::strerror(sample_err));
  if (stream_err) return fail(classify_errno(stream_err), std::string("streaming write: ") + std::strerror(stream_err));
  r.reason = opened.note;
  return r;
}

void StreamProbe::emit(metrics::Batch& b, const std::string& path, const StreamRun& r) const {
  metrics::Labels l{{"target", path}};
  auto phase = [&](const char* p) {
    auto x = l;
    x["phase"] = p;
    return x;
  };
  const auto& s = r.summary;
  b.stateset("fsaudit_latency_stream_state", "Outcome of the last streaming-write latency test", l, state_names(),
             std::string(state_name(r.state)));
  b.gauge("fsaudit_latency_stream_last_run_timestamp_seconds", "When the last streaming-write latency test started",
          l, r.started_at);
  if (r.state != State::ok) return;
  const char* p99h = "p99 (nearest rank) of 4 KiB write+fsync latency in the last streaming test, idle or under load";
  const char* maxh = "Largest 4 KiB write+fsync latency in the last streaming test, idle or under load";
  const char* nh = "4 KiB write+fsync samples in the last streaming test, idle or under load";
  b.gauge("fsaudit_latency_stream_fsync_p99_seconds", p99h, phase("idle"), static_cast<double>(s.idle_p99_ns) / 1e9);
  b.gauge("fsaudit_latency_stream_fsync_p99_seconds", p99h, phase("load"), static_cast<double>(s.load_p99_ns) / 1e9);
  b.gauge("fsaudit_latency_stream_fsync_max_seconds", maxh, phase("idle"), static_cast<double>(s.idle_max_ns) / 1e9);
  b.gauge("fsaudit_latency_stream_fsync_max_seconds", maxh, phase("load"), static_cast<double>(s.load_max_ns) / 1e9);
  b.gauge("fsaudit_latency_stream_samples", nh, phase("idle"), static_cast<double>(s.idle_samples));
  b.gauge("fsaudit_latency_stream_samples", nh, phase("load"), static_cast<double>(s.load_samples));
  b.gauge("fsaudit_latency_stream_p99_ratio", "Load p99 divided by idle p99 in the last streaming test", l, s.ratio);
  b.gauge("fsaudit_latency_stream_written_bytes", "Bytes written by the streaming writer in the last test", l,
          static_cast<double>(r.bytes));
  b.gauge("fsaudit_latency_stream_duration_seconds", "How long the streaming phase of the last test ran", l,
          r.stream_seconds);
}

ProbeResult StreamProbe::run(const Target&, ProbeContext& ctx) {
  std::lock_guard lock(mu_);
  if (!loaded_) {
    if (auto t = read_file(state_file_)) last_start_ = parse_stream_state(*t);
    loaded_ = true;
  }
  metrics::Batch b;
  std::string failures;
  for (const auto& path : c_.stream.targets) {
    if (ctx.stop.stop_requested()) break;
    std::optional<WallTime> last;
    if (auto it = last_start_.find(path); it != last_start_.end())
      last = WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::duration<double>(it->second)));
    if (stream_due(c_.stream.window, c_.stream.interval, ctx.clock.wall(), last, CalendarWindow::local_offset())) {
      // Record the start before writing anything, so a crash mid-test is not retried in a loop.
      last_start_[path] = ctx.clock.wall_seconds();
      if (auto w = write_file_atomic(state_file_, format_stream_state(last_start_)); !w)
        failures += "cannot record the test start (" + w.error() + "); ";
      last_run_[path] = run_once(path, ctx);
    }
    if (auto it = last_run_.find(path); it != last_run_.end()) emit(b, path, it->second);
  }
  if (!failures.empty()) return ProbeResult::failed(failures, std::move(b));
  return ProbeResult::ok(std::move(b));
}

}  // namespace fsaudit::latency
