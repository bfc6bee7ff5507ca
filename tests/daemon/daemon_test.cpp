// The real fsauditd binary, end to end: config -> scheduler -> probes -> /metrics, sd_notify, signals.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <atomic>
#include <mutex>
#include <thread>

#include "tests/support/daemon_process.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit::testing;
using namespace std::chrono_literals;

namespace {

// A NOTIFY_SOCKET the test owns, as systemd's would be. A thread drains it all the time, as systemd
// does (a full datagram queue would block the sender).
class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ADD_FAILURE() << "bind notify socket";
    timeval tv{0, 100000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    reader_ = std::thread([this] {
      while (!done_) {
        char buf[4096];
        ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
        if (n > 0) {
          std::lock_guard l(mu_);
          received_ += std::string(buf, static_cast<size_t>(n)) + "\n--\n";
        }
      }
    });
  }
  ~NotifySocket() {
    done_ = true;
    reader_.join();
    ::close(fd_);
  }
  bool wait_for(const std::string& needle, int timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (received().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(50ms);
    }
    return received().find(needle) != std::string::npos;
  }
  std::string received() const {
    std::lock_guard l(mu_);
    return received_;
  }

 private:
  int fd_ = -1;
  std::atomic<bool> done_{false};
  mutable std::mutex mu_;
  std::string received_;
  std::thread reader_;
};

// The daemon under test watches only the root filesystem, by name, and writes nothing: the
// host's other mounts (other tests' loop filesystems, a busy zfs-fuse) must not change its results.
const char kQuietHost[] =
    "targets: {discover: false, explicit: [{path: /, name: /}]}\n"
    "latency: {enabled: false}\nscrub: {enabled: false}\ndbus_address: none\n";

// `zfs` is the probe line for the zfs probe: off unless a test gives it one (with its own tools:).
std::string base_config(int port, const std::filesystem::path& state,
                        const std::string& zfs = "  zfs: {enabled: false}\n") {
  return "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + state.string() + "\n" + kQuietHost +
         "probes:\n  capacity: {interval: 1s, jitter: 0s}\n  mount: {interval: 1s, jitter: 0s}\n"
         // READY waits for every first run: no staggered start, and nothing that asks the host's
         // zpool (a zfs-fuse busy with another test's pool) unless the test is about that.
         "  setup: {enabled: false}\n" + zfs;
}

}  // namespace

TEST(Daemon, ServesMetricsNotifiesSystemdReloadsAndStops) {
  TempDir dir;
  NotifySocket notify(dir / "notify.sock");
  int port = free_port();
  const auto born = std::chrono::steady_clock::now();
  DaemonProcess d(dir.path(), base_config(port, dir / "state"), port, {},
                  {{"NOTIFY_SOCKET", (dir / "notify.sock").string()}, {"WATCHDOG_USEC", "1000000"}});

  // Capacity of a real filesystem: the root filesystem is always a target.
  auto text = d.wait_for_metric("fsaudit_filesystem_size_bytes", {{"target", "/"}}, 30);
  double size = scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", "/"}});
  ASSERT_FALSE(std::isnan(size)) << d.log() << text;
  EXPECT_GT(size, 1e6);
  EXPECT_GE(scrape_value(text, "fsaudit_filesystem_avail_bytes", {{"target", "/"}}), 0);
  // Succeeding, a per-filesystem probe has no fsaudit_probe_success series (only while it fails).
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", {{"probe", "capacity"}, {"target", "/"}})))
      << scrape_lines(text, "fsaudit_probe_success");
  EXPECT_EQ(scrape_value(text, "fsaudit_build_info"), 1);

  ASSERT_TRUE(notify.wait_for("READY=1", 60)) << notify.received() << d.log() << d.scrape();
  ASSERT_TRUE(notify.wait_for("WATCHDOG=1", 5)) << notify.received();
  EXPECT_NE(notify.received().find("STATUS="), std::string::npos);

  // A broken config on SIGHUP is rejected; the daemon keeps serving with the old one.
  write_text(d.config_path(), "listen: 127.0.0.1:" + std::to_string(port) + "\nprobes:\n  capacity: {intervall: 1s}\n");
  d.signal(SIGHUP);
  text = d.wait_for([](const std::string& t) { return scrape_value(t, "fsaudit_config_last_reload_success") == 0; }, 10);
  EXPECT_EQ(scrape_value(text, "fsaudit_config_last_reload_success"), 0) << d.log();
  EXPECT_NE(d.log().find("config reload rejected, keeping the running config"), std::string::npos) << d.log();
  EXPECT_NE(d.log().find("did you mean 'interval'"), std::string::npos) << d.log();
  auto ts1 = scrape_value(d.scrape(), "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  std::this_thread::sleep_for(2500ms);
  auto ts2 = scrape_value(d.scrape(), "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  EXPECT_GT(ts2, ts1) << "probes stopped running after a rejected reload";
  EXPECT_TRUE(d.running());

  // A valid config on SIGHUP is applied: the mount probe disappears.
  write_text(d.config_path(), "listen: 127.0.0.1:" + std::to_string(port) + "\nstate_dir: " + (dir / "state").string() + "\n" +
                                  kQuietHost + "probes:\n  capacity: {interval: 1s}\n  mount: {enabled: false}\n");
  d.signal(SIGHUP);
  text = d.wait_for([](const std::string& t) {
    return scrape_value(t, "fsaudit_config_last_reload_success") == 1 &&
           std::isnan(scrape_value(t, "fsaudit_filesystem_readonly"));
  }, 10);
  EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_filesystem_readonly"))) << d.log();
  EXPECT_FALSE(std::isnan(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", "/"}})));

  // SIGTERM: exit 0 within 5 s.
  auto t0 = std::chrono::steady_clock::now();
  int rc = d.stop(5);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(rc, 0) << d.log();
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(notify.wait_for("STOPPING=1", 1)) << notify.received();
  // Watchdog pings come at half of WATCHDOG_USEC, not on every loop turn.
  auto all = notify.received();
  size_t pings = 0;
  for (size_t p = 0; (p = all.find("WATCHDOG=1", p)) != std::string::npos; ++p) ++pings;
  EXPECT_GE(pings, 5u);
  // At most one per half WATCHDOG_USEC over the daemon's life (which a loaded machine stretches), and a few more.
  const double lived = std::chrono::duration<double>(std::chrono::steady_clock::now() - born).count();
  EXPECT_LE(static_cast<double>(pings), 2 * lived + 5) << "in " << lived << " s";
}

// The mount probe finds the root's entry unchanged run after run and answers "same as last": the
// daemon keeps the metrics it published, it does not replace them with nothing.
// The daemon binary runs on the malloc its build links, with the settings the binary carries
// (fsauditd/jemalloc_conf.cpp), and says which on /metrics and in its log.
TEST(Daemon, RunsOnTheMallocItsBuildLinksAndSaysWhich) {
  TempDir dir;
  int port = free_port();
  DaemonProcess d(dir.path(), base_config(port, dir / "state"), port, {}, {{"MALLOC_CONF", ""}});
  auto text = d.wait_for_metric("fsaudit_build_info", {{"allocator", FSAUDIT_EXPECT_ALLOCATOR}}, 30);
  EXPECT_EQ(scrape_value(text, "fsaudit_build_info", {{"allocator", FSAUDIT_EXPECT_ALLOCATOR}}), 1)
      << scrape_lines(text, "fsaudit_build_info");
  std::ifstream in("/proc/" + std::to_string(d.pid()) + "/maps");
  const std::string maps((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(maps.empty());
  const bool mapped = maps.find("libjemalloc") != std::string::npos;
  if (std::string(FSAUDIT_EXPECT_ALLOCATOR) == "jemalloc") {
    EXPECT_TRUE(mapped) << maps;
    EXPECT_NE(d.log().find("malloc: jemalloc 5."), std::string::npos) << d.log();
    EXPECT_NE(d.log().find("(narenas 1, tcache off, dirty_decay_ms 0, muzzy_decay_ms 0)"), std::string::npos)
        << d.log();
  } else {
    EXPECT_FALSE(mapped) << maps;
    EXPECT_NE(d.log().find("malloc: glibc"), std::string::npos) << d.log();
  }
}

TEST(Daemon, RunsThatFindNothingNewKeepTheirMetricsPublished) {
  TempDir dir;
  int port = free_port();
  DaemonProcess d(dir.path(), base_config(port, dir / "state"), port);
  auto text = d.wait_for([](const std::string& t) {
    return scrape_value(t, "fsaudit_probe_runs_total", {{"probe", "mount"}}) >= 5;
  }, 30);
  ASSERT_GE(scrape_value(text, "fsaudit_probe_runs_total", {{"probe", "mount"}}), 5) << d.log();
  for (int i = 0; i < 3; ++i) {  // across several more runs (1 s interval)
    std::this_thread::sleep_for(700ms);
    text = d.scrape();
    EXPECT_EQ(scrape_value(text, "fsaudit_filesystem_info", {{"target", "/"}}), 1) << scrape_lines(text, "fsaudit_filesystem");
    EXPECT_FALSE(std::isnan(scrape_value(text, "fsaudit_filesystem_readonly", {{"target", "/"}})));
    EXPECT_GT(scrape_value(text, "fsaudit_filesystem_size_bytes", {{"target", "/"}}), 0);
    EXPECT_TRUE(std::isnan(scrape_value(text, "fsaudit_probe_success", {{"probe", "mount"}, {"target", "/"}})))
        << scrape_lines(text, "fsaudit_probe_success");
  }
  EXPECT_EQ(d.stop(5), 0);
}

TEST(Daemon, HungProbeIsReportedAndOthersKeepRunning) {
  // The zfs probe's tool is a zpool that never answers: the probe must time out with its reason
  // while capacity keeps updating.
  TempDir dir;
  auto fake = dir / "zpool";
  write_text(fake, "#!/bin/sh\nexec sleep 600\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  int port = free_port();
  DaemonProcess d(dir.path(),
                  base_config(port, dir / "state", "  zfs: {interval: 1s, timeout: 1s, jitter: 0s}\n") + "tools: {zpool: " +
                      fake.string() + "}\n",
                  port);
  auto text = d.wait_for([](const std::string& t) {
    return scrape_value(t, "fsaudit_probe_success", {{"probe", "zfs"}}) == 0 &&
           scrape_value(t, "fsaudit_probe_timeouts_total", {{"probe", "zfs"}}) >= 2;
  }, 30);
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_success", {{"probe", "zfs"}}), 0) << d.log() << scrape_lines(text, "fsaudit_probe");
  EXPECT_NE(scrape_lines(text, "fsaudit_probe_failure_info").find("probe=\"zfs\""), std::string::npos)
      << scrape_lines(text, "fsaudit_probe_failure_info");
  EXPECT_NE(d.log().find("probe zfs on host failed"), std::string::npos) << d.log();
  auto ts1 = scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  std::this_thread::sleep_for(2500ms);
  auto ts2 = scrape_value(d.scrape(), "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  EXPECT_GT(ts2, ts1) << "capacity stalled behind the hung zpool";
  // The runner kills zpool at the run's deadline, the same moment the scheduler times the run out:
  // every run still counts once, as one failure, whichever of the two came first.
  text = d.scrape();
  double runs = scrape_value(text, "fsaudit_probe_runs_total", {{"probe", "zfs"}});
  double failures = scrape_value(text, "fsaudit_probe_failures_total", {{"probe", "zfs"}});
  EXPECT_GE(runs, 2) << scrape_lines(text, "fsaudit_probe");
  EXPECT_EQ(failures, runs) << scrape_lines(text, "fsaudit_probe");
  EXPECT_LE(scrape_value(text, "fsaudit_probe_timeouts_total", {{"probe", "zfs"}}), runs);
  EXPECT_EQ(d.stop(5), 0);
}

TEST(Daemon, ReloadStormWhileRunsAreInFlight) {
  // Every run holds the config it started with; a reload swaps in a new one. Under the sanitizer
  // build a run reading a config the reload freed is a hard failure; here the daemon must also
  // keep serving and keep its accounting.
  TempDir dir;
  for (const char* n : {"zpool-a", "zpool-b"}) {
    write_text(dir / n, "#!/bin/sh\nsleep 0.2\necho 'no pools available'\n");
    std::filesystem::permissions(dir / n, std::filesystem::perms::owner_all);
  }
  int port = free_port();
  auto yaml = [&](const char* tool) {
    return base_config(port, dir / "state", "  zfs: {interval: 1s, timeout: 5s, jitter: 0s}\n") + "tools: {zpool: " +
           (dir / tool).string() + "}\n";
  };
  DaemonProcess d(dir.path(), yaml("zpool-a"), port);
  d.wait_for_metric("fsaudit_probe_success", {{"probe", "zfs"}}, 30);
  for (int i = 0; i < 60; ++i) {
    write_text(d.config_path(), yaml(i % 2 ? "zpool-a" : "zpool-b"));
    d.signal(SIGHUP);
    std::this_thread::sleep_for(50ms);
  }
  auto text = d.wait_for([](const std::string& t) { return scrape_value(t, "fsaudit_config_last_reload_success") == 1; }, 10);
  ASSERT_TRUE(d.running()) << d.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_config_last_reload_success"), 1) << d.log();
  double ts1 = scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}});
  // The probes' totals are published a second apart at most (more past the probe budget).
  text = d.wait_for([&](const std::string& t) {
    return scrape_value(t, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}}) > ts1 &&
           scrape_value(t, "fsaudit_probe_runs_total", {{"probe", "zfs"}}) >= 2;
  }, 15);
  EXPECT_GT(scrape_value(text, "fsaudit_probe_last_run_timestamp_seconds", {{"probe", "capacity"}}), ts1);
  EXPECT_GE(scrape_value(text, "fsaudit_probe_runs_total", {{"probe", "zfs"}}), 2) << scrape_lines(text, "fsaudit_probe");
  EXPECT_EQ(d.stop(5), 0) << d.log();
}

TEST(Daemon, CheckConfigExitCodes) {
  TempDir dir;
  write_text(dir / "good.yaml", "listen: 127.0.0.1:9717\n");
  write_text(dir / "bad.yaml", "listen: 127.0.0.1:9717\nworkers: lots\n");
  auto good = run({fsauditd_binary(), "--check-config", (dir / "good.yaml").string()});
  EXPECT_EQ(good.exit_code, 0);
  EXPECT_EQ(good.out, (dir / "good.yaml").string() + ": OK\n");
  auto bad = run({fsauditd_binary(), "--check-config", (dir / "bad.yaml").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, (dir / "bad.yaml").string() + ":2:10: key 'workers': expected a whole number, found \"lots\"\n");
  auto shipped = run({fsauditd_binary(), "--check-config", std::string(FSAUDIT_SOURCE_DIR) + "/config/fsaudit.yaml"});
  EXPECT_EQ(shipped.exit_code, 0) << shipped.err;
}

// The helper flag is for fsauditd's own helpers (started with their pipes on fds 3 and 4): typed by
// hand, or naming no helper, it says so and exits 2 rather than starting a daemon or hanging.
TEST(Daemon, HelperFlagByHandIsRefused) {
  for (auto args : {std::vector<std::string>{"--fsaudit-helper", "fsaudit-statfs"},
                    std::vector<std::string>{"--fsaudit-helper", "no-such-helper"},
                    std::vector<std::string>{"--fsaudit-helper"}}) {
    args.insert(args.begin(), fsauditd_binary());
    auto r = run(args, 30);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << (args.size() > 2 ? args[2] : "") << ": " << r.err;
    EXPECT_NE(r.err.find("started by fsauditd itself"), std::string::npos) << r.err;
  }
}

// `tools:` names binaries fsauditd runs: a config others can change is refused (like sshd's
// StrictModes), with the file, its owner and mode and the fix; --check-config says the same.
TEST(Daemon, RefusesAConfigOthersCanWrite) {
  TempDir dir;
  auto f = dir / "c.yaml";
  write_text(f, "listen: 127.0.0.1:" + std::to_string(free_port()) + "\nstate_dir: " + (dir / "state").string() + "\n");
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(f.c_str(), 0666), 0);
  for (auto args : {std::vector<std::string>{"--check-config", f.string()}, std::vector<std::string>{"--config", f.string()}}) {
    args.insert(args.begin(), fsauditd_binary());
    auto r = run(args, 180);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("refusing config " + f.string() + ": " + f.string() + " (owner uid " +
                         std::to_string(::geteuid()) + ", mode 0666) is writable by group or others: fix with `chmod go-w " +
                         f.string() + "`"),
              std::string::npos)
        << r.err;
  }
  ASSERT_EQ(::chmod(f.c_str(), 0644), 0);
  EXPECT_EQ(run({fsauditd_binary(), "--check-config", f.string()}).exit_code, 0);
  if (::geteuid() != 0) return;
  // Root trusts root only; an unprivileged daemon also trusts its own user, nobody else.
  ASSERT_EQ(::chown(f.c_str(), 4242, 4242), 0);
  auto r = run({fsauditd_binary(), "--check-config", f.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is owned by uid 4242, not root: fix with `chown root:root " + f.string() + "`"), std::string::npos) << r.err;
  r = run({"setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", fsauditd_binary(), "--check-config", f.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run({"setpriv", "--reuid=4343", "--regid=4343", "--clear-groups", fsauditd_binary(), "--check-config", f.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is owned by uid 4242, not root or uid 4343"), std::string::npos) << r.err;
}

TEST(Daemon, RefusesToStartOnABadConfigWithTheReason) {
  TempDir dir;
  write_text(dir / "c.yaml", "listne: 127.0.0.1:1\n");
  auto r = run({fsauditd_binary(), "--config", (dir / "c.yaml").string()}, 10);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("c.yaml:1:1: key 'listne': unknown key (did you mean 'listen'?)"), std::string::npos) << r.err;
}

TEST(Daemon, PortInUseIsAClearError) {
  TempDir dir;
  int port = free_port();
  DaemonProcess first(dir.path(), base_config(port, dir / "state"), port);
  first.wait_for_metric("fsaudit_build_info");
  TempDir dir2;
  write_text(dir2 / "c.yaml", base_config(port, dir2 / "state"));
  auto r = run({fsauditd_binary(), "--config", (dir2 / "c.yaml").string()}, 10);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << r.err;
}

// The zfs and scrub probes both run `zpool status` (text, on a zpool without -j/-p), at the same
// moment in --once and in a daemon's first cycle. They used to share the runner's key for that
// command, so one of them failed as "previous run of the same command is still running". The
// zpool here answers slowly (0.5 s) with a real capture whose last pool is UNAVAIL: both probes
// report every pool, and neither fails.
TEST(Daemon, OnceZfsAndScrubProbesEachRunZpoolStatusAndReportAnUnavailPool) {
  TempDir dir;
  auto status = fixtures_dir() / "zfs/zfs-fuse-status-last-pool-unavail-no-errors-line.txt";
  write_text(dir / "zpool",
             "#!/bin/sh\n"
             "case \"$1 $2\" in\n"
             "  'status ') sleep 0.5; grep -v '^# source:' '" + status.string() + "' ;;\n"
             "  'status '*) echo \"invalid option '$2'\" >&2; exit 2 ;;\n"
             "  'list -Hp') echo \"invalid option 'p'\" >&2; exit 2 ;;\n"
             "  'list -H') case \"$4\" in *fragmentation*) echo 'bad property list' >&2; exit 2 ;; esac\n"
             "    printf 'fsauditlab4010\\t123M\\t592K\\t122M\\t0%%\\tONLINE\\n"
             "fsauditscale9085\\t-\\t-\\t-\\t-\\tFAULTED\\n' ;;\n"
             "  *) echo \"unexpected: $*\" >&2; exit 2 ;;\n"
             "esac\n");
  std::filesystem::permissions(dir / "zpool", std::filesystem::perms::owner_all);
  write_text(dir / "c.yaml", "state_dir: " + (dir / "state").string() + "\n" +
                                 "targets: {discover: false, explicit: [{path: /, name: /}]}\n"
                                 "latency: {enabled: false}\ndbus_address: none\n"
                                 "scrub: {filesystems: [zfs], observe_only: true}\n"
                                 "probes:\n  setup: {enabled: false}\n"
                                 "tools: {zpool: " + (dir / "zpool").string() + "}\n");
  auto r = run({fsauditd_binary(), "--config", (dir / "c.yaml").string(), "--once"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(scrape_value(r.out, "fsaudit_probe_success", {{"probe", "zfs"}}), 1)
      << scrape_lines(r.out, "fsaudit_probe_failure_info") << r.err;
  EXPECT_EQ(scrape_value(r.out, "fsaudit_probe_success", {{"probe", "scrub"}}), 1)
      << scrape_lines(r.out, "fsaudit_probe_failure_info") << r.err;
  EXPECT_EQ(scrape_value(r.out, "fsaudit_zfs_pool_state", {{"pool", "fsauditscale9085"}, {"state", "unavail"}}), 1)
      << scrape_lines(r.out, "fsaudit_zfs_pool_state");
  EXPECT_EQ(scrape_value(r.out, "fsaudit_zfs_pool_state", {{"pool", "fsauditlab4010"}, {"state", "online"}}), 1);
  EXPECT_EQ(r.err.find("still running"), std::string::npos) << r.err;
}

TEST(Daemon, OnceRunsEveryProbeAndPrintsMetrics) {
  TempDir dir;
  write_text(dir / "c.yaml", "state_dir: " + (dir / "state").string() + "\n" + kQuietHost);
  auto r = run({fsauditd_binary(), "--config", (dir / "c.yaml").string(), "--once"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::isnan(scrape_value(r.out, "fsaudit_filesystem_size_bytes", {{"target", "/"}}))) << r.out;
}

// The probe budget in the real daemon: one filesystem whose per-filesystem probes want at least 2 runs
// a second (capacity and mount every second, ext4/xfs/btrfs if / is one) under a ceiling of 1: every
// per-filesystem interval is stretched by the exported factor, and the runs really slow down to it.
TEST(Daemon, TheProbeBudgetStretchesPerFilesystemIntervalsAndSaysBy) {
  TempDir dir;
  int port = free_port();
  DaemonProcess d(dir.path(), base_config(port, dir / "state") + "probe_budget: {runs_per_second: 1}\n", port);
  auto text = d.wait_for([](const std::string& t) {
    return scrape_value(t, "fsaudit_probe_runs_total", {{"probe", "mount"}}) >= 1;
  }, 30);
  double stretch = scrape_value(text, "fsaudit_probe_budget_stretch_ratio", {});
  ASSERT_GE(stretch, 2.0) << d.log();
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_interval_seconds", {{"probe", "mount"}}), stretch);
  EXPECT_EQ(scrape_value(text, "fsaudit_probe_interval_seconds", {{"probe", "capacity"}}), stretch);
  double m0 = scrape_value(text, "fsaudit_probe_runs_total", {{"probe", "mount"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(stretch * 3000)));
  double runs = scrape_value(d.scrape(), "fsaudit_probe_runs_total", {{"probe", "mount"}}) - m0;
  EXPECT_GE(runs, 2) << "three stretched intervals";
  EXPECT_LE(runs, 4) << "at the 1 s configured, it would have been " << stretch * 3;
  EXPECT_NE(d.log().find("probe_budget.runs_per_second is 1: every per-filesystem interval x"), std::string::npos)
      << d.log();
  EXPECT_EQ(d.stop(5), 0);
}
