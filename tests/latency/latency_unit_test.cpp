// Pure logic of the latency sampler: histogram buckets, nearest-rank quantiles, the rolling window
// with a fake clock, the I/O budget, the streaming-test summary and schedule, and the config section.
#include <gtest/gtest.h>

#include <cmath>

#include "daemon/config/config.hpp"
#include "probes/latency/latency_probe.hpp"
#include "probes/latency/stats.hpp"
#include "probes/latency/stream.hpp"
#include "tests/support/support.hpp"

#include <thread>

#include "daemon/runner/runner.hpp"

using namespace fsaudit;
using namespace fsaudit::latency;
using namespace std::chrono_literals;

namespace {
constexpr std::uint64_t us = 1'000, ms = 1'000'000, s = 1'000'000'000;

// Index of a bound in seconds within bounds_seconds().
std::size_t bound_index(double seconds) {
  auto b = Histogram::bounds_seconds();
  for (std::size_t i = 0; i < b.size(); ++i)
    if (std::abs(b[i] - seconds) < 1e-12) return i;
  ADD_FAILURE() << "no bound " << seconds;
  return 0;
}
}  // namespace

TEST(LatencyHistogram, BoundsAreLogSpaced50usTo30s) {
  auto b = Histogram::bounds_seconds();
  ASSERT_EQ(b.size(), 19u);
  EXPECT_DOUBLE_EQ(b.front(), 50e-6);
  EXPECT_DOUBLE_EQ(b.back(), 30.0);
  for (std::size_t i = 1; i < b.size(); ++i) {
    EXPECT_GT(b[i], b[i - 1]);
    EXPECT_LE(b[i] / b[i - 1], 2.5 + 1e-9) << "at " << b[i];  // 1-2-5 series: ratios 2, 2.5, 2 (1.5 at the top)
  }
}

TEST(LatencyHistogram, EmptyHasZeroCountsAndSum) {
  Histogram h;
  auto c = h.cumulative();
  ASSERT_EQ(c.size(), 20u);
  for (auto v : c) EXPECT_EQ(v, 0u);
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.sum_seconds(), 0.0);
}

TEST(LatencyHistogram, ExactBucketCountsCumulativeAndSum) {
  Histogram h;
  h.observe(10 * us);       // <= 50us
  h.observe(50 * us);       // exactly a bound: goes into le=50us
  h.observe(50 * us + 1);   // just above: le=100us
  h.observe(700 * us);      // le=1ms
  h.observe(1 * ms);        // le=1ms
  h.observe(3 * ms);        // le=5ms
  h.observe(29 * s);        // le=30s
  h.observe(45 * s);        // only +Inf
  auto c = h.cumulative();
  ASSERT_EQ(c.size(), 20u);
  EXPECT_EQ(c[bound_index(50e-6)], 2u);
  EXPECT_EQ(c[bound_index(100e-6)], 3u);
  EXPECT_EQ(c[bound_index(500e-6)], 3u);
  EXPECT_EQ(c[bound_index(1e-3)], 5u);
  EXPECT_EQ(c[bound_index(2e-3)], 5u);
  EXPECT_EQ(c[bound_index(5e-3)], 6u);
  EXPECT_EQ(c[bound_index(20.0)], 6u);
  EXPECT_EQ(c[bound_index(30.0)], 7u);
  EXPECT_EQ(c.back(), 8u);  // +Inf == count
  EXPECT_EQ(h.count(), 8u);
  EXPECT_EQ(h.sum_ns(), 10 * us + 50 * us + 50 * us + 1 + 700 * us + 1 * ms + 3 * ms + 29 * s + 45 * s);
  EXPECT_EQ(h.max_ns(), 45 * s);
}

TEST(NearestRank, DefinitionOnSmallInputs) {
  EXPECT_FALSE(nearest_rank({}, 500'000).has_value());
  EXPECT_EQ(*nearest_rank({7}, 500'000), 7u);
  EXPECT_EQ(*nearest_rank({7}, 999'000), 7u);
  std::vector<std::uint64_t> v{1, 2, 3, 4};
  EXPECT_EQ(*nearest_rank(v, 500'000), 2u);  // ceil(0.5*4) = 2
  EXPECT_EQ(*nearest_rank(v, 500'001), 3u);
  EXPECT_EQ(*nearest_rank(v, 990'000), 4u);  // ceil(3.96) = 4
  EXPECT_EQ(*nearest_rank(v, 250'000), 1u);
  EXPECT_EQ(*nearest_rank(v, 1), 1u);        // rank clamps to 1
}

TEST(NearestRank, HundredAndThousandSamples) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 1; i <= 1000; ++i) v.push_back(i);
  EXPECT_EQ(*nearest_rank(v, 500'000), 500u);
  EXPECT_EQ(*nearest_rank(v, 990'000), 990u);
  EXPECT_EQ(*nearest_rank(v, 999'000), 999u);
  v.resize(100);
  EXPECT_EQ(*nearest_rank(v, 990'000), 99u);
  EXPECT_EQ(*nearest_rank(v, 999'000), 100u);  // ceil(99.9) = 100
}

TEST(RollingWindow, EmptyWindowHasNoQuantiles) {
  FakeClock clk;
  RollingWindow w(5min);
  EXPECT_FALSE(w.quantiles(clk.now()).has_value());
  EXPECT_EQ(w.size(), 0u);
}

TEST(RollingWindow, OneSampleIsEveryQuantile) {
  FakeClock clk;
  RollingWindow w(5min);
  w.add(clk.now(), 1234);
  auto q = w.quantiles(clk.now());
  ASSERT_TRUE(q);
  EXPECT_EQ(q->p50_ns, 1234u);
  EXPECT_EQ(q->p99_ns, 1234u);
  EXPECT_EQ(q->p999_ns, 1234u);
  EXPECT_EQ(q->max_ns, 1234u);
}

TEST(RollingWindow, SamplesExpireExactlyAtWindowAge) {
  FakeClock clk;
  RollingWindow w(5min);
  w.add(clk.now(), 100);  // t0
  clk.advance(2min);
  w.add(clk.now(), 300);  // t0+2m
  clk.advance(3min - 1ns);  // t0+5m-1ns: the first is 1 ns short of the window: still in
  auto q = w.quantiles(clk.now());
  ASSERT_TRUE(q);
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(q->p50_ns, 100u);
  EXPECT_EQ(q->max_ns, 300u);
  clk.advance(1ns);  // t0+5m: exactly the window old: expired
  q = w.quantiles(clk.now());
  ASSERT_TRUE(q);
  EXPECT_EQ(w.size(), 1u);
  EXPECT_EQ(q->p50_ns, 300u);
  clk.advance(2min);  // t0+7m: all gone
  EXPECT_FALSE(w.quantiles(clk.now()).has_value());
}

TEST(RollingWindow, QuantilesOfInjectedSamples) {
  FakeClock clk;
  RollingWindow w(5min);
  // 1000 samples 1..1000 us, in a scrambled order, one per 100 ms (all inside 5 min).
  for (std::uint64_t i = 0; i < 1000; ++i) {
    w.add(clk.now(), ((i * 7919) % 1000 + 1) * us);
    clk.advance(100ms);
  }
  auto q = w.quantiles(clk.now());
  ASSERT_TRUE(q);
  EXPECT_EQ(q->p50_ns, 500 * us);
  EXPECT_EQ(q->p99_ns, 990 * us);
  EXPECT_EQ(q->p999_ns, 999 * us);
  EXPECT_EQ(q->max_ns, 1000 * us);
}

TEST(RollingWindow, CapDropsOldest) {
  FakeClock clk;
  RollingWindow w(5min, 3);
  for (std::uint64_t v : {9u, 1u, 2u, 3u}) w.add(clk.now(), v);
  auto q = w.quantiles(clk.now());
  ASSERT_TRUE(q);
  EXPECT_EQ(w.size(), 3u);
  EXPECT_EQ(q->max_ns, 3u);
}

TEST(TokenBucket, RefillsPerHourAndCaps) {
  FakeClock clk;
  TokenBucket b(3600 * 4096, clk.now());  // 4 KiB per second
  EXPECT_TRUE(b.take(clk.now(), 3600 * 4096));
  EXPECT_FALSE(b.take(clk.now(), 4096));
  clk.advance(1s);
  EXPECT_TRUE(b.take(clk.now(), 4096));
  EXPECT_FALSE(b.take(clk.now(), 4096));
  clk.advance(10h);
  EXPECT_DOUBLE_EQ(b.available(clk.now()), 3600.0 * 4096);  // capped at one hour
  b.charge(clk.now(), 3601 * 4096);
  clk.advance(1s);
  EXPECT_FALSE(b.take(clk.now(), 4096));  // back at 0 after one second, not enough
  clk.advance(1s);
  EXPECT_TRUE(b.take(clk.now(), 4096));
}

TEST(TargetStats, EmitsHistogramWindowStateAndSkips) {
  FakeClock clk;
  TargetStats st(5min, 1 << 20, clk.now());
  st.record_fsync(clk.now(), 80 * us);
  st.record_fsync(clk.now(), 3 * ms);
  st.record_fsync(clk.now(), 400 * us);
  st.set_state(State::ok);
  st.set_state(State::read_only);
  st.set_state(State::read_only);
  st.set_state(State::no_space);
  st.mode = "io_uring_fsync";
  metrics::Batch b;
  st.emit(b, "/mnt/x", clk.now(), false);
  metrics::Labels t{{"target", "/mnt/x"}};
  EXPECT_EQ(b.value("fsaudit_fsync_latency_seconds", t), 3.0);  // histogram count
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", {{"target", "/mnt/x"}, {"quantile", "0.5"}}), 400e-6);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", {{"target", "/mnt/x"}, {"quantile", "0.99"}}), 3e-3);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", {{"target", "/mnt/x"}, {"quantile", "0.999"}}), 3e-3);
  EXPECT_EQ(b.value("fsaudit_fsync_latency_window_samples", t), 3.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", {{"target", "/mnt/x"}, {"state", "no_space"}}), 1.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", {{"target", "/mnt/x"}, {"state", "ok"}}), 0.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", {{"target", "/mnt/x"}, {"reason", "read_only"}}), 2.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", {{"target", "/mnt/x"}, {"reason", "no_space"}}), 1.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", {{"target", "/mnt/x"}, {"reason", "io_error"}}), 0.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_info", {{"target", "/mnt/x"}, {"mode", "io_uring_fsync"}}), 1.0);
  EXPECT_FALSE(b.has("fsaudit_direct_read_latency_seconds"));

  // Exact cumulative buckets as exported.
  const prometheus::ClientMetric* m = nullptr;
  for (const auto& f : b.families())
    if (f.name == "fsaudit_fsync_latency_seconds") m = &f.metric.at(0);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->histogram.bucket.size(), 20u);
  EXPECT_EQ(m->histogram.bucket[bound_index(50e-6)].cumulative_count, 0u);
  EXPECT_EQ(m->histogram.bucket[bound_index(100e-6)].cumulative_count, 1u);
  EXPECT_EQ(m->histogram.bucket[bound_index(500e-6)].cumulative_count, 2u);
  EXPECT_EQ(m->histogram.bucket[bound_index(5e-3)].cumulative_count, 3u);
  EXPECT_TRUE(std::isinf(m->histogram.bucket.back().upper_bound));
  EXPECT_DOUBLE_EQ(m->histogram.sample_sum, (80 * us + 3 * ms + 400 * us) / 1e9);

  // After the window passes, the quantile gauges disappear but the histogram keeps its counts.
  clk.advance(5min);
  metrics::Batch b2;
  st.emit(b2, "/mnt/x", clk.now(), false);
  EXPECT_FALSE(b2.has("fsaudit_fsync_latency_window_seconds"));
  EXPECT_EQ(b2.value("fsaudit_fsync_latency_window_samples", t), 0.0);
  EXPECT_EQ(b2.value("fsaudit_fsync_latency_seconds", t), 3.0);
}

TEST(ErrnoClassification, SkipReasons) {
  EXPECT_EQ(classify_errno(EROFS), State::read_only);
  EXPECT_EQ(classify_errno(ENOSPC), State::no_space);
  EXPECT_EQ(classify_errno(EDQUOT), State::no_space);
  EXPECT_EQ(classify_errno(EIO), State::io_error);
  EXPECT_EQ(classify_errno(EACCES), State::error);
}

TEST(SamplerApplies, OnlyLocalWritableKinds) {
  Target t{"/srv", "/srv", "ext4", "/dev/sda1", "rw", "rw", 8, 1};
  EXPECT_TRUE(sampler_applies(t));
  t.fstype = "zfs";
  EXPECT_TRUE(sampler_applies(t));
  for (const char* f : {"tmpfs", "proc", "nfs4", "squashfs", "iso9660", "fuse.sshfs", "erofs"}) {
    t.fstype = f;
    EXPECT_FALSE(sampler_applies(t)) << f;
  }
  EXPECT_FALSE(sampler_applies(Target::host()));
}

TEST(StreamSummary, P99MaxAndRatio) {
  std::vector<std::uint64_t> idle, load;
  for (std::uint64_t i = 1; i <= 100; ++i) idle.push_back(i * us);        // p99 = 99 us
  for (std::uint64_t i = 1; i <= 50; ++i) load.push_back(i * 10 * ms);    // p99 = ceil(49.5)=50th = 500 ms
  std::reverse(load.begin(), load.end());
  auto s = summarize_stream(idle, load);
  EXPECT_EQ(s.idle_samples, 100u);
  EXPECT_EQ(s.load_samples, 50u);
  EXPECT_EQ(s.idle_p99_ns, 99 * us);
  EXPECT_EQ(s.idle_max_ns, 100 * us);
  EXPECT_EQ(s.load_p99_ns, 500 * ms);
  EXPECT_EQ(s.load_max_ns, 500 * ms);
  EXPECT_DOUBLE_EQ(s.ratio, 500e6 / 99e3);
  auto e = summarize_stream({}, load);
  EXPECT_EQ(e.ratio, 0.0);
}

TEST(StreamSchedule, WindowAndInterval) {
  auto w = CalendarWindow::parse("Sat 01:00-06:00");
  ASSERT_TRUE(w);
  // 2023-11-18 is a Saturday. 02:00 UTC inside, 07:00 outside.
  WallTime sat2 = WallTime(std::chrono::seconds(1700272800));
  WallTime sat7 = sat2 + 5h;
  EXPECT_TRUE(stream_due(*w, 24h, sat2, std::nullopt, 0));
  EXPECT_FALSE(stream_due(*w, 24h, sat7, std::nullopt, 0));
  EXPECT_FALSE(stream_due(*w, 24h, sat2 + 1h, sat2, 0));  // ran an hour ago
  EXPECT_TRUE(stream_due(*w, 24h, sat2 + 7 * 24h, sat2, 0));  // next Saturday
  auto always = CalendarWindow::parse("*");
  EXPECT_TRUE(stream_due(*always, 1h, sat7, sat7 - 1h, 0));
  EXPECT_TRUE(stream_due(*always, 1h, sat7, sat7 - 54min, 0));   // 90% of the interval: the scheduler's own spacing
  EXPECT_FALSE(stream_due(*always, 1h, sat7, sat7 - 53min, 0));  // well inside: a restart, not due
}

TEST(StreamState, RoundTrip) {
  std::map<std::string, double> m{{"/srv/scratch", 1700000000.5}, {"/mnt/canary a", 1.0}};
  EXPECT_EQ(parse_stream_state(format_stream_state(m)), m);
  EXPECT_TRUE(parse_stream_state("garbage\n\n").empty());
}

TEST(LatencyConfig, Defaults) {
  auto c = config::parse_config("{}", "t.yaml").latency;
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.samples_per_run, 4);
  EXPECT_EQ(c.interval, std::chrono::milliseconds(1s));
  EXPECT_EQ(c.timeout, std::chrono::milliseconds(20s));
  EXPECT_EQ(c.probe_file_size, 64ull << 20);
  EXPECT_EQ(c.mode, "io_uring_fsync");
  EXPECT_FALSE(c.direct_reads);
  EXPECT_EQ(c.window, std::chrono::milliseconds(5min));
  EXPECT_DOUBLE_EQ(c.fill_threshold, 0.95);
  EXPECT_FALSE(c.stream.enabled);
  EXPECT_EQ(c.stream.sample_period, std::chrono::milliseconds(200));
  EXPECT_TRUE(c.stream.window.always);
}

TEST(LatencyConfig, FullSection) {
  auto c = config::parse_config(R"(
latency:
  samples_per_run: 8
  interval: 500ms
  timeout: 30s
  probe_file_size: 16MiB
  mode: o_dsync
  direct_reads: true
  window: 10m
  io_budget_per_hour: 1GiB
  fill_threshold: 0.9
  extra_paths: [/srv/scratch/]
  stream:
    enabled: true
    targets: [/mnt/canary]
    size: 1GiB
    duration: 1m
    sample_period: 100ms
    window: "Sat 01:00-06:00"
    interval: 7d
)", "t.yaml").latency;
  EXPECT_EQ(c.samples_per_run, 8);
  EXPECT_EQ(c.interval, std::chrono::milliseconds(500));
  EXPECT_EQ(c.timeout, std::chrono::milliseconds(30s));
  EXPECT_EQ(c.probe_file_size, 16ull << 20);
  EXPECT_EQ(c.mode, "o_dsync");
  EXPECT_TRUE(c.direct_reads);
  EXPECT_EQ(c.window, std::chrono::milliseconds(10min));
  EXPECT_EQ(c.io_budget_per_hour, 1ull << 30);
  EXPECT_DOUBLE_EQ(c.fill_threshold, 0.9);
  EXPECT_EQ(c.extra_paths, std::vector<std::string>{"/srv/scratch"});
  EXPECT_TRUE(c.stream.enabled);
  EXPECT_EQ(c.stream.targets, std::vector<std::string>{"/mnt/canary"});
  EXPECT_EQ(c.stream.size, 1ull << 30);
  EXPECT_EQ(c.stream.duration, std::chrono::milliseconds(1min));
  EXPECT_EQ(c.stream.sample_period, std::chrono::milliseconds(100));
  EXPECT_FALSE(c.stream.window.always);
  EXPECT_EQ(c.stream.interval, std::chrono::milliseconds(std::chrono::hours(24 * 7)));
}

TEST(LatencySchedules, FromConfig) {
  auto cfg = config::parse_config(R"(
latency:
  interval: 2s
  timeout: 15s
  extra_paths: [/srv/scratch]
  stream:
    enabled: true
    targets: [/mnt/canary, /srv/scratch]
    duration: 1m
    sample_period: 200ms
    idle_samples: 10
    window: "Sat 01:00-06:00"
    interval: 7d
)", "t.yaml");
  auto probes = make_latency_probes(cfg);
  ASSERT_EQ(probes.size(), 3u);
  EXPECT_EQ(probes[0]->name(), "latency");
  EXPECT_EQ(probes[0]->scope(), Scope::per_target);
  auto s0 = probes[0]->own_schedule();
  ASSERT_TRUE(s0);
  EXPECT_EQ(s0->interval, std::chrono::milliseconds(2s));
  EXPECT_EQ(s0->timeout, std::chrono::milliseconds(15s));
  EXPECT_FALSE(s0->window);
  EXPECT_EQ(probes[1]->name(), "latency_paths");
  EXPECT_EQ(probes[1]->scope(), Scope::host);
  EXPECT_EQ(probes[2]->name(), "latency_stream");
  auto s2 = probes[2]->own_schedule();
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->interval, std::chrono::milliseconds(std::chrono::hours(24 * 7)));
  ASSERT_TRUE(s2->window);
  EXPECT_EQ(s2->window->text, "Sat 01:00-06:00");
  EXPECT_EQ(s2->timeout, std::chrono::milliseconds(2 * (60s + 10 * 200ms + 30s)));  // two targets

  auto off = make_latency_probes(config::parse_config("latency: {enabled: false}", "t.yaml"));
  ASSERT_EQ(off.size(), 1u);
  EXPECT_EQ(off[0]->name(), "latency");  // the cleanup probe: removes old probe files
  EXPECT_TRUE(off[0]->own_schedule().has_value());
}

TEST(LatencyConfig, Errors) {
  auto msg = [](const std::string& y) {
    try {
      config::parse_config(y, "t.yaml");
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(msg("latency: {mode: fsync}").find("latency.mode"), std::string::npos) << msg("latency: {mode: fsync}");
  EXPECT_NE(msg("latency: {probe_file_size: 10000000}").find("multiple of 4KiB"), std::string::npos);
  EXPECT_NE(msg("latency: {probe_file_size: 2GiB}").find("out of range"), std::string::npos);
  EXPECT_NE(msg("latency: {extra_paths: [relative/dir]}").find("absolute"), std::string::npos);
  EXPECT_NE(msg("latency: {stream: {enabled: true}}").find("names no directory"), std::string::npos);
  EXPECT_NE(msg("latency: {stream: {targets: [/x], window: \"Someday 9-5\"}}").find("latency.stream.window"),
            std::string::npos);
  EXPECT_NE(msg("latency: {windw: 5m}").find("window"), std::string::npos);  // did you mean
  EXPECT_NE(msg("latency: {fill_threshold: 1.5}").find("out of range"), std::string::npos);
}

// Different targets of one probe may run concurrently: each keeps its own histogram and window.
// (Real but tiny I/O in a temp dir; no privileges needed.)
TEST(Sampler, ConcurrentTargetsKeepSeparateState) {
  fsaudit::testing::TempDir a("fsaudit-latency-a"), b("fsaudit-latency-b");
  SamplerSettings s;
  s.samples = 2;
  s.file_size = 1 << 20;
  s.fill_threshold = 1.0;
  Sampler sampler(s);
  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  auto work = [&](const fsaudit::testing::TempDir& d, const std::string& label, metrics::Batch* last) {
    for (int i = 0; i < 3; ++i) {
      ProbeContext ctx{host, runner, SystemClock::instance(), tools, "/tmp", {}, SystemClock::instance().now() + 1min};
      metrics::Batch out;
      std::string why;
      auto st = sampler.sample(label, d.path(), d.path() / ".fsaudit", ctx, out, &why);
      EXPECT_EQ(st, State::ok) << why;
      *last = out;
    }
  };
  metrics::Batch la, lb;
  std::thread ta(work, std::cref(a), "A", &la), tb(work, std::cref(b), "B", &lb);
  ta.join();
  tb.join();
  EXPECT_EQ(la.value("fsaudit_fsync_latency_seconds", {{"target", "A"}}), 6.0);
  EXPECT_EQ(lb.value("fsaudit_fsync_latency_seconds", {{"target", "B"}}), 6.0);
  EXPECT_FALSE(la.has("fsaudit_fsync_latency_seconds", {{"target", "B"}}));
  EXPECT_EQ(la.value("fsaudit_fsync_latency_window_samples", {{"target", "A"}}), 6.0);
  EXPECT_TRUE(std::filesystem::exists(a / ".fsaudit/latency.probe"));
  EXPECT_EQ(std::filesystem::file_size(a / ".fsaudit/latency.probe"), 1u << 20);
  EXPECT_EQ(ProbeFile::remove(a / ".fsaudit"), "");
  EXPECT_EQ(ProbeFile::remove(b / ".fsaudit"), "");
}
