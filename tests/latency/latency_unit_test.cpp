// Pure logic of the latency sampler: histogram buckets, nearest-rank quantiles, the rolling window
// with a fake clock, the I/O budget, the streaming-test summary and schedule, and the config section.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "daemon/config/config.hpp"
#include "probes/latency/probe.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/latency/budget.hpp"
#include "probes/latency/sampler_child.hpp"
#include "probes/latency/stacks.hpp"
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

// The per-stack labels of the StackStats tests, with one more.
const metrics::Labels kTank{{"stack", "zfs:tank"}, {"target", "/tank"}};
metrics::Labels tank_with(const std::string& k, const std::string& v) {
  auto x = kTank;
  x[k] = v;
  return x;
}

// Three 4 KiB samples: 80 us, 3 ms, 400 us.
void record_three(StackStats& st, SteadyTime now) {
  SampleResult r;
  r.fsync_ns = {80 * us, 3 * ms, 400 * us};
  r.bytes = 3 * 4096;
  r.mode = "io_uring_fsync";
  st.record(now, r);
}

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

// Thousands of stacks each get a turn every hour or two: between turns their windows are empty and
// must not keep the room of their last burst.
TEST(RollingWindow, AnEmptiedWindowKeepsNoStorage) {
  FakeClock clk;
  RollingWindow w(5min);
  for (int i = 0; i < 5; ++i) w.add(clk.now(), 100 + i);
  EXPECT_GT(w.storage_bytes(), 0u);
  clk.advance(4min);
  EXPECT_EQ(w.size(clk.now()), 5u);
  clk.advance(1min);
  EXPECT_EQ(w.size(clk.now()), 0u);
  EXPECT_EQ(w.storage_bytes(), 0u);
  w.add(clk.now(), 7);
  EXPECT_EQ(w.quantiles(clk.now())->max_ns, 7u);
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

// A sliding window over many expiries (the storage compacts as samples leave): always the last 5 s.
TEST(RollingWindow, SlidesOverManyExpiriesInOrder) {
  FakeClock clk;
  RollingWindow w(5s);
  for (std::uint64_t i = 0; i < 40; ++i) {
    w.add(clk.now(), i + 1);
    auto q = w.quantiles(clk.now());
    ASSERT_TRUE(q);
    const std::uint64_t n = std::min<std::uint64_t>(i + 1, 5);
    EXPECT_EQ(w.size(), n) << i;
    EXPECT_EQ(q->max_ns, i + 1) << i;
    EXPECT_EQ(q->p50_ns, i + 1 - n + (n + 1) / 2) << i;  // nearest rank ceil(n/2) of the last n values
    clk.advance(1s);
  }
  EXPECT_EQ(w.size(clk.now() + 10s), 0u);
  EXPECT_FALSE(w.quantiles(clk.now() + 10s));
}

TEST(ErrnoClassification, SkipReasons) {
  EXPECT_EQ(classify_errno(EROFS), State::read_only);
  EXPECT_EQ(classify_errno(ENOSPC), State::no_space);
  EXPECT_EQ(classify_errno(EDQUOT), State::no_space);
  EXPECT_EQ(classify_errno(EIO), State::io_error);
  EXPECT_EQ(classify_errno(EACCES), State::error);
}

// The writer asked for, or pwrite+fsync and the reason it is not the one asked for.
TEST(SyncWriter, TheModeAskedForOrPwriteFsyncWithTheReason) {
  fsaudit::testing::TempDir d("fsaudit-latency-writer");
  ProbeFile file;
  std::uint64_t filled = 0;
  auto failed = file.open(d / "probe", 64 << 10, 0, &filled);
  ASSERT_FALSE(failed) << failed->message;
  auto dsync = make_writer(Mode::o_dsync, file);
  ASSERT_TRUE(dsync.writer);
  EXPECT_EQ(dsync.writer->mode(), "o_dsync");
  EXPECT_EQ(dsync.note, "");
  EXPECT_EQ(dsync.writer->write_sync(0), 0);
  // The file unlinked under its open descriptor: no second descriptor with O_DSYNC, so pwrite+fsync
  // on the one there is.
  std::filesystem::remove(file.path());
  auto fallback = make_writer(Mode::o_dsync, file);
  ASSERT_TRUE(fallback.writer);
  EXPECT_EQ(fallback.writer->mode(), "pwrite_fsync");
  EXPECT_EQ(fallback.note, "open O_DSYNC failed (No such file or directory); using pwrite+fsync");
  EXPECT_EQ(fallback.writer->write_sync(kBlock), 0);
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
  EXPECT_TRUE(c.discover);
  EXPECT_TRUE(c.targets.empty());
  EXPECT_TRUE(c.exclude.empty());
  EXPECT_EQ(c.samples_per_run, 1);
  EXPECT_EQ(c.interval, std::chrono::milliseconds(1s));
  EXPECT_EQ(c.timeout, std::chrono::milliseconds(20s));
  EXPECT_EQ(c.probe_file_size, 1ull << 20);
  EXPECT_DOUBLE_EQ(c.budget.stack_writes_per_second, 1.0);
  EXPECT_DOUBLE_EQ(c.budget.writes_per_second, 5.0);
  EXPECT_EQ(c.budget.bytes_per_second, 1ull << 20);
  EXPECT_EQ(c.mode, "io_uring_fsync");
  EXPECT_FALSE(c.direct_reads);
  EXPECT_EQ(c.window, std::chrono::milliseconds(5min));
  EXPECT_DOUBLE_EQ(c.fill_threshold, 0.95);
  EXPECT_EQ(c.parallel, 2);
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
  budget: {stack_writes_per_second: 0.5, writes_per_second: 4, bytes_per_second: 256KiB}
  fill_threshold: 0.9
  parallel: 4
  discover: false
  targets: [/srv/scratch/]
  exclude: ["/tank/*"]
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
  EXPECT_DOUBLE_EQ(c.budget.stack_writes_per_second, 0.5);
  EXPECT_DOUBLE_EQ(c.budget.writes_per_second, 4.0);
  EXPECT_EQ(c.budget.bytes_per_second, 256ull << 10);
  EXPECT_DOUBLE_EQ(c.fill_threshold, 0.9);
  EXPECT_EQ(c.parallel, 4);
  EXPECT_EQ(SamplerSettings::from(c).parallel, 4);
  EXPECT_FALSE(c.discover);
  EXPECT_EQ(c.targets, std::vector<std::string>{"/srv/scratch"});
  EXPECT_EQ(c.exclude, std::vector<std::string>{"/tank/*"});
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
  targets: [/srv/scratch]
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
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0]->name(), "latency");
  EXPECT_EQ(probes[0]->scope(), Scope::host);  // one job; it fans out over the device stacks itself
  auto s0 = probes[0]->own_schedule();
  ASSERT_TRUE(s0);
  EXPECT_EQ(s0->interval, std::chrono::milliseconds(2s));
  EXPECT_EQ(s0->timeout, std::chrono::milliseconds(15s));
  EXPECT_FALSE(s0->window);
  EXPECT_EQ(probes[1]->name(), "latency_stream");
  auto s2 = probes[1]->own_schedule();
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
  EXPECT_NE(msg("latency: {targets: [relative/dir]}").find("absolute"), std::string::npos);
  EXPECT_NE(msg("latency: {budget: {writes_per_second: 0}}").find("out of range"), std::string::npos);
  EXPECT_NE(msg("latency: {budget: {bytes_per_secnd: 1MiB}}").find("bytes_per_second"), std::string::npos);
  EXPECT_NE(msg("latency: {io_budget_per_hour: 1GiB}").find("io_budget_per_hour"), std::string::npos);
  EXPECT_NE(msg("latency: {stream: {enabled: true}}").find("names no directory"), std::string::npos);
  EXPECT_NE(msg("latency: {stream: {targets: [/x], window: \"Someday 9-5\"}}").find("latency.stream.window"),
            std::string::npos);
  EXPECT_NE(msg("latency: {windw: 5m}").find("window"), std::string::npos);  // did you mean
  EXPECT_NE(msg("latency: {fill_threshold: 1.5}").find("out of range"), std::string::npos);
  EXPECT_NE(msg("latency: {parallel: 0}").find("latency.parallel"), std::string::npos) << msg("latency: {parallel: 0}");
}


// ---- budget (fake clock) ---------------------------------------------------------------------------

TEST(RateBucket, RefillsAtRateCapsAtBurstAndCarriesDebt) {
  FakeClock clk;
  RateBucket b(2.0, 4.0, clk.now());  // 2 per second, at most 4 saved
  EXPECT_TRUE(b.take(clk.now(), 4));
  EXPECT_FALSE(b.take(clk.now(), 1));
  clk.advance(500ms);
  EXPECT_TRUE(b.take(clk.now(), 1));
  EXPECT_FALSE(b.take(clk.now(), 1));
  clk.advance(1h);
  EXPECT_DOUBLE_EQ(b.available(clk.now()), 4.0);  // capped
  b.charge(clk.now(), 10);                        // a debt of 6
  clk.advance(2s);
  EXPECT_FALSE(b.take(clk.now(), 1));  // -2
  clk.advance(1500ms);
  EXPECT_TRUE(b.take(clk.now(), 1));  // +1 -> 0
}

namespace {
SamplerSettings budget_settings(double stack_rate, double host_rate, std::uint64_t host_bytes, int samples = 1) {
  SamplerSettings s;
  s.samples = samples;
  s.stack_writes_per_second = stack_rate;
  s.writes_per_second = host_rate;
  s.bytes_per_second = host_bytes;
  return s;
}
}  // namespace

// Ten stacks, 1 write/s each allowed, 4 writes/s host-wide, ticks every 100 ms (with the scheduler's
// jitter) for 10 minutes: the host never exceeds its rate, no stack exceeds its own, and the
// budget goes round-robin.
TEST(Dispatcher, HostAndStackBudgetsHoldOverTenMinutes) {
  FakeClock clk;
  auto s = budget_settings(1.0, 4.0, 1 << 20);
  Dispatcher d(s, clk.now());
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back("block:loop" + std::to_string(i));
  std::map<std::string, int> per_stack;
  std::vector<std::pair<double, int>> per_tick;  // (seconds since start, samples)
  int total = 0, deferred_total = 0;
  for (int tick = 0; tick < 6000; ++tick) {
    clk.advance(tick % 3 == 0 ? 130ms : 85ms);
    std::vector<std::string> deferred;
    auto due = d.due(clk.now(), ids, {}, &deferred);
    deferred_total += static_cast<int>(deferred.size());
    for (const auto& id : due) per_stack[id]++;
    total += static_cast<int>(due.size());
    per_tick.emplace_back(tick, static_cast<int>(due.size()));
  }
  double seconds = (6000 / 3) * 0.130 + (6000 - 6000 / 3) * 0.085;  // 600 s
  EXPECT_LE(total, 4.0 * seconds + 4.0);  // rate x T + burst
  EXPECT_GE(total, 4.0 * seconds - 8.0);  // and the budget is used, not wasted
  for (const auto& id : ids) {
    EXPECT_LE(per_stack[id], 1.0 * seconds + 2.0) << id;
    EXPECT_NEAR(per_stack[id], total / 10.0, 2.0) << id << ": round-robin";
  }
  EXPECT_GT(deferred_total, 0);
}

// With fewer stacks than the host budget, each stack gets exactly its own rate.
TEST(Dispatcher, StackRateIsOneWritePerSecondByDefault) {
  FakeClock clk;
  SamplerSettings s;  // defaults: 1/s per stack, 5/s host
  Dispatcher d(s, clk.now());
  std::vector<std::string> ids = {"zfs:tank", "btrfs:x"};
  int n = 0;
  for (int tick = 0; tick < 600; ++tick) {
    clk.advance(tick % 2 ? 1100ms : 900ms);  // jittered 1 s ticks
    n += static_cast<int>(d.due(clk.now(), ids, {}, nullptr).size());
  }
  EXPECT_LE(n, 2 * 600 + 4);
  EXPECT_GE(n, 2 * 600 - 4);  // a late tick catches up (burst of 2), so jitter costs no samples
}

TEST(Dispatcher, BusyStacksAreNotDispatchedAndFillsAreCharged) {
  FakeClock clk;
  auto s = budget_settings(10.0, 100.0, 64 << 10);  // bytes are the limit: 16 samples/s
  Dispatcher d(s, clk.now());
  std::vector<std::string> ids = {"a", "b"};
  auto due = d.due(clk.now(), ids, {"a"}, nullptr);
  EXPECT_EQ(due, std::vector<std::string>{"b"});
  // A 4 MiB probe file fill puts the host 64 s into debt: nothing is sampled until it is repaid.
  d.charge(clk.now(), 1, 4 << 20);
  int n = 0;
  for (int i = 0; i < 60; ++i) {
    clk.advance(1s);
    n += static_cast<int>(d.due(clk.now(), ids, {}, nullptr).size());
  }
  EXPECT_EQ(n, 0);
  clk.advance(6s);
  EXPECT_FALSE(d.due(clk.now(), ids, {}, nullptr).empty());
}

TEST(Dispatcher, SamplesPerRunNeedWholeTurns) {
  FakeClock clk;
  auto s = budget_settings(1.0, 100.0, 1 << 20, 4);  // 4 samples per turn at 1/s: one turn per 4 s
  Dispatcher d(s, clk.now());
  int turns = 0;
  for (int i = 0; i < 400; ++i) {
    clk.advance(1s);
    turns += static_cast<int>(d.due(clk.now(), {"x"}, {}, nullptr).size());
  }
  EXPECT_GE(turns, 99);
  EXPECT_LE(turns, 102);
}

// ---- stack grouping from a host tree ---------------------------------------------------------------

namespace {
HostPaths stacks_host() {
  return HostPaths::under(std::filesystem::path(FSAUDIT_SOURCE_DIR) / "tests/fixtures/latency/stacks");
}

struct Grouped {
  std::vector<MountEntry> mounts;
  std::vector<Target> watched;
};

// Every mount the sampler may write to is watched (as if discovery and `targets.fstypes` took them all).
Grouped fixture_mounts() {
  Grouped g;
  auto text = read_file(stacks_host().proc("self/mountinfo"));
  EXPECT_TRUE(text) << text.error();
  auto m = parse_mountinfo(*text);
  EXPECT_TRUE(m) << m.error();
  g.mounts = *m;
  for (const auto& e : g.mounts) {
    Target t{e.mountpoint, e.mountpoint, e.fstype, e.source, e.mount_options, e.super_options, e.major, e.minor};
    if (sampler_applies(t)) g.watched.push_back(t);
  }
  return g;
}

const StackPlan* find_plan(const std::vector<StackPlan>& v, const std::string& id) {
  for (const auto& p : v)
    if (p.id == id) return &p;
  return nullptr;
}

constexpr const char* kBtrfsA = "btrfs:1c2d3e4f-0000-4000-8000-00000000000a";
constexpr const char* kBtrfsB = "btrfs:9f8e7d6c-0000-4000-8000-00000000000b";
}  // namespace

TEST(Stacks, IdsFromMountSourceAndSysfs) {
  auto g = fixture_mounts();
  auto host = stacks_host();
  std::map<std::string, std::string> id;
  for (const auto& m : g.mounts) id[m.mountpoint] = stack_id(m, host);
  EXPECT_EQ(id["/"], "block:sda2");
  EXPECT_EQ(id["/tank"], "zfs:tank");
  EXPECT_EQ(id["/tank/home/alice"], "zfs:tank");
  EXPECT_EQ(id["/srv/db"], "zfs:tank");
  EXPECT_EQ(id["/backup/old"], "zfs:backup");
  EXPECT_EQ(id["/data"], kBtrfsA);
  EXPECT_EQ(id["/home"], kBtrfsA);
  EXPECT_EQ(id["/var/lib"], kBtrfsA);  // mounted through the other member device, sdc
  EXPECT_EQ(id["/mnt/snap"], kBtrfsB);  // /dev/mapper/crypt-b -> dm-2
  EXPECT_EQ(id["/raid"], "md:md0");
  EXPECT_EQ(id["/export/raid"], "md:md0");
  EXPECT_EQ(id["/mnt/loop three"], "block:loop3");
  EXPECT_EQ(id["/mnt/loop4"], "block:loop4");
  EXPECT_EQ(id["/mnt/fusezfs"], "zfs:pool2");
  EXPECT_EQ(id["/mnt/bcache"], "dev:0:90");
}

TEST(Stacks, OneSamplerPerStackWithItsProbeFileNearTheRoot) {
  auto g = fixture_mounts();
  std::vector<std::string> warnings;
  auto plans = plan_stacks(g.mounts, g.watched, StackSelection{}, stacks_host(), &warnings);
  EXPECT_TRUE(warnings.empty());
  std::vector<std::string> ids;
  for (const auto& p : plans) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"block:loop3", "block:loop4", "block:sda2", kBtrfsA, kBtrfsB, "dev:0:90",
                                           "md:md0", "zfs:backup", "zfs:pool2", "zfs:tank"}));
  for (const auto& p : plans) EXPECT_TRUE(p.sampled) << p.id << ": " << p.why;
  auto tank = find_plan(plans, "zfs:tank");
  ASSERT_TRUE(tank);
  EXPECT_EQ(tank->target, "/tank");  // the pool's root dataset
  EXPECT_EQ(tank->dir(".fsaudit"), "/tank/.fsaudit");
  EXPECT_EQ(tank->mountpoint(), "/tank");
  EXPECT_EQ(tank->fs, "zfs");
  EXPECT_EQ(tank->targets, (std::vector<std::string>{"/tank", "/tank/home", "/tank/home/alice", "/srv/db"}));
  // Probe files on the other mounts of the stack (an older fsaudit wrote one per mount) go away.
  EXPECT_EQ(tank->other_dirs, (std::vector<std::string>{"/tank/home/.fsaudit", "/tank/home/alice/.fsaudit",
                                                                  "/srv/db/.fsaudit"}));
  EXPECT_EQ(find_plan(plans, "zfs:backup")->target, "/backup");  // root dataset not mounted: the shallowest
  EXPECT_EQ(find_plan(plans, "zfs:pool2")->target, "/mnt/fusezfs2");
  EXPECT_EQ(find_plan(plans, "zfs:pool2")->fs, "fuse.zfs");
  auto a = find_plan(plans, kBtrfsA);
  EXPECT_EQ(a->target, "/data");  // the top-level subvolume, not /home (@home) or /var/lib (@var)
  EXPECT_EQ(a->targets.size(), 3u);
  EXPECT_EQ(find_plan(plans, kBtrfsB)->target, "/mnt/snap");  // only a subvolume is mounted
  EXPECT_EQ(find_plan(plans, "md:md0")->target, "/raid");      // not the bind mount of /exports
  auto loop3 = find_plan(plans, "block:loop3");
  EXPECT_EQ(loop3->dir(".fsaudit"), "/mnt/loop three/.fsaudit");
  // A stack with one watched target keeps no second copy of its path, and still lists that target.
  EXPECT_TRUE(loop3->targets.empty());
  EXPECT_TRUE(loop3->mount.empty());
  EXPECT_EQ(loop3->mountpoint(), "/mnt/loop three");
  std::vector<std::string> listed;
  loop3->for_each_target([&](const std::string& t) { listed.push_back(t); });
  EXPECT_EQ(listed, std::vector<std::string>{"/mnt/loop three"});
  listed.clear();
  tank->for_each_target([&](const std::string& t) { listed.push_back(t); });
  EXPECT_EQ(listed, tank->targets);
}

TEST(Stacks, ExcludeMovesOrDropsTheProbeFileAndReadOnlyComesLast) {
  auto g = fixture_mounts();
  StackSelection sel;
  sel.exclude = {"/tank"};
  auto plans = plan_stacks(g.mounts, g.watched, sel, stacks_host());
  // tank/home and tank/db are both one level deep: the shorter mount point wins.
  EXPECT_EQ(find_plan(plans, "zfs:tank")->target, "/srv/db");
  sel.exclude = {"/tank*", "/srv/*", "/backup"};
  plans = plan_stacks(g.mounts, g.watched, sel, stacks_host());
  EXPECT_FALSE(find_plan(plans, "zfs:tank")->sampled);
  EXPECT_NE(find_plan(plans, "zfs:tank")->why.find("latency.exclude"), std::string::npos);
  EXPECT_EQ(find_plan(plans, "zfs:tank")->targets.size(), 4u);  // still mapped for the info series
  // Only a read-only dataset is left: it is sampled, and the sampler reports read_only.
  EXPECT_EQ(find_plan(plans, "zfs:backup")->target, "/backup/old");
}

TEST(Stacks, OptInPathsPlaceTheProbeFileAndOneStackStaysOneSampler) {
  auto g = fixture_mounts();
  StackSelection sel;
  sel.discover = false;
  sel.opt_in = {"/home/shared", "/var/lib/scratch", "/nowhere/at/all"};
  std::vector<std::string> warnings;
  // /nowhere/at/all is inside the root filesystem: its stack is sampled there.
  auto plans = plan_stacks(g.mounts, g.watched, sel, stacks_host(), &warnings);
  int sampled = 0;
  for (const auto& p : plans) sampled += p.sampled ? 1 : 0;
  EXPECT_EQ(sampled, 2);  // btrfs A (two paths, one sampler) and / (block:sda2)
  auto a = find_plan(plans, kBtrfsA);
  EXPECT_TRUE(a->sampled);
  EXPECT_EQ(a->target, "/home/shared");
  EXPECT_EQ(a->dir(".fsaudit"), "/home/shared/.fsaudit");
  EXPECT_EQ(a->mountpoint(), "/home");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/var/lib/scratch"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("one sampler per stack"), std::string::npos) << warnings[0];
  EXPECT_FALSE(find_plan(plans, "zfs:tank")->sampled);
  EXPECT_NE(find_plan(plans, "zfs:tank")->why.find("discover"), std::string::npos);
}

// A LatencyProbe run on directories under a temp dir: the host's paths under it (no sysfs, so stacks
// are named by device number), a fake clock, and settings that never skip a stack for fullness.
struct TempHost {
  explicit TempHost(const std::filesystem::path& root) : root(root), host(HostPaths::under(root)) {
    settings.file_size = 1 << 20;
    settings.fill_threshold = 1.0;
  }
  ProbeContext context(std::chrono::seconds budget, MountSnapshot mounts = nullptr) {
    return ProbeContext{host, runner, clk, tools, root, {}, clk.now() + budget, std::move(mounts)};
  }
  std::filesystem::path root;
  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  FakeClock clk;
  SamplerSettings settings;
};

// Two ext4 mounts (a, b) under a temp dir, watched, and the cycle's mount snapshot that shows both
// or only a.
struct TwoMounts {
  explicit TwoMounts(const char* name) : t(name), a(t / "a"), b(t / "b") {
    for (const auto& d : {a, b}) std::filesystem::create_directories(d);
    watch.include = {a.string(), b.string()};
  }
  MountSnapshot snapshot(bool with_b) const {
    std::string text = "10 1 7:10 / " + a.string() + " rw - ext4 /dev/loop10 rw\n";
    if (with_b) text += "12 1 7:11 / " + b.string() + " rw - ext4 /dev/loop11 rw\n";
    auto m = parse_mountinfo(text);
    EXPECT_TRUE(m.ok());
    return std::make_shared<const std::vector<MountEntry>>(m.ok() ? *m : std::vector<MountEntry>{});
  }
  fsaudit::testing::TempDir t;
  std::filesystem::path a, b;
  TargetSelection watch;
};

TEST(LatencyProbe, FailsWithAReasonWhenTheMountTableIsUnreadable) {
  fsaudit::testing::TempDir t("fsaudit-latency-nomounts");
  TempHost env(t.path());
  auto ctx = env.context(10s);
  LatencyProbe probe(SamplerSettings{}, TargetSelection{}, StackSelection{});
  auto r = probe.run(Target::host(), ctx);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("mount table"), std::string::npos) << r.reason;
}

// In the daemon every run gets the cycle's mount snapshot: the probe plans from it and never reads
// mountinfo itself (here there is none to read), and a new snapshot with other mounts replans.
TEST(LatencyProbe, PlansFromTheCyclesMountSnapshot) {
  TwoMounts two("fsaudit-latency-snapshot");
  TempHost env(two.t.path());  // no proc/self/mountinfo under it
  LatencyProbe probe(env.settings, two.watch, StackSelection{});
  auto snapshot = [&](bool with_b) { return two.snapshot(with_b); };
  auto run = [&](MountSnapshot m) {
    auto ctx = env.context(10s, std::move(m));
    auto r = probe.run(Target::host(), ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    env.clk.advance(1s);
    return r.metrics.value("fsaudit_latency_samplers");
  };
  auto both = snapshot(true);
  EXPECT_EQ(run(both), 2.0);
  EXPECT_EQ(run(both), 2.0);
  EXPECT_EQ(run(snapshot(true)), 2.0);  // a new snapshot of the same table
  EXPECT_EQ(run(snapshot(false)), 1.0);
}

// A run a second, but its 800-stack batch is published every few seconds: the runs in between keep
// the last one (while the scheduler says it is still published), unless the plan changed or an
// operator asked for the run.
TEST(LatencyProbe, PublishesEveryFewSecondsNotEveryRun) {
  TwoMounts two("fsaudit-latency-publish");
  TempHost env(two.t.path());
  LatencyProbe probe(env.settings, two.watch, StackSelection{});
  auto snapshot = [&](bool with_b) { return two.snapshot(with_b); };
  auto table = snapshot(true);
  auto run = [&](MountSnapshot m, bool republish, bool requested = false) {
    auto ctx = env.context(10s, std::move(m));
    ctx.republish = republish;
    ctx.requested = requested;
    auto r = probe.run(Target::host(), ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    env.clk.advance(1s);
    return r;
  };
  auto r = run(table, true);
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_samplers"), 2.0);
  int kept = 0;
  for (int i = 0; i < 4; ++i) kept += run(table, false).unchanged ? 1 : 0;
  EXPECT_EQ(kept, 4) << "runs 1-4 s after a publish";
  r = run(table, false);  // 5 s after it
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_samplers"), 2.0);
  EXPECT_TRUE(run(table, false).unchanged);
  EXPECT_FALSE(run(table, false, true).unchanged) << "a requested run publishes";
  EXPECT_FALSE(run(table, true).unchanged) << "asked to publish afresh";
  r = run(snapshot(false), false);
  EXPECT_FALSE(r.unchanged) << "a new plan publishes at once";
  EXPECT_EQ(r.metrics.value("fsaudit_latency_samplers"), 1.0);
}

// Between plans a batch carries only the stacks whose series changed (Batch::parts_delta): here each
// stack samples once every 20 s, so most 5 s batches carry none. The store keeps the series of the
// stacks a batch leaves out, so what it shows adds up to every sample taken.
TEST(LatencyProbe, BetweenPlansABatchCarriesOnlyTheStacksThatChanged) {
  TwoMounts two("fsaudit-latency-delta");
  TempHost env(two.t.path());
  env.settings.stack_writes_per_second = 0.05;
  env.settings.bytes_per_second = 1ull << 30;
  LatencyProbe probe(env.settings, two.watch, StackSelection{});
  auto table = two.snapshot(true);
  metrics::Store store;
  int deltas = 0, partial = 0;
  for (int i = 0; i < 60; ++i) {
    auto ctx = env.context(10s, table);
    ctx.republish = i == 0;
    auto r = probe.run(Target::host(), ctx);
    ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
    env.clk.advance(1s);
    if (r.unchanged) continue;
    if (i == 0) {
      EXPECT_FALSE(r.metrics.parts_delta);
      EXPECT_EQ(r.metrics.parts().size(), 3u) << "the stacks' info and both stacks";
    } else {
      EXPECT_TRUE(r.metrics.parts_delta) << "run " << i;
      EXPECT_LE(r.metrics.parts().size(), 2u) << "run " << i;
      ++deltas;
      partial += r.metrics.parts().size() < 2 ? 1 : 0;
    }
    store.publish("latency\x1fhost", r.metrics);
  }
  EXPECT_GE(deltas, 10);
  EXPECT_GE(partial * 2, deltas) << "most batches leave out the stacks that did not sample";
  const auto text = store.text();
  const double a = fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_seconds_count", {{"stack", "dev:7:10"}});
  const double b = fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_seconds_count", {{"stack", "dev:7:11"}});
  const double fsyncs = fsaudit::testing::scrape_value(text, "fsaudit_latency_fsyncs_total");
  ASSERT_GE(a, 1.0) << text;
  ASSERT_GE(b, 1.0) << text;
  EXPECT_EQ(a + b, fsyncs - 2) << "every sample counted, besides the two probe file fills";
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_latency_stack_info", {{"stack", "dev:7:11"}}), 1.0);
  EXPECT_TRUE(ProbeFile::remove(two.a / ".fsaudit").ok());
  EXPECT_TRUE(ProbeFile::remove(two.b / ".fsaudit").ok());
}

// The plan is made again every 5 minutes even when the mount table is the same (sysfs may change
// alone); past the probe budget that is 5 minutes times its stretch, like the other passes over every
// filesystem. Here sysfs comes to name loop10 after the first plan.
TEST(LatencyProbe, ThePeriodicReplanIsStretchedByTheProbeBudget) {
  TwoMounts two("fsaudit-latency-replan");
  TempHost env(two.t.path());
  LatencyProbe probe(env.settings, two.watch, StackSelection{});
  auto table = two.snapshot(true);
  metrics::Store store;
  auto run_at = [&](std::chrono::seconds after) {
    env.clk.advance(after);
    auto ctx = env.context(10s, table);
    ctx.budget_stretch = 4;
    auto r = probe.run(Target::host(), ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    if (!r.unchanged) store.publish("latency\x1fhost", r.metrics);
    return fsaudit::testing::scrape_value(store.text(), "fsaudit_latency_stack_info", {{"stack", "block:loop10"}});
  };
  EXPECT_TRUE(std::isnan(run_at(0s)));
  std::filesystem::create_directories(two.t / "sys/dev/block");
  std::filesystem::create_symlink("../../devices/virtual/block/loop10", two.t / "sys/dev/block/7:10");
  EXPECT_TRUE(std::isnan(run_at(6min))) << "5 minutes on: not yet";
  EXPECT_TRUE(std::isnan(run_at(13min))) << "19 minutes on: not yet";
  EXPECT_EQ(run_at(2min), 1.0) << "21 minutes on: 4 x 5 minutes have passed";
  EXPECT_TRUE(ProbeFile::remove(two.a / ".fsaudit").ok());
  EXPECT_TRUE(ProbeFile::remove(two.b / ".fsaudit").ok());
}

// ---- per-stack metrics ------------------------------------------------------------------------------

TEST(LatencyHistogram, CompactBucketsCountWhatTheFineBucketsCountAtTheSameBounds) {
  Histogram h;
  for (auto ns : {100 * us, 500 * us, 900 * us, 2 * ms + 1, 7 * ms, 15 * ms, 40 * ms, 300 * ms, 1 * s, 3 * s})
    h.observe(ns);
  auto fine_bounds = Histogram::bounds_seconds(Detail::full);
  auto fine = h.cumulative(Detail::full);
  auto bounds = Histogram::bounds_seconds(Detail::compact);
  auto c = h.cumulative(Detail::compact);
  ASSERT_EQ(bounds.size(), kCompactBoundsNs.size());
  ASSERT_EQ(c.size(), bounds.size() + 1);
  EXPECT_EQ(bounds, (std::vector<double>{0.0005, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 2}));
  for (std::size_t i = 0; i < bounds.size(); ++i)
    EXPECT_EQ(c[i], fine[bound_index(bounds[i])]) << "le=" << bounds[i];
  EXPECT_EQ(c[0], 2u);  // 100us, 500us (a bound is inclusive)
  EXPECT_EQ(c[1], 3u);  // + 900us; 2ms+1ns is above 2 ms
  EXPECT_EQ(c[bounds.size() - 1], 9u);  // all but 3 s are <= 2 s
  EXPECT_EQ(c.back(), h.count());
  EXPECT_EQ(fine.size(), fine_bounds.size() + 1);
}

// The default exposition: what the dashboards and the alert read, and skips that happened.
TEST(StackStats, CompactEmitsTheCoarseHistogramP50P99AndSkipsThatOccurred) {
  FakeClock clk;
  StackStats st(5min);
  record_three(st, clk.now());
  st.set_state(State::stuck);
  st.set_state(State::stuck);
  metrics::Batch b;
  const auto& l = kTank;
  auto with = tank_with;
  st.emit(b, l, clk.now(), Detail::compact, false);
  EXPECT_EQ(b.value("fsaudit_fsync_latency_seconds", l), 3.0);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", with("percentile", "50")), 400e-6);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", with("percentile", "99")), 3e-3);
  EXPECT_FALSE(b.has("fsaudit_fsync_latency_window_seconds", with("percentile", "99.9")));
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", with("reason", "stuck")), 2.0);
  EXPECT_FALSE(b.has("fsaudit_latency_sampler_skipped_total", with("reason", "read_only")));
  for (const char* gone : {"fsaudit_fsync_latency_window_max_seconds", "fsaudit_fsync_latency_window_samples",
                           "fsaudit_latency_sampler_io_bytes_total", "fsaudit_latency_sampler_info"})
    EXPECT_FALSE(b.has(gone)) << gone;
  // A stack in trouble shows its state set even in the compact exposition.
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", with("state", "stuck")), 1.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", with("state", "ok")), 0.0);
  std::size_t samples = 0;
  for (const auto& f : b.families()) {
    for (const auto& m : f.metric) {
      samples += f.type == metrics::MetricType::Histogram ? m.histogram.bucket.size() + 2 : 1;
      if (f.name == "fsaudit_fsync_latency_seconds") {
        ASSERT_EQ(m.histogram.bucket.size(), kCompactBoundsNs.size() + 1);
        EXPECT_EQ(m.histogram.bucket[0].cumulative_count, 2u);  // 80us, 400us <= 0.5 ms
        EXPECT_EQ(m.histogram.bucket[2].cumulative_count, 3u);  // 3 ms <= 5 ms
      }
    }
  }
  EXPECT_EQ(samples, 12u + 2u + 1u + state_names().size());  // histogram lines, p50 and p99, one skip reason, the state set
  // Sampling again (or only waiting for the host budget): no state set.
  for (State quiet : {State::ok, State::io_budget}) {
    st.set_state(quiet);
    metrics::Batch again;
    st.emit(again, l, clk.now(), Detail::compact, false);
    EXPECT_FALSE(again.has("fsaudit_latency_sampler_state")) << state_name(quiet);
  }
}

// The default exposition (issue 33's series budget: at most 8 per stack): count and sum, and p99.
TEST(StackStats, SummaryEmitsCountSumAndWindowPercentilesOnly) {
  FakeClock clk;
  StackStats st(5min);
  record_three(st, clk.now());
  metrics::Batch b;
  st.emit(b, kTank, clk.now(), Detail::summary, false);
  // As a scrape shows it: a summary's sum and count (no bucket: +Inf alone would repeat the count),
  // then p99 (p50 with latency.detail: compact or full; the mean is sum / count).
  const auto text = metrics::serialize(b);
  EXPECT_NE(text.find("# TYPE fsaudit_fsync_latency_seconds summary\n"), std::string::npos) << text;
  EXPECT_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_seconds_count", kTank), 3.0) << text;
  EXPECT_DOUBLE_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_seconds_sum", kTank),
                   (80 * us + 3 * ms + 400 * us) / 1e9);
  EXPECT_EQ(text.find("_bucket"), std::string::npos) << text;
  std::size_t samples = 0;
  for (auto line : fsaudit::lines(text)) samples += !line.empty() && line[0] != '#';
  EXPECT_EQ(samples, 3u) << text;
  EXPECT_EQ(text.find("percentile=\"50\""), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(fsaudit::testing::scrape_value(text, "fsaudit_fsync_latency_window_seconds", tank_with("percentile", "99")),
                   3e-3);
  EXPECT_TRUE(Histogram::bounds_seconds(Detail::summary).empty());
}

TEST(StackStats, EmitsHistogramPercentilesStateAndSkips) {
  FakeClock clk;
  StackStats st(5min);
  record_three(st, clk.now());
  st.set_state(State::read_only);
  st.set_state(State::read_only);
  st.set_state(State::stuck);
  metrics::Batch b;
  const auto& l = kTank;
  auto with = tank_with;
  st.emit(b, l, clk.now(), Detail::full, false);
  EXPECT_EQ(b.value("fsaudit_fsync_latency_seconds", l), 3.0);  // histogram count
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", with("percentile", "50")), 400e-6);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", with("percentile", "99")), 3e-3);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_fsync_latency_window_seconds", with("percentile", "99.9")), 3e-3);
  for (const auto& f : b.families())
    for (const auto& m : f.metric)
      for (const auto& lab : m.label) EXPECT_NE(lab.name, "quantile") << f.name << " (reserved for summaries)";
  EXPECT_EQ(b.value("fsaudit_fsync_latency_window_samples", l), 3.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", with("state", "stuck")), 1.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_state", with("state", "ok")), 0.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", with("reason", "read_only")), 2.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", with("reason", "stuck")), 1.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_skipped_total", with("reason", "io_error")), 0.0);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_io_bytes_total", l), 3.0 * 4096);
  EXPECT_EQ(b.value("fsaudit_latency_sampler_info", with("mode", "io_uring_fsync")), 1.0);
  EXPECT_FALSE(b.has("fsaudit_direct_read_latency_seconds"));

  const metrics::Sample* m = nullptr;
  for (const auto& f : b.families())
    if (f.name == "fsaudit_fsync_latency_seconds") m = &f.metric.at(0);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->histogram.bucket.size(), 20u);
  EXPECT_EQ(m->histogram.bucket[bound_index(50e-6)].cumulative_count, 0u);
  EXPECT_EQ(m->histogram.bucket[bound_index(100e-6)].cumulative_count, 1u);
  EXPECT_EQ(m->histogram.bucket[bound_index(500e-6)].cumulative_count, 2u);
  EXPECT_EQ(m->histogram.bucket[bound_index(5e-3)].cumulative_count, 3u);
  EXPECT_DOUBLE_EQ(m->histogram.sample_sum, (80 * us + 3 * ms + 400 * us) / 1e9);

  clk.advance(5min);  // the window empties; the histogram keeps its counts
  metrics::Batch b2;
  st.emit(b2, l, clk.now(), Detail::full, false);
  EXPECT_FALSE(b2.has("fsaudit_fsync_latency_window_seconds"));
  EXPECT_EQ(b2.value("fsaudit_fsync_latency_window_samples", l), 0.0);
  EXPECT_EQ(b2.value("fsaudit_fsync_latency_seconds", l), 3.0);
}

// Real but tiny I/O in a temp dir (no privileges): what one turn counts against the budget.
TEST(SampleStack, CountsTheFillAndEachSampleFsync) {
  fsaudit::testing::TempDir a("fsaudit-latency-a");
  SamplerSettings s;
  s.file_size = 1 << 20;
  s.fill_threshold = 1.0;
  auto r = sample_stack(a.path(), a.path() / ".fsaudit", s, 1, [] { return true; });
  EXPECT_EQ(r.state, State::ok) << r.reason;
  EXPECT_EQ(r.fsync_ns.size(), 1u);
  EXPECT_EQ(r.fsyncs, 2u);  // the fill's fsync and the sample
  EXPECT_EQ(r.fill_bytes, 1u << 20);
  auto again = sample_stack(a.path(), a.path() / ".fsaudit", s, 2, [] { return true; });
  EXPECT_EQ(again.fsyncs, 1u);
  EXPECT_EQ(again.fill_bytes, 0u);
  EXPECT_TRUE(ProbeFile::remove(a / ".fsaudit").ok());
}

namespace {
// This process's open io_uring instances.
int io_urings_open() {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    std::error_code lec;
    auto target = std::filesystem::read_symlink(it->path(), lec);
    if (!lec && target.string() == "anon_inode:[io_uring]") ++n;
  }
  return n;
}
}  // namespace

// A thread keeps one ring for all its samples (a ring per sample, with the io-wq worker the kernel
// starts for its first fsync, cost more CPU than the write+fsync); it is closed when the thread ends,
// and a process forked from a thread with a ring makes its own rather than use the parent's.
TEST(SampleStack, OneIoUringPerThreadKeptAcrossSamplesAndNotSharedOverFork) {
  fsaudit::testing::TempDir a("fsaudit-latency-ring");
  SamplerSettings s;
  s.file_size = 1 << 20;
  s.fill_threshold = 1.0;
  s.mode = Mode::io_uring_fsync;
  const int before = io_urings_open();
  int during = -1;
  std::vector<SampleResult> results;
  std::thread([&] {
    for (std::uint64_t i = 0; i < 5; ++i) results.push_back(sample_stack(a.path(), a.path() / ".fsaudit", s, i, [] { return true; }));
    during = io_urings_open();
    if (results.back().mode != "io_uring_fsync") return;
    // A fork of this thread: the child samples on a ring of its own (two open there: the parent's,
    // inherited, and its own) and the parent's ring still works afterwards.
    pid_t pid = ::fork();
    if (pid == 0) {
      auto r = sample_stack(a.path(), a.path() / ".fsaudit", s, 9, [] { return true; });
      ::_exit(r.state == State::ok && r.fsync_ns.size() == 1 && io_urings_open() == during + 1 ? 0 : 1);
    }
    int status = -1;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    results.push_back(sample_stack(a.path(), a.path() / ".fsaudit", s, 10, [] { return true; }));
    EXPECT_EQ(io_urings_open(), during);
  }).join();
  ASSERT_EQ(results.size(), 6u) << (results.empty() ? "" : results.back().reason);
  if (results[0].mode != "io_uring_fsync") GTEST_SKIP() << "io_uring unavailable here: " << results[0].reason;
  for (const auto& r : results) {
    EXPECT_EQ(r.state, State::ok) << r.reason;
    EXPECT_EQ(r.fsync_ns.size(), 1u);
  }
  EXPECT_EQ(during, before + 1) << "one ring for five samples";
  EXPECT_EQ(io_urings_open(), before) << "closed when its thread ended";
  EXPECT_TRUE(ProbeFile::remove(a / ".fsaudit").ok());
}

// The fill reuses one buffer per thread: still no two blocks alike, in one file or across files (a
// deduplicating filesystem must really write every one).
TEST(ProbeFile, FillBlocksAreAllDifferentInAFileAndAcrossFiles) {
  fsaudit::testing::TempDir t("fsaudit-fill");
  ProbeFile one, two;
  ASSERT_FALSE(one.open(t / "one", 1 << 20, 0, nullptr).has_value());
  ASSERT_FALSE(two.open(t / "two", 1 << 20, 0, nullptr).has_value());
  std::set<std::string> blocks;
  for (const auto* f : {&one, &two}) {
    auto text = read_file(f->path());
    ASSERT_TRUE(text.ok()) << text.error();
    ASSERT_EQ(text->size(), 1u << 20);
    for (std::size_t o = 0; o < text->size(); o += kBlock) blocks.insert(text->substr(o, kBlock));
  }
  EXPECT_EQ(blocks.size(), 2u * (1u << 20) / kBlock);
}

// The probe end to end on a fake host tree whose mount table points at temp dirs (real but tiny I/O,
// no privileges), on a fake clock: two stacks (one with a bind mount), a host budget of 1 write/s
// that the probe file fills also pay for, turns served round-robin, one probe file per stack.
TEST(LatencyProbe, StacksTakeTurnsUnderTheHostBudgetOnAFakeClock) {
  fsaudit::testing::TempDir t("fsaudit-latency-probe");
  auto a = t / "a", a2 = t / "a-bind", b = t / "b";
  for (const auto& d : {a, a2, b}) std::filesystem::create_directories(d);
  std::filesystem::create_directories(t / "proc/self");
  fsaudit::testing::write_text(t / "proc/self/mountinfo",
                               "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                               "10 1 7:10 / " + a.string() + " rw - ext4 /dev/loop10 rw\n"
                               "11 1 7:10 /sub " + a2.string() + " rw - ext4 /dev/loop10 rw\n"
                               "12 1 7:11 / " + b.string() + " rw - ext4 /dev/loop11 rw\n");
  TempHost env(t.path());
  auto& clk = env.clk;
  env.settings.writes_per_second = 1.0;  // the host budget binds: two stacks want 2/s
  env.settings.bytes_per_second = 1ull << 30;
  env.settings.detail = Detail::full;  // io_budget skips are counted with detail full only
  TargetSelection watch;
  watch.discover = false;  // never the real root: only the temp dirs
  watch.explicit_targets = {{a.string(), ""}, {a2.string(), ""}, {b.string(), ""}};
  LatencyProbe probe(env.settings, watch, StackSelection{});
  auto run = [&] {
    auto ctx = env.context(10s);
    auto r = probe.run(Target::host(), ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    return r.metrics;
  };
  const metrics::Labels la{{"stack", "dev:7:10"}, {"target", a.string()}}, lb{{"stack", "dev:7:11"}, {"target", b.string()}};
  auto count = [](const metrics::Batch& m, const metrics::Labels& l) { return m.value("fsaudit_fsync_latency_seconds", l); };

  const auto threads_before = sample_threads().started();
  auto m = run();  // one turn (a, ordered by id) fills and samples: 2 fsyncs, the host is 1 in debt
  EXPECT_EQ(m.value("fsaudit_latency_samplers"), 2.0);
  EXPECT_EQ(m.value("fsaudit_latency_stack_info", {{"target", a2.string()}, {"stack", "dev:7:10"}}), 1.0);
  EXPECT_EQ(count(m, la) + count(m, lb), 1.0);
  EXPECT_EQ(m.value("fsaudit_latency_fsyncs_total"), 2.0);
  EXPECT_EQ(m.value("fsaudit_latency_sampler_skipped_total", {{"stack", "dev:7:11"}, {"target", b.string()}, {"reason", "io_budget"}}), 1.0);
  clk.advance(1s);
  m = run();  // the debt is paid back, nothing yet
  EXPECT_EQ(m.value("fsaudit_latency_fsyncs_total"), 2.0);
  for (int i = 0; i < 20; ++i) {
    clk.advance(1s);
    m = run();
  }
  // 22 s at 1 write/s, 2 of them spent on the first fill, 1 on the second: 19 or 20 samples.
  double fsyncs = m.value("fsaudit_latency_fsyncs_total");
  EXPECT_LE(fsyncs, 22.0 + 1.0);
  EXPECT_GE(fsyncs, 20.0);
  EXPECT_NEAR(count(m, la), count(m, lb), 1.0) << "round-robin";
  // One sample at a time, each back within its run: one thread waits for all of them, not a new
  // thread per sample (none at all if an earlier test left one idle).
  EXPECT_LE(sample_threads().started() - threads_before, 1u);
  EXPECT_EQ(m.value("fsaudit_latency_sampler_skipped_total", {{"stack", "dev:7:11"}, {"target", b.string()}, {"reason", "io_budget"}}),
            count(m, lb) + (count(m, lb) < count(m, la) ? 1.0 : 0.0))
      << "one io_budget skip per wait for a turn, not one per run of it";
  EXPECT_TRUE(std::filesystem::exists(a / ".fsaudit/latency.probe"));
  EXPECT_TRUE(std::filesystem::exists(b / ".fsaudit/latency.probe"));
  EXPECT_FALSE(std::filesystem::exists(a2 / ".fsaudit")) << "a bind mount of a sampled stack gets no probe file";
  EXPECT_TRUE(ProbeFile::remove(a / ".fsaudit").ok());
  EXPECT_TRUE(ProbeFile::remove(b / ".fsaudit").ok());
}

// A stack that was due but did not sample (its run ended with the places taken) gets its turn and
// the budget it took back: it is due again at once, and still before the stacks sampled since.
TEST(Dispatcher, GiveBackReturnsTheTurnAndTheBudget) {
  FakeClock clk;
  auto s = budget_settings(1.0, 1.0, 1 << 20);  // the host allows one sample now
  Dispatcher d(s, clk.now());
  d.set_stacks({"a", "b"});
  std::vector<std::size_t> deferred;
  EXPECT_EQ(d.due_at(clk.now(), {0, 0}, &deferred), std::vector<std::size_t>{0});
  EXPECT_EQ(deferred, std::vector<std::size_t>{1});
  EXPECT_TRUE(d.due_at(clk.now(), {0, 0}, nullptr).empty());  // the host budget is spent
  d.give_back(0);
  EXPECT_EQ(d.due_at(clk.now(), {0, 0}, nullptr), std::vector<std::size_t>{0});
  d.give_back(0);
  d.give_back(0);  // never more than the burst comes back
  EXPECT_EQ(d.due_at(clk.now(), {0, 0}, nullptr), std::vector<std::size_t>{0});
  EXPECT_TRUE(d.due_at(clk.now(), {0, 0}, nullptr).empty());
}

// A new plan (stacks added, gone, in another order) keeps each remaining stack's turn and rate: a
// stack that just sampled is not due again because the plan moved it.
TEST(Dispatcher, ANewPlanKeepsEachStacksTurnWhateverItsPlace) {
  FakeClock clk;
  auto s = budget_settings(0.01, 100.0, 1 << 30);  // a stack one sample a 100 s; the host allows plenty
  Dispatcher d(s, clk.now());
  d.set_stacks({"m", "a"});
  for (int burst = 0; burst < 2; ++burst) {  // a stack's bucket holds two turns
    auto first = d.due_at(clk.now(), {0, 0}, nullptr);
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, (std::vector<std::size_t>{0, 1}));
  }
  EXPECT_TRUE(d.due_at(clk.now(), {0, 0}, nullptr).empty());  // both spent their turns
  d.forget_except({"a", "m", "z", "b"});
  d.set_stacks({"z", "a", "b", "m"});
  auto second = d.due_at(clk.now(), {0, 0, 0, 0}, nullptr);
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, (std::vector<std::size_t>{0, 2}));  // only the new z and b
  d.forget_except({"a"});  // m is gone: when it comes back it is a new stack
  d.set_stacks({"m", "a"});
  EXPECT_EQ(d.due_at(clk.now(), {0, 0}, nullptr), std::vector<std::size_t>{0});
}

// Six stacks due at once, latency.parallel 2: every one samples in the run, never more than two at
// a time, so the run needs two sampler processes, not six; and it hands two lanes to the sample
// threads, each taking the next stack itself, not six tasks (two wake-ups each).
TEST(LatencyProbe, AtMostParallelSamplesInFlightAndEveryDueStackSamples) {
  fsaudit::testing::TempDir t("fsaudit-latency-parallel");
  std::filesystem::create_directories(t / "proc/self");
  std::string mountinfo = "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";
  TargetSelection watch;
  watch.discover = false;
  std::vector<metrics::Labels> labels;
  for (int i = 0; i < 6; ++i) {
    auto d = t / ("s" + std::to_string(i));
    std::filesystem::create_directories(d);
    mountinfo += std::to_string(10 + i) + " 1 7:" + std::to_string(20 + i) + " / " + d.string() + " rw - ext4 /dev/loop" +
                 std::to_string(20 + i) + " rw\n";
    watch.explicit_targets.push_back({d.string(), ""});
    labels.push_back({{"stack", "dev:7:" + std::to_string(20 + i)}, {"target", d.string()}});
  }
  fsaudit::testing::write_text(t / "proc/self/mountinfo", mountinfo);
  TempHost env(t.path());
  env.settings.writes_per_second = 100;
  env.settings.bytes_per_second = 1ull << 30;
  env.settings.parallel = 2;
  LatencyProbe probe(env.settings, watch, StackSelection{});
  const auto before = shared_sampler_children().processes();
  const auto tasks_before = sample_threads().tasks();
  auto ctx = env.context(60s);
  auto r = probe.run(Target::host(), ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  for (const auto& l : labels) EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", l), 1.0) << l.at("stack");
  EXPECT_EQ(r.metrics.value("fsaudit_latency_fsyncs_total"), 12.0);  // 6 fills + 6 samples
  EXPECT_LE(shared_sampler_children().processes(), std::max<std::size_t>(before, 2));
  EXPECT_EQ(sample_threads().tasks() - tasks_before, 2u) << "one task per lane, not one per sample";
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(ProbeFile::remove(t / ("s" + std::to_string(i)) / ".fsaudit").ok());
}
