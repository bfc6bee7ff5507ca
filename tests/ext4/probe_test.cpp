// ext4 probe: the sysfs parser on captured trees, the adapter on fixture trees.
#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/metrics/store.hpp"
#include "probes/ext4/block_name.hpp"
#include "probes/ext4/probe.hpp"
#include "tests/support/probe_fixture.hpp"
#include "tests/support/support.hpp"

namespace fsaudit {
namespace {

using testing::probe_fixture_dir;
using testing::probe_fixture_tree;

TEST(Ext4, ErrorsTreeFromTriggerFsError) {
  auto files = ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-errors/sys/fs/ext4/loop1").value();
  auto s = ext4::parse_ext4_sysfs(files);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->errors_count, 1u);
  ASSERT_TRUE(s->first && s->last);
  EXPECT_EQ(s->first->time, 1795997445);
  EXPECT_EQ(s->first->function, "trigger_test_error");
  EXPECT_EQ(s->first->line, 129u);
  EXPECT_EQ(s->first->errcode, 5);
  EXPECT_EQ(s->last->function, "trigger_test_error");
  EXPECT_EQ(s->warning_count, 0u);
  // ext4_error() records EFSCORRUPTED (EXT4_ERR code 5); a bad inode checksum records EFSBADCRC (4).
  EXPECT_EQ(ext4::errno_name(5), "EFSCORRUPTED");
  EXPECT_EQ(ext4::errno_name(4), "EFSBADCRC");
  EXPECT_EQ(ext4::errno_name(2), "EIO");
  EXPECT_EQ(ext4::errno_name(0), "");
  EXPECT_EQ(ext4::errno_name(9999), "9999");
}

TEST(Ext4, CleanTreeHasNoErrorTimes) {
  auto s = ext4::parse_ext4_sysfs(ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-clean/sys/fs/ext4/loop1").value());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->errors_count, 0u);
  ASSERT_TRUE(s->first);
  EXPECT_EQ(s->first->time, 0);
  EXPECT_EQ(s->first->function, "");
  Target t{"/srv", "/srv", "ext4", "/dev/loop1", "", "", 7, 1};
  auto b = ext4::ext4_metrics(t, "loop1", *s);
  EXPECT_EQ(b.value("fsaudit_ext4_errors", {{"target", "/srv"}, {"device", "loop1"}}), 0);
  EXPECT_FALSE(b.has("fsaudit_ext4_first_error_timestamp_seconds"));
  EXPECT_FALSE(b.has("fsaudit_ext4_error_info"));
}

// Per target per interval the probe reads only what can matter: the detail files of a record whose
// time is 0 are not read (so a file there that is junk or unreadable changes nothing), those of a
// record with a time are.
TEST(Ext4, DetailFilesAreReadOnlyForARecordWithATime) {
  auto clean = ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-clean/sys/fs/ext4/loop1").value();
  for (const char* k : {"errors_count", "first_error_time", "last_error_time", "warning_count", "msg_count"})
    EXPECT_TRUE(clean.count(k)) << k;
  for (const char* k : {"first_error_func", "first_error_line", "last_error_ino", "last_error_errcode"})
    EXPECT_FALSE(clean.count(k)) << k << " read although first/last_error_time is 0";
  auto errors = ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-errors/sys/fs/ext4/loop1").value();
  EXPECT_EQ(errors.size(), 15u) << "with both error times set every file is read";
  testing::TempDir dir("ext4-half");
  for (const auto& [k, v] : errors) testing::write_text(dir / k, v);
  testing::write_text(dir / "last_error_time", "0\n");
  testing::write_text(dir / "last_error_line", "junk\n");
  auto half = ext4::read_ext4_sysfs_files(dir.path()).value();
  EXPECT_TRUE(half.count("first_error_func"));
  EXPECT_FALSE(half.count("last_error_line"));
  auto s = ext4::parse_ext4_sysfs(half);
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->first->function, "trigger_test_error");
  EXPECT_EQ(s->last->time, 0);
}

TEST(Ext4, MissingOrBadErrorsCount) {
  EXPECT_FALSE(ext4::parse_ext4_sysfs({}).ok());
  auto r = ext4::parse_ext4_sysfs({{"errors_count", "lots\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("lots"), std::string::npos);
}

TEST(Ext4Adapter, FindsDirectoryByMajorMinorAndReportsError) {
  testing::FakeRunner runner;
  testing::ContextHolder c(probe_fixture_tree("ext4/tree-errors"), runner);
  auto probe = ext4::make_ext4_probe(config::default_config());
  EXPECT_EQ(probe->name(), "ext4");
  // The source name says nothing (e.g. /dev/root); major:minor 7:1 leads to loop1 via sys/dev/block.
  Target t{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1};
  ASSERT_TRUE(probe->applies_to(t));
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_errors", {{"target", "/"}, {"device", "loop1"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_last_error_timestamp_seconds"), 1795997445);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_error_info",
                            {{"which", "first"}, {"function", "trigger_test_error"}, {"line", "129"}, {"errcode", "EFSCORRUPTED"}}),
            1);
  EXPECT_TRUE(runner.calls.empty());
}

TEST(Ext4Adapter, UnknownDeviceIsAClearFailure) {
  testing::FakeRunner runner;
  testing::ContextHolder c(probe_fixture_tree("ext4/tree-clean"), runner);
  auto r = ext4::make_ext4_probe(config::default_config())
               ->run(Target{"/srv", "/srv", "ext4", "/dev/sdq9", "", "", 8, 9}, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.reason.find("sdq9"), std::string::npos) << r.reason;
}

// Unchanged sysfs files on a run the scheduler lets keep its metrics: nothing is built or published
// again; a new error is published at once, and so is everything when the scheduler asks for it.
TEST(Ext4Adapter, KeepsItsLastMetricsOnlyWhileNothingChanged) {
  testing::TempDir dir("ext4-same");
  std::filesystem::copy(probe_fixture_dir() / "ext4/tree-errors", dir.path(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(dir.path()), runner);
  auto probe = ext4::make_ext4_probe(config::default_config());
  Target t{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1};
  auto r = probe->run(t, c.ctx);  // republish: true, as on a job's first run
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  c.ctx.republish = false;
  r = probe->run(t, c.ctx);
  EXPECT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_TRUE(r.unchanged);
  EXPECT_TRUE(r.metrics.empty());
  testing::write_text(dir / "sys/fs/ext4/loop1/errors_count", "2\n");
  r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_errors", {{"target", "/"}}), 2);
  EXPECT_FALSE(r.metrics.has("fsaudit_ext4_warnings")) << "ext4.detail: full only (issue 33's budget)";
  EXPECT_TRUE(probe->run(t, c.ctx).unchanged);
  c.ctx.republish = true;  // e.g. after a timed-out run
  r = probe->run(t, c.ctx);
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_errors", {{"target", "/"}}), 2);
}

// The first/last error records change only with errors_count (the kernel sets them as it adds to the
// count): while errors_count and warning_count read as before, the run reads nothing else. A device
// whose directory went away is looked up again.
TEST(Ext4Adapter, ReadsTheErrorRecordsOnlyWhenTheCountsChangeAndFindsAMovedDirectory) {
  testing::TempDir dir("ext4-gate");
  std::filesystem::copy(probe_fixture_dir() / "ext4/tree-errors", dir.path(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(dir.path()), runner);
  // ext4.detail: full, for the warning count's series (by default the count gates the reads only).
  auto probe = ext4::make_ext4_probe(config::parse_config("ext4: {detail: full}\n", "test.yaml"));
  Target t{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1};
  ASSERT_EQ(probe->run(t, c.ctx).outcome, Outcome::ok);
  c.ctx.republish = false;
  const auto sys = dir / "sys/fs/ext4/loop1";
  // Not something the kernel does without adding to errors_count: not read, so not seen.
  testing::write_text(sys / "last_error_time", "1795999999\n");
  EXPECT_TRUE(probe->run(t, c.ctx).unchanged);
  testing::write_text(sys / "warning_count", "3\n");
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_warnings", {{"target", "/"}}), 3);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_last_error_timestamp_seconds"), 1795999999);

  // The device is now loop2 (7:1 links there): the remembered loop1 is gone, loop2 is found.
  std::filesystem::rename(sys, dir / "sys/fs/ext4/loop2");
  std::filesystem::remove(dir / "sys/dev/block/7:1");
  std::filesystem::create_symlink("../../devices/virtual/block/loop2", dir / "sys/dev/block/7:1");
  r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_errors", {{"target", "/"}, {"device", "loop2"}}), 1);
}

// Issue 32: a file that is there but cannot be read is not "no error recorded" and not "kernel too
// old": the probe fails naming the file and errno. Only an absent file may be silent.
TEST(Ext4Adapter, UnreadableErrorFilesFailWithFileAndErrno) {
  for (const char* file : {"first_error_time", "errors_count", "last_error_time", "warning_count", "msg_count"}) {
    testing::TempDir dir("ext4-unreadable");
    std::filesystem::copy(probe_fixture_dir() / "ext4/tree-errors", dir.path(),
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
    const auto sys = dir / "sys/fs/ext4/loop1";
    // A directory opens but read() fails (EISDIR), as a sysfs show() failing with EIO does.
    std::filesystem::remove(sys / file);
    std::filesystem::create_directory(sys / file);
    testing::FakeRunner runner;
    testing::ContextHolder c(HostPaths::under(dir.path()), runner);
    auto r = ext4::make_ext4_probe(config::default_config())->run(Target{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1}, c.ctx);
    ASSERT_EQ(r.outcome, Outcome::failed) << file << " unreadable but the probe succeeded";
    EXPECT_NE(r.reason.find((sys / file).string()), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("errno " + std::to_string(EISDIR)), std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("kernel too old"), std::string::npos) << r.reason;
  }
}

TEST(Ext4, ReaderKeepsAbsentAndUnreadableApart) {
  // Injected errno per file, as the fuzzer does.
  auto eio = [](const std::filesystem::path& p) {
    return p.filename() == "first_error_time" ? FileRead::failure(p, EIO) : read_attribute(p);
  };
  auto r = ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-clean/sys/fs/ext4/loop1", eio);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("first_error_time: Input/output error"), std::string::npos) << r.error();
  // Absent (an older kernel without msg_count) stays silent.
  auto absent = [](const std::filesystem::path& p) {
    return p.filename() == "msg_count" ? FileRead::failure(p, ENOENT) : read_attribute(p);
  };
  auto ok = ext4::read_ext4_sysfs_files(probe_fixture_dir() / "ext4/tree-clean/sys/fs/ext4/loop1", absent);
  ASSERT_TRUE(ok.ok()) << ok.error();
  EXPECT_FALSE(ok->count("msg_count"));
}

// Issue 32: a shut-down ext4 (EXT4_IOC_SHUTDOWN) lists "shutdown" in /proc/fs/ext4/<dev>/options and
// counts no error: it is reported, also on a run that otherwise finds nothing changed.
TEST(Ext4Adapter, ShutdownFromProcOptionsIsReported) {
  testing::TempDir dir("ext4-shutdown");
  std::filesystem::copy(probe_fixture_dir() / "ext4/tree-errors", dir.path(),
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  const auto opts = dir / "proc/fs/ext4/loop1/options";
  std::filesystem::create_directories(opts.parent_path());
  const std::string up = "rw\nbsddf\nerrors=continue\ndata=ordered\n";
  testing::write_text(opts, up);
  testing::FakeRunner runner;
  testing::ContextHolder c(HostPaths::under(dir.path()), runner);
  auto probe = ext4::make_ext4_probe(config::default_config());
  Target t{"/", "/", "ext4", "/dev/root", "rw", "rw", 7, 1};
  auto r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_shutdown", {{"target", "/"}, {"device", "loop1"}}), 0);
  c.ctx.republish = false;
  testing::write_text(opts, up + "prefetch_block_bitmaps\nshutdown\n");
  r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_ext4_shutdown", {{"target", "/"}, {"device", "loop1"}}), 1);
  testing::write_text(dir / "scrape.txt", metrics::serialize(r.metrics));
  auto check = testing::run({"sh", "-c", "promtool check metrics < '" + (dir / "scrape.txt").string() + "'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // Cut or empty options text is a failure, not "up".
  for (const char* bad : {"rw\nerrors=contin", ""}) {
    testing::write_text(opts, bad);
    r = probe->run(t, c.ctx);
    EXPECT_EQ(r.outcome, Outcome::failed) << "'" << bad << "'";
    EXPECT_NE(r.reason.find(opts.string()), std::string::npos) << r.reason;
  }
  // No options file (no /proc/fs/ext4 on this kernel): no shutdown series, still ok.
  std::filesystem::remove(opts);
  c.ctx.republish = true;
  r = probe->run(t, c.ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.metrics.has("fsaudit_ext4_shutdown"));
}

TEST(Ext4, OptionsShutdownParser) {
  EXPECT_TRUE(ext4::parse_ext4_options_shutdown("rw\nshutdown\n").value());
  EXPECT_FALSE(ext4::parse_ext4_options_shutdown("rw\nnoshutdown_x\n").value());
}

}  // namespace
}  // namespace fsaudit
