// Lab tests of the latency sampler on a real loop-device ext4: histogram from real write+fsync,
// read-only remount and a full filesystem reported as skip states (never as a failure), probe file
// bounded and removable, the streaming deep test, and the same through a running fsauditd.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/runner/runner.hpp"
#include "probes/latency/latency_probe.hpp"
#include "probes/latency/stream.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"

using namespace fsaudit;
using namespace fsaudit::latency;
using namespace std::chrono_literals;
namespace ft = fsaudit::testing;
namespace fs = std::filesystem;
using ft::LoopDevice;
using ft::Mount;
using ft::TempDir;

namespace {

struct Ctx {
  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  ProbeContext ctx{host, runner, SystemClock::instance(), tools, "/tmp", {}, SystemClock::instance().now() + 5min};
};

// A small ext4 on a loop device, mounted under a fresh temp dir.
struct LabFs {
  TempDir tmp{"fsaudit-latency-lab"};
  std::unique_ptr<LoopDevice> loop;
  std::unique_ptr<Mount> mount;
  fs::path mnt;
  explicit LabFs(std::uint64_t size_mib) {
    loop = std::make_unique<LoopDevice>(tmp.path(), "ext4.img", size_mib << 20);
    if (!loop->ok()) return;
    ft::must({"mkfs.ext4", "-q", "-F", "-m", "0", loop->device()});
    mnt = tmp.path() / "mnt";
    mount = std::make_unique<Mount>(loop->device(), mnt, "ext4");
  }
  bool ok() const { return mount && mount->ok(); }
  std::string why() const { return !loop || !loop->ok() ? "loop device failed" : mount ? mount->error() : "mkfs failed"; }
  Target target() const { return Target{mnt.string(), mnt.string(), "ext4", loop->device(), "rw", "rw", 7, 0}; }
  ~LabFs() {
    mount.reset();  // unmount before detaching the loop device
    loop.reset();
  }
};

SamplerSettings small(int samples = 8) {
  SamplerSettings s;
  s.samples = samples;
  s.file_size = 4ull << 20;
  return s;
}

double state_of(const metrics::Batch& b, const std::string& target, const std::string& st) {
  return b.value("fsaudit_latency_sampler_state", {{"target", target}, {"state", st}});
}

}  // namespace

TEST(LatencyLab, ProbeRunProducesHistogramAndBoundedFile) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  LatencyProbe probe(small(8));
  auto t = lab.target();
  ASSERT_TRUE(probe.applies_to(t));
  auto r = probe.run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 8.0);
  EXPECT_EQ(state_of(r.metrics, t.name, "ok"), 1.0);
  double p50 = r.metrics.value("fsaudit_fsync_latency_window_seconds", {{"target", t.name}, {"quantile", "0.5"}});
  EXPECT_GT(p50, 0.0);
  EXPECT_LT(p50, 30.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_info", {{"target", t.name}, {"mode", "io_uring_fsync"}}), 1.0);
  auto file = lab.mnt / ".fsaudit" / "latency.probe";
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);
  EXPECT_GE(st.st_blocks * 512, 4 << 20);  // preallocated
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  r = probe.run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 16.0);
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);  // never grown
  EXPECT_GE(r.metrics.value("fsaudit_latency_sampler_io_bytes_total", {{"target", t.name}}), 16.0 * 4096);

  // A larger leftover file is cut back to the configured size, never used beyond it.
  ::truncate(file.c_str(), 8 << 20);
  r = probe.run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);

  // Removal on request.
  EXPECT_EQ(ProbeFile::remove(lab.mnt / ".fsaudit"), "");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(lab.mnt / ".fsaudit"));
}

TEST(LatencyLab, DsyncModeAndDirectReads) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto s = small(5);
  s.mode = Mode::o_dsync;
  s.direct_reads = true;
  LatencyProbe probe(s);
  auto t = lab.target();
  auto r = probe.run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 5.0);
  EXPECT_EQ(r.metrics.value("fsaudit_direct_read_latency_seconds", {{"target", t.name}}), 5.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_info", {{"target", t.name}, {"mode", "o_dsync"}}), 1.0);
}

TEST(LatencyLab, ReadOnlyRemountIsASkipNotAFailure) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  LatencyProbe probe(small(4));
  auto t = lab.target();
  auto r = probe.run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  ASSERT_TRUE(lab.mount->remount("ro"));
  r = probe.run(t, c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(state_of(r.metrics, t.name, "read_only"), 1.0);
  EXPECT_EQ(state_of(r.metrics, t.name, "ok"), 0.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", {{"target", t.name}, {"reason", "read_only"}}), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 4.0);  // kept, not grown
  ASSERT_TRUE(lab.mount->remount("rw"));
  r = probe.run(t, c.ctx);
  EXPECT_EQ(state_of(r.metrics, t.name, "ok"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 8.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", {{"target", t.name}, {"reason", "read_only"}}), 1.0);
}

TEST(LatencyLab, FullFilesystemIsASkipNotAFailure) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(32);
  ASSERT_TRUE(lab.ok()) << lab.why();
  // Fill it until ENOSPC.
  {
    auto filler = lab.mnt / "filler";
    int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    std::vector<char> buf(1 << 20, 'x');
    int e = 0;
    for (int i = 0; i < 1000 && e == 0; ++i)
      if (::write(fd, buf.data(), buf.size()) < 0) e = errno;
    if (e == 0)
      for (int i = 0; i < 100000 && e == 0; ++i)
        if (::write(fd, buf.data(), 4096) < 0) e = errno;
    ::fsync(fd);
    ::close(fd);
    ASSERT_EQ(e, ENOSPC);
  }
  Ctx c;
  auto t = lab.target();
  {
    LatencyProbe probe(small(4));  // default fill threshold 0.95
    auto r = probe.run(t, c.ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(state_of(r.metrics, t.name, "fill_threshold"), 1.0);
    EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 0.0);
  }
  {
    auto s = small(4);
    s.fill_threshold = 1.0;  // let it try: the probe file cannot be allocated
    LatencyProbe probe(s);
    auto r = probe.run(t, c.ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(state_of(r.metrics, t.name, "no_space"), 1.0);
    EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", {{"target", t.name}, {"reason", "no_space"}}), 1.0);
    ProbeFile::remove(lab.mnt / ".fsaudit");
  }
  fs::remove(lab.mnt / "filler");
  ::sync();
  LatencyProbe probe(small(4));
  auto r = probe.run(t, c.ctx);
  EXPECT_EQ(state_of(r.metrics, t.name, "ok"), 1.0);
}

TEST(LatencyLab, BudgetExhaustedIsASkip) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto s = small(4);
  s.budget_per_hour = 6 * 4096;  // enough for one run of 4 samples, not two
  LatencyProbe probe(s);
  auto t = lab.target();
  auto r = probe.run(t, c.ctx);
  EXPECT_EQ(state_of(r.metrics, t.name, "ok"), 1.0);
  r = probe.run(t, c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok);
  EXPECT_EQ(state_of(r.metrics, t.name, "io_budget"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", {{"target", t.name}}), 4.0);
}

TEST(LatencyLab, DisabledSamplerRemovesItsProbeFile) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto t = lab.target();
  LatencyProbe probe(small(1));
  ASSERT_EQ(probe.run(t, c.ctx).outcome, Outcome::ok);
  ASSERT_TRUE(fs::exists(lab.mnt / ".fsaudit" / "latency.probe"));
  LatencyCleanupProbe cleanup(".fsaudit");
  auto r = cleanup.run(t, c.ctx);
  EXPECT_EQ(r.outcome, Outcome::not_applicable);
  EXPECT_NE(r.reason.find("removed"), std::string::npos) << r.reason;
  EXPECT_FALSE(fs::exists(lab.mnt / ".fsaudit"));
}

TEST(LatencyLab, StreamingWriteDeepTest) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(160);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  config::LatencyConfig cfg;
  cfg.probe_file_size = 4ull << 20;
  cfg.stream.enabled = true;
  cfg.stream.targets = {lab.mnt.string()};
  cfg.stream.size = 96ull << 20;
  cfg.stream.duration = 3s;
  cfg.stream.idle_samples = 5;
  TempDir state("fsaudit-latency-state");
  StreamProbe probe(cfg, state.path());
  auto r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  metrics::Labels l{{"target", lab.mnt.string()}};
  EXPECT_EQ(r.metrics.value("fsaudit_latency_stream_state", {{"target", lab.mnt.string()}, {"state", "ok"}}), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_stream_samples", {{"target", lab.mnt.string()}, {"phase", "idle"}}), 5.0);
  EXPECT_GE(r.metrics.value("fsaudit_latency_stream_samples", {{"target", lab.mnt.string()}, {"phase", "load"}}), 1.0);
  EXPECT_GT(r.metrics.value("fsaudit_latency_stream_written_bytes", l), 0.0);
  EXPECT_LE(r.metrics.value("fsaudit_latency_stream_written_bytes", l), 96.0 * 1048576);
  double load_p99 = r.metrics.value("fsaudit_latency_stream_fsync_p99_seconds", {{"target", lab.mnt.string()}, {"phase", "load"}});
  double idle_p99 = r.metrics.value("fsaudit_latency_stream_fsync_p99_seconds", {{"target", lab.mnt.string()}, {"phase", "idle"}});
  EXPECT_GT(load_p99, 0.0);
  EXPECT_GT(idle_p99, 0.0);
  EXPECT_NEAR(r.metrics.value("fsaudit_latency_stream_p99_ratio", l), load_p99 / idle_p99, 1e-9);
  EXPECT_FALSE(fs::exists(lab.mnt / ".fsaudit" / "latency.stream"));  // the stream file is gone
  EXPECT_TRUE(fs::exists(state.path() / "latency_stream.last"));
  // Not due again within the interval: the same results are re-exported, nothing is written.
  auto r2 = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r2.metrics.value("fsaudit_latency_stream_last_run_timestamp_seconds", l),
            r.metrics.value("fsaudit_latency_stream_last_run_timestamp_seconds", l));
  ProbeFile::remove(lab.mnt / ".fsaudit");
}

TEST(LatencyLab, DaemonScrapeShowsHistogramThenReadOnlySkip) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  TempDir dir("fsaudit-latency-daemon");
  int port = ft::free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir.path() / "state").string() +
                     "\ntargets:\n  discover: false\n  explicit:\n    - path: " + lab.mnt.string() +
                     "\nlatency:\n  probe_file_size: 4MiB\n  samples_per_run: 4\n";
  fs::create_directories(dir.path() / "state");
  {
    ft::DaemonProcess d(dir.path(), yaml, port);
    const std::map<std::string, std::string> l{{"target", lab.mnt.string()}};
    auto text = d.wait_for(
        [&](const std::string& t) { return ft::scrape_value(t, "fsaudit_fsync_latency_seconds_count", l) > 0; },
        90);
    ASSERT_GT(ft::scrape_value(text, "fsaudit_fsync_latency_seconds_count", l), 0)
        << ft::scrape_lines(text, "fsaudit_fsync_latency_seconds_count") << d.log();
    EXPECT_GT(ft::scrape_value(text, "fsaudit_fsync_latency_seconds_bucket",
                                    {{"target", lab.mnt.string()}, {"le", "+Inf"}}),
              0);
    ASSERT_TRUE(lab.mount->remount("ro"));
    text = d.wait_for(
        [&](const std::string& t) {
          return ft::scrape_value(t, "fsaudit_latency_sampler_state",
                                       {{"target", lab.mnt.string()}, {"state", "read_only"}}) == 1;
        },
        90);
    EXPECT_EQ(ft::scrape_value(text, "fsaudit_latency_sampler_state",
                                    {{"target", lab.mnt.string()}, {"state", "read_only"}}),
              1)
        << ft::scrape_lines(text, "fsaudit_latency_sampler_state") << d.log();
    EXPECT_TRUE(d.running());
    EXPECT_EQ(d.stop(), 0);
  }
  lab.mount->remount("rw");
  ProbeFile::remove(lab.mnt / ".fsaudit");
}
