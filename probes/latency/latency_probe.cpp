#include "probes/latency/latency_probe.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "daemon/probe/targets.hpp"
#include "probes/latency/stream.hpp"

namespace fsaudit::latency {

namespace {
constexpr const char* kHistHelp =
    "Latency of one 4 KiB write at a random offset of the probe file followed by fsync (io_uring WRITE linked "
    "to FSYNC, or an O_DSYNC write), measured with CLOCK_MONOTONIC";
constexpr const char* kWindowHelp =
    "Rolling-window quantile (nearest rank) of the fsync sample latency over latency.window";
}  // namespace

void TokenBucket::refill(SteadyTime now) {
  if (now > last_) {
    double hours = std::chrono::duration<double>(now - last_).count() / 3600.0;
    tokens_ = std::min(per_hour_, tokens_ + hours * per_hour_);
  }
  last_ = std::max(last_, now);
}

bool TokenBucket::take(SteadyTime now, std::uint64_t n) {
  refill(now);
  if (tokens_ < static_cast<double>(n)) return false;
  tokens_ -= static_cast<double>(n);
  return true;
}

void TokenBucket::charge(SteadyTime now, std::uint64_t n) {
  refill(now);
  tokens_ -= static_cast<double>(n);
}

double TokenBucket::available(SteadyTime now) {
  refill(now);
  return tokens_;
}

void TargetStats::set_state(State s) {
  state = s;
  if (s != State::ok) skipped[std::string(state_name(s))]++;
}

void TargetStats::emit(metrics::Batch& b, const std::string& target, SteadyTime now, bool direct_reads) {
  metrics::Labels l{{"target", target}};
  b.histogram("fsaudit_fsync_latency_seconds", kHistHelp, l, Histogram::bounds_seconds(), fsync.cumulative(),
              fsync.sum_seconds());
  if (direct_reads)
    b.histogram("fsaudit_direct_read_latency_seconds",
                "Latency of one 4 KiB O_DIRECT read at a random offset of the probe file", l,
                Histogram::bounds_seconds(), reads.cumulative(), reads.sum_seconds());
  if (auto q = window.quantiles(now)) {
    auto put = [&](const char* quantile, std::uint64_t ns) {
      auto ql = l;
      ql["quantile"] = quantile;
      b.gauge("fsaudit_fsync_latency_window_seconds", kWindowHelp, ql, static_cast<double>(ns) / 1e9);
    };
    put("0.5", q->p50_ns);
    put("0.99", q->p99_ns);
    put("0.999", q->p999_ns);
    b.gauge("fsaudit_fsync_latency_window_max_seconds", "Largest fsync sample latency inside the rolling window",
            l, static_cast<double>(q->max_ns) / 1e9);
  }
  b.gauge("fsaudit_fsync_latency_window_samples", "fsync samples inside the rolling window (latency.window)", l,
          static_cast<double>(window.size()));
  b.stateset("fsaudit_latency_sampler_state",
             "Outcome of the last sampler run: ok, or why it skipped (read_only, fill_threshold, no_space, "
             "io_error, io_budget, error)",
             l, state_names(), std::string(state_name(state)));
  for (const auto& name : state_names()) {
    if (name == "ok") continue;
    auto it = skipped.find(name);
    auto sl = l;
    sl["reason"] = name;
    b.counter("fsaudit_latency_sampler_skipped_total", "Sampler runs that skipped sampling, by reason", sl,
              it == skipped.end() ? 0.0 : static_cast<double>(it->second));
  }
  b.counter("fsaudit_latency_sampler_io_bytes_total",
            "Bytes the sampler wrote and read on this target (samples and probe file fill)", l,
            static_cast<double>(io_bytes));
  if (!mode.empty()) {
    auto ml = l;
    ml["mode"] = mode;
    b.info("fsaudit_latency_sampler_info", "How the sampler writes on this target (mode actually used)", ml);
  }
}

SamplerSettings SamplerSettings::from(const config::LatencyConfig& c) {
  SamplerSettings s;
  s.samples = c.samples_per_run;
  s.file_size = c.probe_file_size;
  s.mode = parse_mode(c.mode).value_or(Mode::io_uring_fsync);
  s.direct_reads = c.direct_reads;
  s.window = c.window;
  s.budget_per_hour = c.io_budget_per_hour;
  s.fill_threshold = c.fill_threshold;
  s.dir_name = c.dir_name;
  s.interval = c.interval;
  s.timeout = c.timeout;
  return s;
}

std::shared_ptr<TargetStats> Sampler::stats_for(const std::string& label, SteadyTime now) {
  std::lock_guard l(mu_);
  auto& p = stats_[label];
  if (!p) {
    p = std::make_shared<TargetStats>(s_.window, s_.budget_per_hour, now);
    p->seed = std::hash<std::string>{}(label) ^ mono_ns();
  }
  return p;
}

State Sampler::sample(const std::string& label, const std::filesystem::path& mountpoint,
                      const std::filesystem::path& dir, ProbeContext& ctx, metrics::Batch& out, std::string* why) {
  auto st = stats_for(label, ctx.clock.now());
  std::lock_guard lock(st->mu);
  auto finish = [&](State s, std::string reason) {
    st->set_state(s);
    if (why) *why = std::move(reason);
    st->emit(out, label, ctx.clock.now(), s_.direct_reads);
    return s;
  };

  // Live checks first: a read-only or too full filesystem is never written to.
  struct statvfs vfs;
  if (::statvfs(mountpoint.c_str(), &vfs) != 0) {
    int e = errno;
    return finish(classify_errno(e), "statvfs " + mountpoint.string() + ": " + std::strerror(e));
  }
  if (vfs.f_flag & ST_RDONLY) return finish(State::read_only, mountpoint.string() + " is mounted read-only");
  std::uint64_t used = vfs.f_blocks - std::min(vfs.f_blocks, static_cast<decltype(vfs.f_blocks)>(vfs.f_bfree));
  std::uint64_t denom = used + vfs.f_bavail;
  double fill = denom ? static_cast<double>(used) / static_cast<double>(denom) : 1.0;
  if (fill > s_.fill_threshold)
    return finish(State::fill_threshold, mountpoint.string() + " is " + std::to_string(int(fill * 100)) +
                                             "% full, above latency.fill_threshold");

  std::uint64_t need = static_cast<std::uint64_t>(s_.samples) * kBlock * (s_.direct_reads ? 2 : 1);
  if (!st->budget.take(ctx.clock.now(), need))
    return finish(State::io_budget, "latency.io_budget_per_hour used up for " + label);

  ProbeFile file;
  std::uint64_t filled = 0;
  if (auto f = file.open(dir, s_.file_size, 0, &filled)) {
    st->io_bytes += filled;
    st->budget.charge(ctx.clock.now(), filled);
    return finish(f->state(), f->message);
  }
  st->io_bytes += filled;
  st->budget.charge(ctx.clock.now(), filled);

  std::string note;
  auto writer = make_writer(s_.mode, file, &note);
  st->mode = writer->mode();
  OffsetPicker pick(st->seed++);
  State result = State::ok;
  std::string reason = note;
  for (int i = 0; i < s_.samples; ++i) {
    if (ctx.stop.stop_requested() || ctx.clock.now() >= ctx.deadline) break;
    auto off = pick.next(file.size());
    auto t0 = mono_ns();
    int e = writer->write_sync(off);
    auto t1 = mono_ns();
    if (e != 0) {
      result = classify_errno(e);
      reason = "write+fsync " + file.path().string() + ": " + std::strerror(e);
      break;
    }
    st->io_bytes += kBlock;
    st->record_fsync(ctx.clock.now(), t1 - t0);
  }
  writer.reset();
  if (result == State::ok && s_.direct_reads) {
    int rfd = ::open(file.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
    if (rfd < 0) {
      reason = std::string("O_DIRECT reads unavailable: ") + std::strerror(errno);
    } else {
      for (int i = 0; i < s_.samples; ++i) {
        auto off = pick.next(file.size());
        auto t0 = mono_ns();
        int e = direct_read(rfd, off);
        auto t1 = mono_ns();
        if (e != 0) {
          if (e == EIO) result = State::io_error;
          reason = "O_DIRECT read " + file.path().string() + ": " + std::strerror(e);
          break;
        }
        st->io_bytes += kBlock;
        st->reads.observe(t1 - t0);
      }
      ::close(rfd);
    }
  }
  return finish(result, reason);
}

bool sampler_applies(const Target& t) {
  if (t.is_host() || t.mountpoint.empty()) return false;
  if (is_pseudo_fstype(t.fstype)) return false;
  static const std::vector<std::string> never = {"nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs", "9p",
                                                 "fuse.sshfs", "erofs", "cramfs", "udf", "romfs"};
  return std::find(never.begin(), never.end(), t.fstype) == never.end();
}

ProbeResult LatencyProbe::run(const Target& target, ProbeContext& ctx) {
  metrics::Batch b;
  std::string why;
  std::filesystem::path mp = target.mountpoint;
  // A skip (read-only, full, ENOSPC, EIO, budget) is reported in the metrics, not as a probe failure.
  sampler_.sample(target.name, mp, mp / sampler_.settings().dir_name, ctx, b, &why);
  return ProbeResult::ok(std::move(b));
}

ProbeResult LatencyPathsProbe::run(const Target&, ProbeContext& ctx) {
  metrics::Batch b;
  for (const auto& p : paths_) {
    if (ctx.stop.stop_requested()) break;
    std::string why;
    std::filesystem::path dir = p;
    sampler_.sample(p, dir, dir / sampler_.settings().dir_name, ctx, b, &why);
  }
  return ProbeResult::ok(std::move(b));
}

ProbeResult LatencyCleanupProbe::run(const Target& target, ProbeContext&) {
  std::filesystem::path dir = std::filesystem::path(target.mountpoint) / dir_name_;
  std::error_code ec;
  if (!std::filesystem::exists(ProbeFile::path_in(dir), ec))
    return ProbeResult::not_applicable("latency sampling is disabled (latency.enabled: false)");
  auto e = ProbeFile::remove(dir);
  if (!e.empty()) return ProbeResult::failed("latency sampling is disabled but its probe file stays: " + e);
  return ProbeResult::not_applicable("latency sampling is disabled; removed " + ProbeFile::path_in(dir).string());
}

std::vector<std::unique_ptr<Probe>> make_latency_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> out;
  const auto& c = cfg.latency;
  if (!c.enabled) {
    out.push_back(std::make_unique<LatencyCleanupProbe>(c.dir_name));
  } else {
    out.push_back(std::make_unique<LatencyProbe>(SamplerSettings::from(c)));
    if (!c.extra_paths.empty())
      out.push_back(std::make_unique<LatencyPathsProbe>(SamplerSettings::from(c), c.extra_paths));
  }
  if (c.stream.enabled) out.push_back(std::make_unique<StreamProbe>(c, cfg.state_dir));
  return out;
}

}  // namespace fsaudit::latency
