// Lab tests of the latency sampler on real loop-device filesystems: histogram from real write+fsync,
// read-only remount and a full filesystem reported as skip states (never as a failure), the probe file
// bounded and removable, the host budget, the streaming deep test; and through a running fsauditd:
// one sampler per device stack (btrfs subvolumes, zfs-fuse datasets, ext4) and the fsyncs it issues
// in a minute, counted by the kernel (tracefs), against the configured budget.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "daemon/runner/runner.hpp"
#include "probes/latency/probe.hpp"
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
  // The stack label of this filesystem: its loop device.
  std::string stack() const { return "block:" + fs::path(loop->device()).filename().string(); }
  metrics::Labels labels() const { return {{"stack", stack()}, {"target", mnt.string()}}; }
  ~LabFs() {
    mount.reset();  // unmount before detaching the loop device
    loop.reset();
  }
};

SamplerSettings small(int samples = 8) {
  SamplerSettings s;
  s.samples = samples;
  s.file_size = 4ull << 20;
  s.stack_writes_per_second = 1000;  // these tests call run() back to back
  s.writes_per_second = 1000;
  s.bytes_per_second = 1ull << 30;
  s.detail = Detail::full;  // these tests read the state set and the per-stack info
  return s;
}

TargetSelection only(const fs::path& mnt) {
  TargetSelection sel;
  sel.discover = false;
  sel.explicit_targets = {{mnt.string(), ""}};
  return sel;
}

LatencyProbe probe_on(const LabFs& lab, SamplerSettings s) { return LatencyProbe(s, only(lab.mnt), StackSelection{}); }

metrics::Labels with(metrics::Labels l, const std::string& k, const std::string& v) {
  l[k] = v;
  return l;
}

double state_of(const metrics::Batch& b, const LabFs& lab, const std::string& st) {
  return b.value("fsaudit_latency_sampler_state", with(lab.labels(), "state", st));
}

// Writes `file` until the filesystem is full, to the last 4 KiB block; the errno that ended it.
int fill_to_enospc(const fs::path& file) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  std::vector<char> buf(1 << 20, 'x');
  int e = 0;
  for (int i = 0; i < 1000 && e == 0; ++i)
    if (::write(fd, buf.data(), buf.size()) < 0) e = errno;
  if (e == ENOSPC) e = 0;  // the last MiB did not fit: fill what is left block by block
  for (int i = 0; i < 100000 && e == 0; ++i)
    if (::write(fd, buf.data(), 4096) < 0) e = errno;
  ::fsync(fd);
  ::close(fd);
  return e;
}

}  // namespace

TEST(LatencyLab, ProbeRunProducesHistogramAndBoundedFile) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto probe = probe_on(lab, small(8));
  EXPECT_EQ(probe.scope(), Scope::host);
  auto r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  auto l = lab.labels();
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", l), 8.0) << lab.stack();
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_samplers"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_stack_info", {{"target", lab.mnt.string()}, {"stack", lab.stack()}}), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_fsyncs_total"), 9.0);  // 8 samples + the fill
  double p50 = r.metrics.value("fsaudit_fsync_latency_window_seconds", with(l, "percentile", "50"));
  EXPECT_GT(p50, 0.0);
  EXPECT_LT(p50, 30.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_info", with(l, "mode", "io_uring_fsync")), 1.0);
  auto file = lab.mnt / ".fsaudit" / "latency.probe";
  struct stat st;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);
  EXPECT_GE(st.st_blocks * 512, 4 << 20);  // written, not sparse
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", l), 16.0);
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);  // never grown
  EXPECT_GE(r.metrics.value("fsaudit_latency_sampler_io_bytes_total", l), 16.0 * 4096 + (4 << 20));

  // A larger leftover file is cut back to the configured size, never used beyond it.
  ::truncate(file.c_str(), 8 << 20);
  r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 4 << 20);

  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(lab.mnt / ".fsaudit"));
}

// The one-off fill goes around the page cache (O_DIRECT) where the filesystem takes it: the file is
// written whole with random data, and none of it stays behind as cached (once dirty) pages.
TEST(LatencyLab, ProbeFileFillLeavesNothingInThePageCache) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  ProbeFile file;
  std::uint64_t written = 0;
  auto failed = file.open(lab.mnt / ".fsaudit", 4ull << 20, 0, &written);
  ASSERT_FALSE(failed) << failed->message;
  EXPECT_EQ(written, 4ull << 20);
  int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, 4 << 20, PROT_READ, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  std::vector<unsigned char> in_core((4 << 20) / 4096);
  ASSERT_EQ(::mincore(map, 4 << 20, in_core.data()), 0);
  auto cached = std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; });
  EXPECT_EQ(cached, 0) << "of " << in_core.size() << " pages of the probe file are in the page cache";
  ::munmap(map, 4 << 20);
  // Written with data, every block: no hole, no block of zeros.
  std::vector<char> block(4096), zeros(4096, 0);
  std::size_t zero_blocks = 0;
  for (off_t off = 0; off < (4 << 20); off += 4096) {
    ASSERT_EQ(::pread(fd, block.data(), block.size(), off), 4096);
    if (block == zeros) ++zero_blocks;
  }
  ::close(fd);
  EXPECT_EQ(zero_blocks, 0u);
  file.close();
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

TEST(LatencyLab, DsyncModeAndDirectReads) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto s = small(5);
  s.mode = Mode::o_dsync;
  s.direct_reads = true;
  auto probe = probe_on(lab, s);
  auto r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 5.0);
  EXPECT_EQ(r.metrics.value("fsaudit_direct_read_latency_seconds", lab.labels()), 5.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_info", with(lab.labels(), "mode", "o_dsync")), 1.0);
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

TEST(LatencyLab, ReadOnlyRemountIsASkipNotAFailure) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto probe = probe_on(lab, small(4));
  auto r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  ASSERT_TRUE(lab.mount->remount("ro"));
  r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(state_of(r.metrics, lab, "read_only"), 1.0);
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 0.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", with(lab.labels(), "reason", "read_only")), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 4.0);  // kept, not grown
  ASSERT_TRUE(lab.mount->remount("rw"));
  r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 8.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", with(lab.labels(), "reason", "read_only")), 1.0);
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

TEST(LatencyLab, FullFilesystemIsASkipNotAFailure) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(32);
  ASSERT_TRUE(lab.ok()) << lab.why();
  ASSERT_EQ(fill_to_enospc(lab.mnt / "filler"), ENOSPC);
  Ctx c;
  {
    auto probe = probe_on(lab, small(4));  // default fill threshold 0.95
    auto r = probe.run(Target::host(), c.ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(state_of(r.metrics, lab, "fill_threshold"), 1.0);
    EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 0.0);
  }
  {
    auto s = small(4);
    s.fill_threshold = 1.0;  // let it try: the probe file cannot be allocated
    auto probe = probe_on(lab, s);
    auto r = probe.run(Target::host(), c.ctx);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
    EXPECT_EQ(state_of(r.metrics, lab, "no_space"), 1.0);
    EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", with(lab.labels(), "reason", "no_space")), 1.0);
    EXPECT_FALSE(fs::exists(lab.mnt / ".fsaudit" / "latency.probe"));  // no partial file left behind
  }
  fs::remove(lab.mnt / "filler");
  ::sync();
  auto probe = probe_on(lab, small(4));
  auto r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 1.0);
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

// ENOSPC from a sample's own write (what a copy-on-write filesystem returns for every overwrite once
// it is full; here an ext4 whose probe file has holes, written into after the filesystem filled up):
// reported as the no_space state and skip, not a failure, the histogram kept; the next turn after
// space is freed samples again.
TEST(LatencyLab, EnospcFromTheSampleWriteIsASkipAndRecovers) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(32);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto s = small(4);
  s.fill_threshold = 1.0;  // past the preflight check: the write itself must meet the full filesystem
  auto probe = probe_on(lab, s);
  auto r = probe.run(Target::host(), c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  ASSERT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 4.0);
  // The probe file, its full size but every block a hole, then the filesystem filled to ENOSPC.
  const auto file = lab.mnt / ".fsaudit" / "latency.probe";
  ASSERT_EQ(::truncate(file.c_str(), 0), 0);
  ASSERT_EQ(::truncate(file.c_str(), 4 << 20), 0);
  ASSERT_EQ(fill_to_enospc(lab.mnt / "filler"), ENOSPC);
  r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(state_of(r.metrics, lab, "no_space"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", with(lab.labels(), "reason", "no_space")), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 4.0);  // kept, not grown
  fs::remove(lab.mnt / "filler");
  ::sync();
  r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 8.0);
  EXPECT_EQ(r.metrics.value("fsaudit_latency_sampler_skipped_total", with(lab.labels(), "reason", "no_space")), 1.0);
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

TEST(LatencyLab, HostBudgetExhaustedIsASkip) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto s = small(4);
  s.writes_per_second = 0.01;  // one turn of 4 samples (the burst), then one sample per 100 s
  auto probe = probe_on(lab, s);
  auto r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(state_of(r.metrics, lab, "ok"), 1.0);
  r = probe.run(Target::host(), c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok);
  EXPECT_EQ(state_of(r.metrics, lab, "io_budget"), 1.0);
  EXPECT_EQ(r.metrics.value("fsaudit_fsync_latency_seconds", lab.labels()), 4.0);
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

TEST(LatencyLab, DisabledSamplerRemovesItsProbeFile) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  Ctx c;
  auto probe = probe_on(lab, small(1));
  ASSERT_EQ(probe.run(Target::host(), c.ctx).outcome, Outcome::ok);
  ASSERT_TRUE(fs::exists(lab.mnt / ".fsaudit" / "latency.probe"));
  LatencyCleanupProbe cleanup(".fsaudit", only(lab.mnt), {});
  auto r = cleanup.run(Target::host(), c.ctx);
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
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}

namespace {

void write_to(const fs::path& p, const std::string& text, bool append = false) {
  std::ofstream out(p, append ? std::ios::app : std::ios::trunc);
  out << text;
  out.flush();
  if (!out) ADD_FAILURE() << "cannot write " << p;
}

// Counts in the kernel what a process issues: io_uring FSYNC submissions and fsync/fdatasync syscalls,
// through a private tracefs instance limited to the threads of the process and of its child processes
// (the sampler processes, which issue the samples) and the threads and processes they start.
// tracefs is mounted on a temp dir for the test and unmounted (the instance removed) on scope exit.
class FsyncTrace {
 public:
  FsyncTrace(const fs::path& dir, int pid) : mnt_(dir / "tracefs") {
    fs::create_directories(mnt_);
    if (::mount("nodev", mnt_.c_str(), "tracefs", 0, nullptr) != 0) {
      error_ = std::string("mount tracefs: ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
    inst_ = mnt_ / "instances" / ("fsaudit-latency-" + std::to_string(::getpid()));
    std::error_code ec;
    if (!fs::create_directory(inst_, ec)) {
      error_ = "cannot create tracefs instance " + inst_.string() + ": " + ec.message();
      inst_.clear();
      return;
    }
    write_to(inst_ / "tracing_on", "0");
    write_to(inst_ / "options/event-fork", "1");
    std::string tids;
    std::vector<int> procs{pid};
    for (const auto& e : fs::directory_iterator("/proc")) {
      auto name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream st(e.path() / "stat");
      std::string text((std::istreambuf_iterator<char>(st)), std::istreambuf_iterator<char>());
      auto close = text.rfind(')');
      int ppid = 0;
      char state = 0;
      if (close != std::string::npos && std::sscanf(text.c_str() + close + 2, "%c %d", &state, &ppid) == 2 && ppid == pid)
        procs.push_back(std::stoi(name));
    }
    ec.clear();
    for (int p : procs)
      for (auto it = fs::directory_iterator("/proc/" + std::to_string(p) + "/task", ec); !ec && it != fs::directory_iterator();
           it.increment(ec))
        tids += it->path().filename().string() + " ";
    write_to(inst_ / "set_event_pid", tids);
    write_to(inst_ / "events/io_uring/io_uring_submit_req/filter", "opcode == 3");  // IORING_OP_FSYNC
    write_to(inst_ / "events/io_uring/io_uring_submit_req/enable", "1");
    write_to(inst_ / "events/syscalls/sys_enter_fsync/enable", "1");
    write_to(inst_ / "events/syscalls/sys_enter_fdatasync/enable", "1");
    ok_ = true;
  }
  ~FsyncTrace() {
    if (!inst_.empty()) {
      std::error_code ec;
      write_to(inst_ / "tracing_on", "0");
      for (auto ev : {"io_uring/io_uring_submit_req", "syscalls/sys_enter_fsync", "syscalls/sys_enter_fdatasync"})
        write_to(inst_ / "events" / ev / "enable", "0");
      ::rmdir(inst_.c_str());
    }
    if (mounted_ && ::umount2(mnt_.c_str(), 0) != 0) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  void start() {
    write_to(inst_ / "trace", "");
    write_to(inst_ / "tracing_on", "1");
  }
  struct Counts {
    int uring_fsync = 0, fsync_syscalls = 0;
  };
  Counts stop() {
    write_to(inst_ / "tracing_on", "0");
    Counts c;
    std::ifstream in(inst_ / "trace");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (line.find("io_uring_submit_req") != std::string::npos) ++c.uring_fsync;
      else if (line.find("sys_fsync") != std::string::npos || line.find("sys_fdatasync") != std::string::npos)
        ++c.fsync_syscalls;
    }
    return c;
  }

 private:
  fs::path mnt_, inst_;
  bool mounted_ = false, ok_ = false;
  std::string error_;
};

// Distinct values of `label` over the sample lines of `name` in a scrape.
std::set<std::string> label_values(const std::string& text, const std::string& name, const std::string& label) {
  std::set<std::string> out;
  std::regex re("^" + name + R"(\{[^}]*\b)" + label + R"re(="([^"]*)")re");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) out.insert(m[1].str());
  return out;
}

std::size_t series_count(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line))
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) ++n;
  return n;
}

double sum_of(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  double s = 0;
  while (std::getline(in, line))
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) s += std::stod(line.substr(line.rfind(' ') + 1));
  return s;
}

}  // namespace

// Seven mounts on three device stacks: a btrfs (top level and two subvolumes, each mounted), a zfs-fuse
// pool (root dataset and two datasets), an ext4. The daemon runs three samplers, keeps one probe file
// per stack, and over half a minute issues no more fsyncs than its budget (2 writes/s host-wide, 1 per
// stack), counted by the kernel; then the whole scrape passes `promtool check metrics` without lint.
TEST(LatencyLab, DaemonSamplesEachDeviceStackOnceWithinTheBudget) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  // zfs-fuse is one per machine: wait for it before holding any loop device or mount.
  ft::ZfsFuse zf;
  ASSERT_TRUE(zf.ok()) << zf.error();
  TempDir td("fsaudit-latency-stacks");
  const fs::path T = td.path();
  LoopDevice lb(T, "btrfs.img", 256ull << 20), le(T, "ext4.img", 64ull << 20);
  ASSERT_TRUE(lb.ok() && le.ok());
  ft::must({"mkfs.btrfs", "-f", "-q", lb.device()});
  ft::must({"mkfs.ext4", "-q", "-F", le.device()});
  Mount top(lb.device(), T / "btrfs-top", "btrfs");
  ASSERT_TRUE(top.ok()) << top.error();
  ft::must({"btrfs", "subvolume", "create", (T / "btrfs-top/@a").string()});
  ft::must({"btrfs", "subvolume", "create", (T / "btrfs-top/@b").string()});
  Mount sa(lb.device(), T / "btrfs-a", "btrfs", "subvol=@a"), sb(lb.device(), T / "btrfs-b", "btrfs", "subvol=@b");
  Mount me(le.device(), T / "ext4", "ext4");
  for (auto* m : {&sa, &sb, &me}) ASSERT_TRUE(m->ok()) << m->dir() << ": " << m->error();

  std::ofstream(T / "zfs.img").close();
  fs::resize_file(T / "zfs.img", 96ull << 20);
  const std::string pool_name = "fslat" + std::to_string(::getpid());
  ft::ZfsPool pool(pool_name, {(T / "zfs.img").string()});
  ASSERT_TRUE(pool.ok()) << pool.error();
  // zfs-fuse sometimes answers "mountpoint or dataset is busy" while it is still mounting the pool
  // at its default place: try again for a few seconds.
  ft::Cmd set;
  for (int i = 0; i < 20; ++i) {
    set = ft::run({"zfs", "set", "mountpoint=" + (T / "zfs").string(), pool_name});
    if (set.ok()) break;
    ft::DaemonProcess::sleep_ms(500);
  }
  ASSERT_TRUE(set.ok()) << set.err << set.out;
  ft::must({"zfs", "create", pool_name + "/d1"});
  ft::must({"zfs", "create", pool_name + "/d2"});
  ASSERT_TRUE(fs::exists(T / "zfs/d2")) << "zfs-fuse did not mount the datasets";

  const std::vector<fs::path> mounts = {T / "btrfs-top", T / "btrfs-a", T / "btrfs-b", T / "ext4",
                                        T / "zfs",       T / "zfs/d1",  T / "zfs/d2"};
  int port = ft::free_port();
  std::ostringstream cfg;
  cfg << "listen: 127.0.0.1:" << port << "\nstate_dir: " << (T / "state").string()
      << "\ntargets:\n  discover: false\n  explicit:\n";
  for (const auto& m : mounts) cfg << "    - path: " << m.string() << "\n";
  cfg << "scrub:\n  observe_only: true\n"
      << "latency:\n  budget: {stack_writes_per_second: 1, writes_per_second: 2, bytes_per_second: 16MiB}\n";
  fs::create_directories(T / "state");
  // What an older fsaudit (one probe file per mount) left on a subvolume: removed by the sampler.
  fs::create_directories(T / "btrfs-a/.fsaudit");
  write_to(T / "btrfs-a/.fsaudit/latency.probe", std::string(1 << 20, 'x'));
  {
    ft::DaemonProcess d(T, cfg.str(), port);
    // Every stack has sampled (its probe file filled) before the count starts.
    auto text = d.wait_for(
        [&](const std::string& t) {
          if (ft::scrape_value(t, "fsaudit_latency_samplers") != 3) return false;
          auto ids = label_values(t, "fsaudit_fsync_latency_seconds_count", "stack");
          return ids.size() == 3 && std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
                   return ft::scrape_value(t, "fsaudit_fsync_latency_seconds_count", {{"stack", id}}) > 0;
                 });
        },
        90);
    EXPECT_EQ(ft::scrape_value(text, "fsaudit_latency_samplers"), 3) << ft::scrape_lines(text, "fsaudit_latency_stack_info");
    auto stacks = label_values(text, "fsaudit_fsync_latency_seconds_count", "stack");
    ASSERT_EQ(stacks.size(), 3u) << ft::scrape_lines(text, "fsaudit_fsync_latency_seconds_count") << d.log();
    EXPECT_EQ(series_count(text, "fsaudit_fsync_latency_seconds_count"), 3u);
    EXPECT_TRUE(stacks.count("zfs:" + pool_name)) << *stacks.begin();
    EXPECT_TRUE(stacks.count("block:" + fs::path(le.device()).filename().string()));
    EXPECT_EQ(series_count(text, "fsaudit_latency_stack_info"), 7u) << ft::scrape_lines(text, "fsaudit_latency_stack_info");
    EXPECT_EQ(label_values(text, "fsaudit_latency_stack_info", "stack"), stacks);
    // One probe file per stack, at the stack's root: btrfs top level, the pool's root dataset, the ext4.
    for (const auto& m : mounts) {
      bool rep = m == T / "btrfs-top" || m == T / "zfs" || m == T / "ext4";
      EXPECT_EQ(fs::exists(m / ".fsaudit/latency.probe"), rep) << m;
    }
    EXPECT_FALSE(fs::exists(T / "btrfs-a/.fsaudit")) << "the old per-mount probe file is removed with its dir";
    EXPECT_EQ(label_values(text, "fsaudit_fsync_latency_seconds_count", "target"),
              (std::set<std::string>{(T / "btrfs-top").string(), (T / "zfs").string(), (T / "ext4").string()}));

    // The budget, counted by the kernel over half a minute (the host budget binds from the first second).
    FsyncTrace trace(T, d.pid());
    ASSERT_TRUE(trace.ok()) << trace.error();
    // The sampler publishes every 5 s: the trace starts and stops right after a publish, so the
    // published counters cover the traced time (give or take a scrape).
    auto next_publish = [&](double seen) {
      std::string t;
      for (int i = 0; i < 200; ++i) {  // 20 s at most
        t = d.scrape();
        if (ft::scrape_value(t, "fsaudit_latency_fsyncs_total") != seen) break;
        ft::DaemonProcess::sleep_ms(100);
      }
      return t;
    };
    text = next_publish(ft::scrape_value(d.scrape(), "fsaudit_latency_fsyncs_total"));
    trace.start();
    const auto traced_from = std::chrono::steady_clock::now();
    double own0 = ft::scrape_value(text, "fsaudit_latency_fsyncs_total");
    double hist0 = sum_of(text, "fsaudit_fsync_latency_seconds_count");
    ft::DaemonProcess::sleep_ms(29'000);
    text = next_publish(ft::scrape_value(d.scrape(), "fsaudit_latency_fsyncs_total"));
    auto counts = trace.stop();
    const double traced = std::chrono::duration<double>(std::chrono::steady_clock::now() - traced_from).count();
    double own = ft::scrape_value(text, "fsaudit_latency_fsyncs_total") - own0;
    double hist = sum_of(text, "fsaudit_fsync_latency_seconds_count") - hist0;
    // 2/s host-wide plus a burst of 2; three stacks want 3/s, so the host budget binds.
    EXPECT_GE(traced, 29.0);
    EXPECT_LE(counts.uring_fsync, 2 * traced + 2 + 2) << "fsaudit's own count: " << own << " in " << traced << " s";
    EXPECT_GE(counts.uring_fsync, 30) << "the budget is meant to be used, not only capped";
    EXPECT_NEAR(own, counts.uring_fsync, 4);  // fsaudit's counter agrees with the kernel
    EXPECT_NEAR(hist, counts.uring_fsync, 4);
    // fsync(2) calls are not the sampler's (its fills are done): other probes' state files.
    std::cout << "fsyncs in " << traced << " s: io_uring FSYNC " << counts.uring_fsync << ", fsync/fdatasync syscalls "
              << counts.fsync_syscalls << ", fsaudit_latency_fsyncs_total +" << own << "\n";
    for (const auto& st : stacks)
      EXPECT_LE(ft::scrape_value(text, "fsaudit_fsync_latency_seconds_count", {{"stack", st}}), 1.0 * 90 + 2) << st;

    // The whole scrape is valid exposition, and no lint message is about a latency metric. (Lint of
    // other probes' metrics is printed, not asserted here: their own tests own it.)
    write_to(T / "scrape.txt", text);
    auto check = ft::run({"sh", "-c", "promtool check metrics < " + (T / "scrape.txt").string() + " 2>&1"});
    EXPECT_TRUE(check.exit_code == 0 || check.exit_code == 3) << "not valid exposition: " << check.out;
    std::regex latency_metric("fsaudit_(fsync_latency|latency|direct_read)");
    std::istringstream lint(check.out);
    for (std::string line; std::getline(lint, line);) {
      EXPECT_FALSE(std::regex_search(line, latency_metric)) << line;
      std::cout << "promtool lint (not latency): " << line << "\n";
    }
    EXPECT_EQ(d.stop(), 0);
  }
}

TEST(LatencyLab, DaemonScrapeShowsHistogramThenReadOnlySkip) {
  FSAUDIT_REQUIRE_LAB_OR_SKIP();
  LabFs lab(64);
  ASSERT_TRUE(lab.ok()) << lab.why();
  TempDir dir("fsaudit-latency-daemon");
  int port = ft::free_port();
  std::string yaml = "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir.path() / "state").string() +
                     "\ntargets:\n  discover: false\n  explicit:\n    - path: " + lab.mnt.string() +
                     "\nlatency:\n  samples_per_run: 2\n  budget: {stack_writes_per_second: 4}\n";
  fs::create_directories(dir.path() / "state");
  {
    ft::DaemonProcess d(dir.path(), yaml, port);
    const std::map<std::string, std::string> l{{"target", lab.mnt.string()}, {"stack", lab.stack()}};
    // The probe's samples and its run's success are published apart: wait for both (raced under ASan).
    auto text = d.wait_for(
        [&](const std::string& t) {
          return ft::scrape_value(t, "fsaudit_fsync_latency_seconds_count", l) > 0 &&
                 !std::isnan(ft::scrape_value(t, "fsaudit_probe_success", {{"probe", "latency"}, {"target", "host"}}));
        },
        90);
    ASSERT_GT(ft::scrape_value(text, "fsaudit_fsync_latency_seconds_count", l), 0)
        << ft::scrape_lines(text, "fsaudit_fsync_latency_seconds_count") << d.log();
    EXPECT_GT(ft::scrape_value(text, "fsaudit_fsync_latency_seconds_sum", l), 0);
    EXPECT_NE(text.find("# TYPE fsaudit_fsync_latency_seconds summary\n"), std::string::npos);
    EXPECT_EQ(ft::scrape_value(text, "fsaudit_probe_success", {{"probe", "latency"}, {"target", "host"}}), 1);
    // The default (summary) exposition: no bucket at all, not even +Inf (the alert reads the window
    // p99), and no per-stack state set.
    EXPECT_GT(ft::scrape_value(text, "fsaudit_fsync_latency_window_seconds", with(l, "percentile", "99")), 0)
        << ft::scrape_lines(text, "fsaudit_fsync_latency_window_seconds");
    EXPECT_EQ(text.find("fsaudit_fsync_latency_seconds_bucket"), std::string::npos)
        << ft::scrape_lines(text, "fsaudit_fsync_latency_seconds_bucket");
    EXPECT_TRUE(std::isnan(ft::scrape_value(text, "fsaudit_latency_sampler_state")))
        << ft::scrape_lines(text, "fsaudit_latency_sampler_state");
    ASSERT_TRUE(lab.mount->remount("ro"));
    text = d.wait_for(
        [&](const std::string& t) {
          return ft::scrape_value(t, "fsaudit_latency_sampler_skipped_total", with(l, "reason", "read_only")) >= 1;
        },
        90);
    EXPECT_GE(ft::scrape_value(text, "fsaudit_latency_sampler_skipped_total", with(l, "reason", "read_only")), 1)
        << ft::scrape_lines(text, "fsaudit_latency_sampler_skipped_total") << d.log();
    EXPECT_TRUE(d.running());
    EXPECT_EQ(d.stop(), 0);
  }
  lab.mount->remount("rw");
  EXPECT_TRUE(ProbeFile::remove(lab.mnt / ".fsaudit").ok());
}
