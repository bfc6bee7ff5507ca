// bcachefs probe: the sysfs parsers on written fixtures, the adapter on fixture trees.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "probes/bcachefs/probe.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using testing::probe_fixture_dir;
using testing::probe_fixture_tree;

TEST(Bcachefs, IoErrorsFixtureLayout) {
  auto e = bcachefs::parse_io_errors(fixture("written/bcachefs/sysfs-dev-io_errors.txt"));
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->since_creation.at("read"), 4u);
  EXPECT_EQ(e->since_creation.at("write"), 0u);
  EXPECT_EQ(e->since_creation.at("checksum"), 9u);
  EXPECT_EQ(e->since_reset.at("checksum"), 2u);
  EXPECT_EQ(e->reset_age, "3 d");
  EXPECT_FALSE(bcachefs::parse_io_errors("read: 1\n").ok());
}

TEST(Bcachefs, CounterFixtures) {
  auto c = bcachefs::parse_counter(fixture("written/bcachefs/sysfs-counter-plain.txt"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->since_mount, 12);
  EXPECT_EQ(c->since_creation, 3047);
  auto u = bcachefs::parse_counter(fixture("written/bcachefs/sysfs-counter-bytes-units.txt"));
  ASSERT_TRUE(u.ok()) << u.error();
  EXPECT_NEAR(u->since_mount, 512.0 * 1024 * 1024, 1e3);
  EXPECT_NEAR(u->since_creation, 3.25 * 1024 * 1024 * 1024 * 1024, 1e3);
  EXPECT_FALSE(bcachefs::parse_counter("nothing here\n").ok());
}

TEST(Bcachefs, StateAndErrorsFile) {
  EXPECT_EQ(bcachefs::parse_state("[rw] ro evacuating failed spare\n"), "rw");
  EXPECT_EQ(bcachefs::parse_state("rw ro [failed] spare"), "failed");
  EXPECT_EQ(bcachefs::parse_state("ro\n"), "ro");
  auto e = bcachefs::parse_sb_errors("ptr_to_missing_backpointer   4   2025-11-02 10:11:12\n");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->size(), 1u);
  EXPECT_EQ(e->at("ptr_to_missing_backpointer"), 4u);
  EXPECT_FALSE(bcachefs::parse_sb_errors("ptr_to_missing_backpointer   4   2025-11-02 10:11:12\nbad\n").ok());
  EXPECT_TRUE(bcachefs::error_counter("io_read_retry"));
  EXPECT_FALSE(bcachefs::error_counter("io_read"));
}

TEST(BcachefsAdapter, TreeTwoDevicesOneFailedWithChecksumErrors) {
  testing::FakeRunner runner;
  testing::ContextHolder c(probe_fixture_tree("bcachefs/tree"), runner);
  auto probe = bcachefs::make_bcachefs_probe(config::default_config());
  Target t{"/pool", "/pool", "bcachefs", "/dev/sdc:/dev/sdd", "", "", 0, 50};
  ASSERT_TRUE(probe->applies_to(t));
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  const auto& b = r.metrics;
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdc"}, {"kind", "checksum"}}), 11);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdc"}, {"kind", "read"}}), 6);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_errors", {{"device", "sdd"}, {"kind", "checksum"}}), 17);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdc"}, {"state", "rw"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdd"}, {"state", "failed"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_state", {{"device", "sdd"}, {"state", "rw"}}), 0);
  EXPECT_EQ(b.value("fsaudit_bcachefs_device_info", {{"device", "sdd"}, {"label", "hdd.hdd2"}, {"dev", "dev-1"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_errors", {{"error", "ptr_to_missing_backpointer"}}), 4);
  EXPECT_EQ(b.value("fsaudit_bcachefs_errors", {{"error", "btree_node_read_error"}}), 1);
  EXPECT_EQ(b.value("fsaudit_bcachefs_error_events_total", {{"counter", "io_read_retry"}}), 218);
  EXPECT_FALSE(b.has("fsaudit_bcachefs_error_events_total", {{"counter", "io_read"}}));
  // replicas=2 but sdd failed: one copy left, nothing to repair from.
  EXPECT_EQ(b.value("fsaudit_filesystem_data_redundancy", {{"target", "/pool"}, {"fs", "bcachefs"}}), 0);
  EXPECT_EQ(b.value("fsaudit_bcachefs_data_replicas"), 2);
}

TEST(BcachefsAdapter, SingleReplicaAndUnknownSource) {
  testing::TempDir d;
  fs::copy(probe_fixture_dir() / "bcachefs/tree", d.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  testing::write_text(d / "sys/fs/bcachefs/a9da1e6e-d4e5-4717-a520-408c8af4b084/options/data_replicas", "1\n");
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(d.path()), runner);
  auto probe = bcachefs::make_bcachefs_probe(config::default_config());
  auto r = probe->run(Target{"/pool", "/pool", "bcachefs", "/dev/sdd", "", "", 0, 50}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_filesystem_data_redundancy", {{"target", "/pool"}}), 0);
  auto none = probe->run(Target{"/other", "/other", "bcachefs", "/dev/nvme9n1", "", "", 0, 51}, c.ctx);
  ASSERT_EQ(none.outcome, Outcome::failed);
  EXPECT_NE(none.reason.find("/dev/nvme9n1"), std::string::npos) << none.reason;
}

// Issue 32: an error id bcachefs has no name for is printed "(unknown error 412)" and its count is
// the word after the ')', not "error".
TEST(Bcachefs, UnknownErrorIdKeepsItsCount) {
  auto e = bcachefs::parse_sb_errors("btree_node_read_error\t2\t2025-11-02 10:11:12\n(unknown error 412)  7   2025-11-03 01:02:03\n");
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->at("(unknown error 412)"), 7u);
  EXPECT_EQ(e->at("btree_node_read_error"), 2u);
  auto junk = bcachefs::parse_sb_errors("(unknown error 412)  lots\n");
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.error().find("lots"), std::string::npos) << junk.error();
  EXPECT_FALSE(bcachefs::parse_sb_errors("(unknown error 4").ok());
  EXPECT_FALSE(bcachefs::parse_sb_errors("btree_node_read_error\n").ok()) << "no count: cut";
}

// Issue 32: a file that is there but unreadable or junk fails the probe with the file and the errno
// or text (the metrics it could read are still published); only an absent file is silent.
TEST(BcachefsAdapter, JunkOrUnreadableFilesFailTheProbe) {
  const std::string uuid = "a9da1e6e-d4e5-4717-a520-408c8af4b084";
  Target t{"/pool", "/pool", "bcachefs", "/dev/sdc:/dev/sdd", "", "", 0, 50};
  struct Case {
    std::string file, content;  // content "<dir>" = a directory (read() fails: EISDIR)
    std::string want;
  };
  for (const auto& k : std::vector<Case>{{"counters/io_read_retry", "since mount: lots\n", "lots"},
                                         {"counters/io_read_retry", "<dir>", "errno"},
                                         {"errors", "(unknown error 412)  x7\n", "x7"},
                                         {"errors", "<dir>", "errno"},
                                         {"options/data_replicas", "two\n", "two"},
                                         {"dev-0/durability", "<dir>", "errno"},
                                         {"dev-0/state_rw", "<dir>", "errno"}}) {
    testing::TempDir dir("bcachefs-bad");
    fs::copy(probe_fixture_dir() / "bcachefs/tree", dir.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    auto p = dir / ("sys/fs/bcachefs/" + uuid + "/" + k.file);
    fs::remove(p);
    if (k.content == "<dir>") fs::create_directories(p);
    else testing::write_text(p, k.content);
    testing::FakeRunner runner;
    testing::ContextHolder c(HostPaths::under(dir.path()), runner);
    auto r = bcachefs::make_bcachefs_probe(config::default_config())->run(t, c.ctx);
    ASSERT_EQ(r.outcome, Outcome::failed) << k.file << " '" << k.content << "' went unnoticed";
    EXPECT_NE(r.reason.find(k.file), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(k.want), std::string::npos) << r.reason;
    EXPECT_TRUE(r.metrics.has("fsaudit_bcachefs_filesystem_info")) << "what could be read is kept";
  }
}

}  // namespace
}  // namespace fsaudit
