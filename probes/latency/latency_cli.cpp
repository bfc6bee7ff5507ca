// fsaudit-latency-sample: runs the latency sampler by hand (benchmarks, checks).
//   fsaudit-latency-sample --dir DIR [--samples N] [--size 64MiB] [--mode io_uring_fsync|o_dsync] [--keep]
//                          [--one-per-call [--child]]
//   fsaudit-latency-sample --dir DIR --remove
//   fsaudit-latency-sample --dir DIR --stream [--stream-size 256MiB] [--duration 30s]
// DIR is the directory the sampler owns (e.g. /mnt/x/.fsaudit); the probe file is DIR/latency.probe.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "daemon/core/units.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/latency/probe.hpp"
#include "probes/latency/sampler_child.hpp"
#include "probes/latency/stream.hpp"

using namespace fsaudit;

namespace {
// This process and its reaped children (--child: the sampler process, reaped before the second reading).
double cpu_seconds() {
  double t = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    ::getrusage(who, &u);
    t += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return t;
}
int usage(const char* why) {
  std::fprintf(stderr,
               "fsaudit-latency-sample: %s\nusage: fsaudit-latency-sample --dir DIR [--samples N] [--size 64MiB] "
               "[--mode io_uring_fsync|o_dsync] [--keep] [--one-per-call [--child]] | --dir DIR --remove | --dir DIR --stream "
               "[--stream-size 256MiB] [--duration 30s]\n",
               why);
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  std::string dir, mode = "io_uring_fsync", size = "64MiB", stream_size = "256MiB", duration = "30s";
  long samples = 1000;
  // --one-per-call: N sampler calls of one sample each, as the daemon makes them (statvfs, open,
  // writer, one write+fsync); --child: those calls through a sampler child process, as the daemon does.
  bool keep = false, remove = false, stream = false, one_per_call = false, child = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--dir") dir = next();
    else if (a == "--samples") samples = std::strtol(next().c_str(), nullptr, 10);
    else if (a == "--size") size = next();
    else if (a == "--mode") mode = next();
    else if (a == "--keep") keep = true;
    else if (a == "--remove") remove = true;
    else if (a == "--stream") stream = true;
    else if (a == "--one-per-call") one_per_call = true;
    else if (a == "--child") child = true;
    else if (a == "--stream-size") stream_size = next();
    else if (a == "--duration") duration = next();
    else return usage(("unknown argument " + a).c_str());
  }
  if (dir.empty() || dir[0] != '/') return usage("--dir needs an absolute path");
  std::filesystem::path d = dir;
  while (d.has_filename() == false && d.has_parent_path() && d != "/") d = d.parent_path();
  if (remove) {
    auto gone = latency::ProbeFile::remove(d);
    if (!gone) {
      std::fprintf(stderr, "%s\n", gone.error().c_str());
      return 1;
    }
    std::printf("removed %s\n", latency::ProbeFile::path_in(d).c_str());
    return 0;
  }
  auto sz = parse_size(size);
  if (!sz || *sz % latency::kBlock) return usage("--size must be a multiple of 4KiB such as 64MiB");
  if (samples < 1 || samples > 10'000'000) return usage("--samples must be 1..10000000");
  if (!latency::parse_mode(mode)) return usage("--mode must be io_uring_fsync or o_dsync");

  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  const Clock& clock = SystemClock::instance();
  ProbeContext ctx{host, runner, clock, tools, "/tmp", {}, clock.now() + std::chrono::hours(24)};

  if (stream) {
    config::LatencyConfig c;
    c.probe_file_size = *sz;
    c.mode = mode;
    c.dir_name = d.filename().string();
    c.stream.enabled = true;
    auto ss = parse_size(stream_size);
    auto du = parse_duration(duration);
    if (!ss || !du) return usage("bad --stream-size or --duration");
    c.stream.size = *ss;
    c.stream.duration = *du;
    c.stream.targets = {d.parent_path().string()};
    latency::StreamProbe p(c, "/tmp");
    auto r = p.run_once(d.parent_path().string(), ctx);
    if (!keep) (void)latency::ProbeFile::remove(d);  // a measurement tool's cleanup
    std::printf("state=%s reason=\"%s\" idle_samples=%zu load_samples=%zu idle_p99_ms=%.3f load_p99_ms=%.3f "
                "load_max_ms=%.3f ratio=%.2f streamed_mib=%.1f stream_seconds=%.1f\n",
                std::string(latency::state_name(r.state)).c_str(), r.reason.c_str(), r.summary.idle_samples,
                r.summary.load_samples, r.summary.idle_p99_ns / 1e6, r.summary.load_p99_ns / 1e6,
                r.summary.load_max_ns / 1e6, r.summary.ratio, r.bytes / 1048576.0, r.stream_seconds);
    return r.state == latency::State::ok ? 0 : 1;
  }

  latency::SamplerSettings s;
  s.samples = static_cast<int>(samples);
  s.file_size = *sz;
  s.mode = *latency::parse_mode(mode);
  s.fill_threshold = 1.0;
  s.dir_name = d.filename().string();
  double cpu0 = cpu_seconds();
  auto t0 = latency::mono_ns();
  latency::SampleResult r;
  if (!one_per_call) {
    r = latency::sample_stack(d.parent_path(), d, s, t0, [] { return true; });
  } else {
    auto children = child ? std::make_unique<latency::SamplerChildren>() : nullptr;
    auto one = s;
    one.samples = 1;
    for (long i = 0; i < samples && r.state == latency::State::ok; ++i) {
      auto x = children ? children->sample(d.parent_path(), d, one, t0 + i, std::chrono::hours(1))
                        : latency::sample_stack(d.parent_path(), d, one, t0 + i, [] { return true; });
      r.state = x.state;
      r.reason = x.reason;
      r.mode = x.mode;
      r.fsync_ns.insert(r.fsync_ns.end(), x.fsync_ns.begin(), x.fsync_ns.end());
    }
    children.reset();  // its idle child ends and is reaped: its CPU time counts below
  }
  auto t1 = latency::mono_ns();
  double cpu = cpu_seconds() - cpu0;
  if (!keep) (void)latency::ProbeFile::remove(d);  // a measurement tool's cleanup
  auto sorted = r.fsync_ns;
  std::sort(sorted.begin(), sorted.end());
  double n = static_cast<double>(sorted.size());
  auto q = [&](std::uint32_t ppm) {
    auto v = latency::nearest_rank(sorted, ppm);
    return v ? static_cast<double>(*v) / 1e6 : 0.0;
  };
  auto state = r.state;
  const std::string& why = r.reason;
  std::printf("state=%s mode=%s samples=%.0f p50_ms=%.4f p99_ms=%.4f p999_ms=%.4f max_ms=%.4f wall_s=%.2f cpu_s=%.4f "
              "cpu_ms_per_1000=%.2f%s%s\n",
              std::string(latency::state_name(state)).c_str(), r.mode.c_str(), n, q(500'000), q(990'000), q(999'000),
              sorted.empty() ? 0.0 : static_cast<double>(sorted.back()) / 1e6, (t1 - t0) / 1e9, cpu,
              n > 0 ? cpu / n * 1e6 : 0.0, why.empty() ? "" : " note=", why.c_str());
  return state == latency::State::ok ? 0 : 1;
}
