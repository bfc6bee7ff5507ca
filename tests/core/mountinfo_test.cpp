#include <gtest/gtest.h>

#include "daemon/config/config.hpp"
#include "daemon/core/fstype.hpp"
#include "daemon/core/files.hpp"
#include "daemon/probe/same_as_last.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/mount/probe.hpp"
#include "tests/support/support.hpp"

using namespace fsaudit;

namespace {
std::vector<MountEntry> server_mounts() {
  auto text = read_file(std::string(FSAUDIT_TEST_DATA_DIR) + "/mountinfo/storage-server.mountinfo");
  EXPECT_TRUE(text.ok()) << text.error();
  auto m = parse_mountinfo(*text);
  EXPECT_TRUE(m.ok()) << m.error();
  return *m;
}
const MountEntry* find(const std::vector<MountEntry>& ms, const std::string& mp) {
  for (auto& m : ms)
    if (m.mountpoint == mp) return &m;
  return nullptr;
}
std::vector<std::string> names(const std::vector<Target>& ts) {
  std::vector<std::string> out;
  for (auto& t : ts) out.push_back(t.name);
  return out;
}
}  // namespace

TEST(Mountinfo, ParsesEveryLine) {
  auto ms = server_mounts();
  ASSERT_EQ(ms.size(), 22u);
  auto* root = find(ms, "/");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->fstype, "ext4");
  EXPECT_EQ(root->source, "/dev/nvme0n1p2");
  EXPECT_EQ(root->major, 259u);
  EXPECT_EQ(root->minor, 2u);
  EXPECT_EQ(root->super_options, "rw,errors=remount-ro");
  EXPECT_EQ(root->optional_fields, std::vector<std::string>{"shared:1"});
}

TEST(Mountinfo, DecodesEscapedNames) {
  auto ms = server_mounts();
  auto* vm = find(ms, "/tank/vm images");
  ASSERT_NE(vm, nullptr);
  EXPECT_EQ(vm->source, "tank/vm images");
  ASSERT_NE(find(ms, "/srv/old disk"), nullptr);
}

TEST(Mountinfo, BindMountKeepsItsRoot) {
  auto ms = server_mounts();
  auto* bind = find(ms, "/export/media");
  ASSERT_NE(bind, nullptr);
  EXPECT_EQ(bind->root, "/exports");
  EXPECT_EQ(bind->major, 9u);
  EXPECT_EQ(bind->minor, 127u);
}

TEST(Mountinfo, ReadOnlyFromEitherOptionSet) {
  auto ms = server_mounts();
  EXPECT_TRUE(find(ms, "/srv/old disk")->read_only());
  EXPECT_FALSE(find(ms, "/srv/media")->read_only());
  // Remounted read-only by the kernel: the superblock says ro even if a mount says rw.
  MountEntry e = *find(ms, "/srv/media");
  e.super_options = "ro,attr2";
  EXPECT_TRUE(e.read_only());
}

TEST(Mountinfo, Ext4EmergencyReadOnlyOnLinux6) {
  auto text = read_file(std::string(FSAUDIT_TEST_DATA_DIR) + "/mountinfo/ext4-emergency-ro-linux-6.18.mountinfo");
  ASSERT_TRUE(text.ok());
  auto ms = parse_mountinfo(*text);
  ASSERT_TRUE(ms.ok());
  ASSERT_EQ(ms->size(), 1u);
  EXPECT_EQ((*ms)[0].mount_options, "rw,relatime");
  EXPECT_TRUE((*ms)[0].read_only());
}

TEST(Mountinfo, GarbageIsAnErrorNotACrash) {
  auto r = parse_mountinfo("this is not mountinfo\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "mountinfo: no line parsed; first bad line: this is not mountinfo");
  // A line that does not parse is not skipped: the mounts it describes would go unwatched.
  auto partial = parse_mountinfo("garbage\n27 1 254:0 / / rw - ext4 /dev/vda rw\n");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().find("garbage"), std::string::npos) << partial.error();
  EXPECT_FALSE(parse_mountinfo("27 1 254:0 / / rw - ext4 /dev/vda rw\n28 27 254:1 / /srv rw - ext").ok());
}

TEST(Targets, DiscoversStorageSkipsPseudoAndFoldsBindMounts) {
  auto ts = select_targets(server_mounts(), TargetSelection{});
  // Shortest mount point first; /srv/backup is a second subvolume of /srv/data's btrfs, /export/media a
  // bind mount of /srv/media: both folded. nfs, overlay, squashfs, tmpfs, cgroup: not watched.
  EXPECT_EQ(names(ts), (std::vector<std::string>{"/", "/tank", "/boot/efi", "/srv/media", "/mnt/bcache", "/srv/scratch",
                                                  "/srv/old disk", "/tank/vm images", "/srv/data"}))
      << "got: " << ::testing::PrintToString(names(ts));
}

TEST(Targets, ZfsFuseDatasetsAreStorageOtherFuseAndNetworkAreNot) {
  // zfs-fuse's mounts as they are here (fstype fuse.zfs, one anonymous device per dataset): ZFS, and
  // watched by default like OpenZFS datasets; sshfs and nfs only when targets.fstypes names them.
  auto ms = parse_mountinfo(
      "27 1 254:0 / / rw - ext4 /dev/vda rw\n"
      "42 27 0:39 / /setupcap rw,relatime - fuse.zfs setupcap rw,user_id=0,group_id=0,default_permissions,allow_other\n"
      "43 42 0:40 / /setupcap/vm rw,relatime - fuse.zfs setupcap/vm rw,user_id=0,group_id=0,default_permissions,allow_other\n"
      "44 27 0:41 / /mnt/remote rw - fuse.sshfs u@h:/ rw,user_id=0\n"
      "45 27 0:42 / /mnt/nas rw - nfs4 nas:/export rw\n");
  ASSERT_TRUE(ms.ok()) << ms.error();
  EXPECT_EQ(names(select_targets(*ms, TargetSelection{})), (std::vector<std::string>{"/", "/setupcap", "/setupcap/vm"}));
  EXPECT_TRUE(fstype::is_zfs("fuse.zfs"));
  EXPECT_EQ(fstype::canonical("fuse.zfs"), "zfs");
  EXPECT_EQ(fstype::canonical("fuse.zfs-fuse"), "zfs");
  EXPECT_EQ(fstype::canonical("ext4"), "ext4");
  EXPECT_TRUE(mount::has_data_checksums("fuse.zfs-fuse", "rw", "rw"));
  TargetSelection sshfs;
  sshfs.fstypes = {"fuse.sshfs"};
  EXPECT_EQ(names(select_targets(*ms, sshfs)), (std::vector<std::string>{"/mnt/remote"}));
}

TEST(Targets, IncludeExcludeAndFstypes) {
  TargetSelection sel;
  sel.include = {"/srv/*"};
  sel.exclude = {"/srv/scratch"};
  auto ts = select_targets(server_mounts(), sel);
  EXPECT_EQ(names(ts), (std::vector<std::string>{"/srv/media", "/srv/old disk", "/srv/data"}));
  TargetSelection only_zfs;
  only_zfs.fstypes = {"zfs"};
  EXPECT_EQ(names(select_targets(server_mounts(), only_zfs)), (std::vector<std::string>{"/tank", "/tank/vm images"}));
  TargetSelection nfs;
  nfs.fstypes = {"nfs4"};
  EXPECT_EQ(names(select_targets(server_mounts(), nfs)), (std::vector<std::string>{"/mnt/nas"}));
}

TEST(Targets, ExplicitTargetsResolveToTheirMount) {
  TargetSelection sel;
  sel.discover = false;
  sel.explicit_targets = {{"/srv/media/movies/2024", "media"}, {"/nowhere-mounted", ""}};
  std::vector<std::string> warnings;
  auto ts = select_targets(server_mounts(), sel, &warnings);
  ASSERT_EQ(ts.size(), 2u);  // "/nowhere-mounted" lies on "/"
  EXPECT_EQ(ts[0].name, "media");
  EXPECT_EQ(ts[0].mountpoint, "/srv/media");
  EXPECT_EQ(ts[0].fstype, "xfs");
  EXPECT_EQ(ts[1].mountpoint, "/");
}

TEST(MountProbe, ReportsReadOnlyAndChecksums) {
  auto ms = server_mounts();
  Target t;
  t.name = "/srv/old disk";
  t.fstype = "ext4";
  auto b = mount::mount_metrics(t, find(ms, "/srv/old disk"));
  EXPECT_EQ(b.value("fsaudit_filesystem_readonly", {{"target", "/srv/old disk"}}), 1);
  EXPECT_EQ(b.status.fs("/srv/old disk").data_checksums, false);
  EXPECT_FALSE(b.has("fsaudit_filesystem_data_checksums"));  // fsaudit_stack_info{data_checksums} says it
  EXPECT_EQ(b.value("fsaudit_filesystem_info", {{"device", "/dev/sdd1"}, {"fs", "ext4"}}), 1);
  t.name = "/srv/data";
  t.fstype = "btrfs";
  auto bb = mount::mount_metrics(t, find(ms, "/srv/data"));
  EXPECT_EQ(bb.value("fsaudit_filesystem_readonly"), 0);
  EXPECT_EQ(bb.status.fs("/srv/data").data_checksums, true);
  auto gone = mount::mount_metrics(t, nullptr);
  EXPECT_TRUE(gone.empty());
}

TEST(MountProbe, DataChecksumsByStack) {
  EXPECT_TRUE(mount::has_data_checksums("zfs", "rw", "rw"));
  EXPECT_TRUE(mount::has_data_checksums("fuse.zfs", "rw", "rw,user_id=0"));
  EXPECT_TRUE(mount::has_data_checksums("btrfs", "rw", "rw,space_cache=v2"));
  EXPECT_FALSE(mount::has_data_checksums("btrfs", "rw", "rw,nodatasum"));
  EXPECT_TRUE(mount::has_data_checksums("bcachefs", "rw", "rw"));
  EXPECT_FALSE(mount::has_data_checksums("bcachefs", "rw", "rw,data_checksum=none"));
  EXPECT_FALSE(mount::has_data_checksums("xfs", "rw", "rw"));
  EXPECT_FALSE(mount::has_data_checksums("ext4", "rw", "rw"));
}

namespace {
std::unique_ptr<Probe> mount_probe() { return mount::make_mount_probe(config::default_config()); }
}  // namespace

// The probe runs every 15 s on every target, and mount tables rarely change: a run that finds the
// target's entry as it published it last keeps those metrics; any change to the entry publishes.
TEST(MountProbe, KeepsItsLastMetricsOnlyWhileTheEntryIsTheSame) {
  auto table = std::make_shared<std::vector<MountEntry>>(server_mounts());
  HostPaths host;
  ToolPaths tools;
  ProcessRunner runner;
  FakeClock clock;
  ProbeContext ctx{host, runner, clock, tools, "/tmp", {}, clock.now() + std::chrono::seconds(10)};
  ctx.mounts = table;
  Target t;
  t.name = t.mountpoint = "/srv/data";
  t.fstype = "btrfs";
  auto probe = mount_probe();
  auto r = probe->run(t, ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_filesystem_readonly", {{"target", "/srv/data"}}), 0);
  ctx.republish = false;
  EXPECT_TRUE(probe->run(t, ctx).unchanged);
  // A new snapshot (the table is read again every cycle) with the same entry: still the same.
  ctx.mounts = std::make_shared<std::vector<MountEntry>>(*table);
  EXPECT_TRUE(probe->run(t, ctx).unchanged);
  // The kernel remounted it read-only after an error: published at once.
  auto remounted = std::make_shared<std::vector<MountEntry>>(*table);
  for (auto& e : *remounted)
    if (e.mountpoint == "/srv/data") e.super_options = "ro," + e.super_options;
  ctx.mounts = remounted;
  r = probe->run(t, ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_filesystem_readonly", {{"target", "/srv/data"}}), 1);
  // Another target of the same probe has its own memory.
  Target other = t;
  other.name = other.mountpoint = "/srv/old disk";
  other.fstype = "ext4";
  EXPECT_FALSE(probe->run(other, ctx).unchanged);
  EXPECT_TRUE(probe->run(t, ctx).unchanged);
  ctx.republish = true;
  r = probe->run(t, ctx);
  EXPECT_FALSE(r.unchanged);
  EXPECT_EQ(r.metrics.value("fsaudit_filesystem_readonly", {{"target", "/srv/data"}}), 1);
}

TEST(LastPublished, FingerprintsDelimitTheirValues) {
  EXPECT_NE(Fingerprint().add("ab").add("c").value(), Fingerprint().add("a").add("bc").value());
  EXPECT_EQ(Fingerprint().add("a").add(1.5).value(), Fingerprint().add("a").add(1.5).value());
  EXPECT_NE(Fingerprint().add(1.5).value(), Fingerprint().add(2.5).value());
  EXPECT_NE(Fingerprint().add(std::uint64_t{0}).value(), Fingerprint().value());
}

TEST(LastPublished, ForgetsTargetsNotSeenForHalfAnHour) {
  HostPaths host;
  ToolPaths tools;
  ProcessRunner runner;
  FakeClock clock;
  ProbeContext ctx{host, runner, clock, tools, "/tmp", {}, clock.now()};
  ctx.republish = false;
  LastPublished last;
  EXPECT_FALSE(last.same("/a", 1, ctx));  // never seen: publish
  EXPECT_FALSE(last.same("/b", 1, ctx));
  EXPECT_TRUE(last.same("/a", 1, ctx));
  EXPECT_FALSE(last.same("/a", 2, ctx));
  EXPECT_TRUE(last.same("/a", 2, ctx));
  clock.advance(std::chrono::minutes(20));
  EXPECT_TRUE(last.same("/a", 2, ctx));
  clock.advance(std::chrono::minutes(20));
  EXPECT_TRUE(last.same("/a", 2, ctx));
  EXPECT_EQ(last.size(), 1u);  // /b unmounted 40 minutes ago
  EXPECT_FALSE(last.same("/b", 1, ctx));
}

// A host root's mountinfo that is a plain file (a test's, a copy) announces nothing: the daemon then
// reads it on its timer only. (The kernel's announcements: DaemonLab.UnmountedTargetLeavesTheScrapeAndComesBackWhole.)
TEST(MountTableWatch, APlainFileAnnouncesNothing) {
  fsaudit::testing::TempDir d("fsaudit-mountwatch");
  std::filesystem::create_directories(d / "proc/self");
  fsaudit::testing::write_text(d / "proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
  MountTableWatch fake(HostPaths::under(d.path()));
  EXPECT_FALSE(fake.changed());
  fsaudit::testing::write_text(d / "proc/self/mountinfo", "1 0 8:1 / / ro - ext4 /dev/sda1 ro\n");
  EXPECT_FALSE(fake.changed());
  MountTableWatch missing(HostPaths::under(d / "nowhere"));
  EXPECT_FALSE(missing.changed());
}

// Read again and unchanged: the same snapshot back, not parsed again; any change (here only a
// superblock going read-only) is a new one; an unreadable table is an error, and never "unchanged".
TEST(MountTableReader, AnUnchangedTableIsTheLastSnapshotAndAnyChangeANewOne) {
  fsaudit::testing::TempDir d("fsaudit-mountreader");
  std::filesystem::create_directories(d / "proc/self");
  auto host = HostPaths::under(d.path());
  fsaudit::testing::write_text(d / "proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
  MountTableReader reader;
  auto first = reader.read(host);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(reader.unchanged());
  auto again = reader.read(host);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(reader.unchanged());
  EXPECT_EQ(*again, *first) << "the same snapshot, not a new parse";
  fsaudit::testing::write_text(d / "proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 ro\n");
  auto changed = reader.read(host);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(reader.unchanged());
  EXPECT_NE(*changed, *first);
  EXPECT_TRUE((**changed)[0].read_only());
  std::filesystem::remove(d / "proc/self/mountinfo");
  auto gone = reader.read(host);
  EXPECT_FALSE(gone.ok());
  EXPECT_FALSE(reader.unchanged());
  EXPECT_NE(gone.error().find("cannot read the mount table"), std::string::npos) << gone.error();
  // Back with the text it had before the failure: a new snapshot, since the caller went on without one.
  fsaudit::testing::write_text(d / "proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 ro\n");
  auto back = reader.read(host);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(reader.unchanged());
  EXPECT_TRUE((**back)[0].read_only());
}
