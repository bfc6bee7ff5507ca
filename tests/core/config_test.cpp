#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;
using namespace std::chrono_literals;

namespace {
std::string error_of(const std::string& yaml) {
  try {
    config::parse_config(yaml, "/etc/fsaudit/fsaudit.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(Config, DefaultsWithoutAFile) {
  auto c = config::default_config();
  EXPECT_EQ(c.listen_address, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 9717);
  EXPECT_EQ(c.state_dir, "/var/lib/fsaudit");
  EXPECT_TRUE(c.targets.discover);
  EXPECT_EQ(c.schedule("capacity").interval, 30s);
  EXPECT_TRUE(c.schedule("zfs").enabled);
}

TEST(Config, ReadsEveryTopLevelKey) {
  auto c = config::parse_config(R"(
listen: 0.0.0.0:9900
state_dir: /srv/state
log_level: debug
workers: 6
host: {procfs: /host/proc, sysfs: /host/sys, devfs: /host/dev, rootfs: /host}
tools: {zpool: /opt/zfs/bin/zpool}
targets:
  discover: true
  include: ["/srv/*", "/"]
  exclude: ["/srv/tmp"]
  explicit:
    - path: /data
      name: data
probes:
  capacity: {interval: 1m, jitter: 5s, timeout: 15s}
  zfs: {enabled: false}
)", "test.yaml");
  EXPECT_EQ(c.listen_address, "0.0.0.0");
  EXPECT_EQ(c.listen_port, 9900);
  EXPECT_EQ(c.state_dir, "/srv/state");
  EXPECT_EQ(c.workers, 6);
  EXPECT_EQ(c.host.procfs, "/host/proc");
  EXPECT_EQ(c.tools.at("zpool"), "/opt/zfs/bin/zpool");
  EXPECT_EQ(c.targets.include.size(), 2u);
  ASSERT_EQ(c.targets.explicit_targets.size(), 1u);
  EXPECT_EQ(c.targets.explicit_targets[0].name, "data");
  EXPECT_EQ(c.schedule("capacity").interval, 60s);
  EXPECT_EQ(c.schedule("capacity").jitter, 5s);
  EXPECT_FALSE(c.schedule("zfs").enabled);
}

TEST(Config, UnknownKeySuggestsClosest) {
  EXPECT_EQ(error_of("probes:\n  capacity:\n    intervall: 30s\n"),
            "/etc/fsaudit/fsaudit.yaml:3:5: key 'probes.capacity.intervall': unknown key (did you mean 'interval'?); "
            "remove it or use one of: enabled, interval, jitter, timeout");
}

TEST(Config, UnknownTopLevelKey) {
  auto e = error_of("listen: 127.0.0.1:9717\nstate_dri: /var/lib/fsaudit\n");
  EXPECT_EQ(e.rfind("/etc/fsaudit/fsaudit.yaml:2:1: key 'state_dri': unknown key (did you mean 'state_dir'?)", 0), 0u)
      << e;
}

TEST(Config, UnknownProbeName) {
  EXPECT_EQ(error_of("probes:\n  btfrs: {interval: 30s}\n"),
            "/etc/fsaudit/fsaudit.yaml:2:3: key 'probes.btfrs': unknown name (did you mean 'btrfs'?); known: capacity, "
            "mount, zfs, btrfs, bcachefs, xfs, ext4, md, disk, smart, kernel_log, scrub, setup");
}

TEST(Config, WrongTypeNamesLineAndColumn) {
  EXPECT_EQ(error_of("workers: many\n"),
            "/etc/fsaudit/fsaudit.yaml:1:10: key 'workers': expected a whole number, found \"many\"");
  EXPECT_EQ(error_of("targets:\n  include: {a: b}\n"),
            "/etc/fsaudit/fsaudit.yaml:2:12: key 'targets.include': expected a list of strings");
  EXPECT_EQ(error_of("targets: [a, b]\n"),
            "/etc/fsaudit/fsaudit.yaml:1:10: key 'targets': expected a mapping of keys (key: value), found a list");
}

TEST(Config, OutOfRangeSaysTheRange) {
  EXPECT_EQ(error_of("workers: 500\n"),
            "/etc/fsaudit/fsaudit.yaml:1:10: key 'workers': 500 is out of range; use a value from 1 to 64");
  EXPECT_EQ(error_of("probes:\n  mount: {interval: 10ms}\n"),
            "/etc/fsaudit/fsaudit.yaml:2:21: key 'probes.mount.interval': duration 10ms is out of range; use a value "
            "from 100ms to 31d");
}

// The series budget's options (issue 33): the lean exposition is the default, more is opt-in.
TEST(Config, SeriesDetailOptionsDefaultLeanAndNameTheKeyWhenWrong) {
  auto c = config::default_config();
  EXPECT_EQ(c.latency.detail, "summary");
  EXPECT_EQ(c.setup.detail, "compact");
  auto full = config::parse_config("latency: {detail: compact}\nsetup: {detail: full}\n", "x.yaml");
  EXPECT_EQ(full.latency.detail, "compact");
  EXPECT_EQ(full.setup.detail, "full");
  EXPECT_NE(error_of("latency:\n  detail: histogram\n").find("fsaudit.yaml:2:11: key 'latency.detail'"), std::string::npos)
      << error_of("latency:\n  detail: histogram\n");
  EXPECT_NE(error_of("setup:\n  detail: rules\n").find("fsaudit.yaml:2:11: key 'setup.detail'"), std::string::npos)
      << error_of("setup:\n  detail: rules\n");
  EXPECT_EQ(c.xfs.detail, "compact");
  EXPECT_FALSE(c.xfs.diagnostic_series());
  EXPECT_TRUE(config::parse_config("xfs: {detail: full}\n", "x.yaml").xfs.diagnostic_series());
  EXPECT_NE(error_of("xfs:\n  detail: errors\n").find("fsaudit.yaml:2:11: key 'xfs.detail'"), std::string::npos)
      << error_of("xfs:\n  detail: errors\n");
  EXPECT_FALSE(c.zfs.full_detail());
  EXPECT_TRUE(config::parse_config("zfs: {detail: full}\n", "x.yaml").zfs.full_detail());
  EXPECT_NE(error_of("zfs:\n  detail: states\n").find("fsaudit.yaml:2:11: key 'zfs.detail'"), std::string::npos)
      << error_of("zfs:\n  detail: states\n");
  EXPECT_FALSE(c.capacity.free_bytes_series());
  EXPECT_FALSE(c.ext4.warning_series());
  EXPECT_FALSE(c.btrfs.full());
  auto more = config::parse_config(
      "capacity: {detail: full}\next4: {detail: full}\nbtrfs: {detail: full}\n", "x.yaml");
  EXPECT_TRUE(more.capacity.free_bytes_series());
  EXPECT_TRUE(more.ext4.warning_series());
  EXPECT_TRUE(more.btrfs.full());
  for (const char* section : {"capacity", "ext4", "btrfs"}) {
    auto e = error_of(std::string(section) + ":\n  detail: all\n");
    EXPECT_NE(e.find("fsaudit.yaml:2:11: key '" + std::string(section) + ".detail'"), std::string::npos) << e;
  }
}

TEST(Config, BadDurationAndSize) {
  EXPECT_EQ(error_of("probes:\n  zfs:\n    timeout: 5 minutes\n"),
            "/etc/fsaudit/fsaudit.yaml:3:14: key 'probes.zfs.timeout': invalid duration \"5 minutes\" (use a number "
            "with a unit: 250ms, 30s, 5m, 6h, 7d, 1w)");
}

TEST(Config, BadListenAndStateDir) {
  EXPECT_EQ(error_of("listen: 9717\n"),
            "/etc/fsaudit/fsaudit.yaml:1:9: key 'listen': expected ADDRESS:PORT such as 127.0.0.1:9717, found \"9717\"");
  EXPECT_EQ(error_of("listen: 127.0.0.1:99999\n"),
            "/etc/fsaudit/fsaudit.yaml:1:9: key 'listen': port must be 1-65535 in \"127.0.0.1:99999\" (e.g. "
            "127.0.0.1:9717)");
  EXPECT_EQ(error_of("state_dir: relative/dir\n"),
            "/etc/fsaudit/fsaudit.yaml:1:12: key 'state_dir': must be an absolute path such as /var/lib/fsaudit");
  EXPECT_EQ(error_of("log_level: loud\n"),
            "/etc/fsaudit/fsaudit.yaml:1:12: key 'log_level': \"loud\" is not allowed; use one of: trace, debug, info, "
            "warning, error");
}

TEST(Config, YamlSyntaxError) {
  auto e = error_of("targets:\n  include: [\"/srv\"\n");
  EXPECT_EQ(e.rfind("/etc/fsaudit/fsaudit.yaml:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(Config, ExampleConfigIsValid) {
  // The documented example with every key must always load.
  auto c = config::load_config_file(std::string(FSAUDIT_SOURCE_DIR) + "/config/fsaudit.yaml");
  EXPECT_EQ(c.listen_port, 9717);
}

TEST(Config, MissingFileIsAClearError) {
  try {
    config::load_config_file("/nonexistent/fsaudit.yaml");
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open /nonexistent/fsaudit.yaml: No such file or directory");
  }
}

TEST(Config, FailOnAnAbsentKeyNamesTheSection) {
  auto root = config::open_document("latency:\n  enabled: true\n", "f.yaml");
  auto lat = root.section("latency");
  try {
    lat.fail("stream", "needs targets");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "f.yaml:2:3: key 'latency.stream': needs targets");
  }
  auto absent = root.section("scrub");
  try {
    absent.fail("window", "bad");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "f.yaml: key 'scrub.window': bad");
  }
}

// A btrfs canary's other members go into `mount -o device=PATH`: a comma there would start another
// mount option, as root mounts it. Refused when the config loads, naming the device and the fix.
TEST(Config, CanaryDevicePathWithACommaIsRefused) {
  const std::string canary = "canary:\n  canaries:\n    - name: mirror\n      fs: btrfs\n      layout: raid1\n"
                             "      mountpoint: /srv/canary\n      devices: [/dev/loop1, ";
  EXPECT_EQ(error_of(canary + "/dev/loop2]\n"), "(no error)");
  auto why = error_of(canary + "\"/dev/loop2,subvol=/x\"]\n");
  EXPECT_NE(why.find("device path \"/dev/loop2,subvol=/x\" contains a comma"), std::string::npos) << why;
  EXPECT_NE(why.find("/dev/disk/by-id/"), std::string::npos) << why;
}

// The host's ceiling on per-filesystem probe runs: on by default, 0 turns it off, a wrong value names the key.
TEST(Config, ProbeBudgetDefaultsOnAndNamesTheKeyWhenWrong) {
  EXPECT_GT(config::default_config().probe_budget.runs_per_second, 0);
  EXPECT_EQ(config::parse_config("probe_budget: {runs_per_second: 0}\n", "f.yaml").probe_budget.runs_per_second, 0);
  EXPECT_EQ(config::parse_config("probe_budget:\n  runs_per_second: 250\n", "f.yaml").probe_budget.runs_per_second, 250);
  EXPECT_EQ(error_of("probe_budget:\n  runs_per_second: -1\n"),
            "/etc/fsaudit/fsaudit.yaml:2:20: key 'probe_budget.runs_per_second': -1 is out of range; use a value from 0 "
            "to 100000");
  EXPECT_EQ(error_of("probe_budget:\n  runs_per_secnd: 50\n"),
            "/etc/fsaudit/fsaudit.yaml:2:3: key 'probe_budget.runs_per_secnd': unknown key (did you mean 'runs_per_second'?); "
            "remove it or use one of: runs_per_second");
}
