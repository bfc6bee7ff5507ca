// Setup rules on stack facts (each rule fires on one fixture and stays silent on another), the
// property-table parser on captured zfs-fuse / OpenZFS output, the adapter on sysfs fixture trees
// with a fake zpool/zfs, coverage decisions, finding transitions, metrics and the config section.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "daemon/config/config.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "probes/btrfs/stack.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/setup/coverage.hpp"
#include "probes/setup/gather.hpp"
#include "probes/setup/nocow.hpp"
#include "probes/setup/parse.hpp"
#include "probes/setup/probe.hpp"
#include "probes/setup/rules.hpp"
#include "probes/zfs/stack.hpp"
#include "tests/support/fake_runner.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::setup {
namespace {

namespace fs = std::filesystem;
using testing::FakeRunner;
using testing::TempDir;
using testing::write_text;

std::string data(const std::string& name) {
  auto t = read_file(fs::path(SETUP_DATA_DIR) / name);
  EXPECT_TRUE(t.ok()) << name;
  return t.ok() ? *t : "";
}

constexpr double kNow = 1'800'000'000;

BlockDevice ssd(const std::string& n, std::uint64_t phys = 4096) {
  BlockDevice d;
  d.name = d.disk = n;
  d.rotational = false;
  d.physical_block_size = phys;
  d.model = "Samsung SSD 990";
  d.transport = "nvme";
  return d;
}

// The stack models the filesystems' own builders make (probes/<fs>/stack.hpp), as gather fills them.
stack::StackModel btrfs_model(const std::string& data, const std::string& metadata = "raid1") {
  btrfs::SysfsFilesystem s;
  s.fsid = "0a5b1c2d-3e4f-5a6b-7c8d-9e0f1a2b3c4d";
  s.devices.resize(2);
  s.devices[0].devid = 1;
  s.devices[1].devid = 2;
  s.profiles = {{"data", data, 1ull << 30, 1ull << 29}, {"metadata", metadata, 1ull << 28, 1ull << 20}};
  return btrfs::stack_model(s);
}
// The pool `name` of a captured zpool status (tests/fixtures/<fixture>), with the dataset's copies.
stack::StackModel zfs_model(const std::string& fixture, const std::string& name, int copies = 1) {
  auto st = zfs::parse_zpool_status(testing::fixture(fixture));
  EXPECT_TRUE(st.ok()) << fixture;
  if (st)
    for (const auto& p : st->pools)
      if (p.name == name) return zfs::stack_model(p, zfs::DatasetShape{copies, true});
  ADD_FAILURE() << "no pool " << name << " in " << fixture;
  return {};
}
const char kTwoMirrors[] = "written/zfs/zpool-status-openzfs-healthy-features-notice-two-mirrors.txt";
const char kMirrorAndSingle[] = "captured/zfs-fuse/zpool-status-mirror-and-single-never-scrubbed.txt";

// A healthy stack of each kind: no rule may fire on these.
StackFacts healthy_btrfs() {
  StackFacts f;
  f.target = "/srv";
  f.fs = "btrfs";
  f.source = "/dev/nvme0n1p2";
  f.options = "rw,relatime,ssd,space_cache=v2,subvolid=5,subvol=/";
  f.now = kNow;
  f.size_bytes = 2e12;
  f.devices = {ssd("nvme0n1p2"), ssd("nvme1n1p2")};
  BtrfsFacts b;
  b.data_profiles = {"raid1"};
  b.metadata_profiles = {"raid1"};
  b.unallocated_bytes = 500ull << 30;
  b.nocow = NocowScan{120, 0, false, {}, {}};
  f.btrfs = b;
  f.model = btrfs_model("raid1");
  f.scrub = ScrubFacts{kNow - 90 * 86400, kNow - 3 * 86400, ""};
  f.kernel_release = "6.18.44";
  return f;
}

StackFacts healthy_zfs() {
  StackFacts f;
  f.target = "/tank/vm";
  f.fs = "zfs";
  f.source = "tank/vm";
  f.now = kNow;
  f.size_bytes = 4e12;
  f.devices = {ssd("nvme0n1"), ssd("nvme1n1")};
  f.zdataset = ZfsDatasetFacts{"tank/vm", "on", "lz4", 1, 16384};
  ZfsPoolFacts p;
  p.name = "tank";
  p.ashift = 12;
  p.autotrim = true;
  p.capacity_percent = 41;
  f.zpool = p;
  f.model = zfs_model(kTwoMirrors, "homes");  // a pool of two mirrors
  f.measured_io_bytes = 16384;
  f.scrub = ScrubFacts{kNow - 90 * 86400, kNow - 86400, ""};
  return f;
}

StackFacts healthy_bcachefs() {
  StackFacts f;
  f.target = "/data";
  f.fs = "bcachefs";
  f.source = "/dev/sda:/dev/sdb";
  f.now = kNow;
  f.bcachefs = BcachefsFacts{"crc32c", 2, 2, "none"};
  f.scrub = ScrubFacts{kNow - 90 * 86400, kNow - 86400, ""};
  return f;
}

StackFacts plain_xfs() {
  StackFacts f;
  f.target = "/var/lib/mysql";
  f.fs = "xfs";
  f.source = "/dev/md0";
  f.now = kNow;
  f.lower = LowerLayers{"md-raid1", false, "md0 (raid1) over sda1 sdb1"};
  return f;
}

config::SetupConfig cfg() { return config::SetupConfig{}; }

struct RuleCase {
  std::string rule;
  std::function<StackFacts()> fires;
  std::function<StackFacts()> silent;
};

std::vector<RuleCase> cases() {
  return {
      {"no_data_checksums", plain_xfs, [] { auto f = plain_xfs(); f.lower.integrity = true; return f; }},
      {"btrfs_nodatasum", [] { auto f = healthy_btrfs(); f.options += ",nodatasum"; return f; }, healthy_btrfs},
      {"btrfs_nocow_files",
       [] { auto f = healthy_btrfs(); f.btrfs->nocow = NocowScan{120, 1, false, {"/srv/vm/"}, {}}; return f; },
       healthy_btrfs},
      {"zfs_checksum_off", [] { auto f = healthy_zfs(); f.zdataset->checksum = "off"; return f; }, healthy_zfs},
      {"bcachefs_data_checksum_none",
       [] { auto f = healthy_bcachefs(); f.bcachefs->data_checksum = "none"; return f; }, healthy_bcachefs},
      {"not_repairable",
       [] { auto f = healthy_btrfs(); f.btrfs->data_profiles = {"single"}; f.model = btrfs_model("single"); return f; },
       healthy_btrfs},
      {"btrfs_raid56", [] { auto f = healthy_btrfs(); f.btrfs->data_profiles = {"raid5"}; return f; }, healthy_btrfs},
      {"metadata_not_duplicated", [] { auto f = healthy_btrfs(); f.btrfs->metadata_profiles = {"single"}; return f; },
       healthy_btrfs},
      {"zfs_stacked_vdev",
       [] { auto f = healthy_zfs(); f.zpool->stacked = {ZfsVdevFacts{"/srv/zfs.img", true, "ext4", "/srv"}}; return f; },
       healthy_zfs},
      {"zfs_ashift_too_small", [] { auto f = healthy_zfs(); f.zpool->ashift = 9; return f; }, healthy_zfs},
      {"zfs_recordsize_mismatch", [] { auto f = healthy_zfs(); f.zdataset->recordsize = 131072; f.measured_io_bytes = 4096; return f; },
       healthy_zfs},
      {"zfs_compression_off", [] { auto f = healthy_zfs(); f.zdataset->compression = "off"; return f; }, healthy_zfs},
      {"zfs_autotrim_off", [] { auto f = healthy_zfs(); f.zpool->autotrim = false; return f; }, healthy_zfs},
      {"raid_without_integrity", plain_xfs, [] { auto f = plain_xfs(); f.lower.integrity = true; return f; }},
      {"scrub_overdue", [] { auto f = healthy_btrfs(); f.scrub->last_completed_end = kNow - 50 * 86400; return f; },
       healthy_btrfs},
      {"zfs_fill_high", [] { auto f = healthy_zfs(); f.zpool->capacity_percent = 86; return f; }, healthy_zfs},
      {"btrfs_unallocated_low", [] { auto f = healthy_btrfs(); f.btrfs->unallocated_bytes = 300ull << 20; return f; },
       healthy_btrfs},
  };
}

TEST(SetupRules, EveryRuleFiresOnItsFixtureAndStaysSilentOnTheOther) {
  std::set<std::string> tested;
  for (const auto& c : cases()) {
    tested.insert(c.rule);
    auto fire = evaluate(c.fires(), cfg());
    EXPECT_TRUE(fire.holds(c.rule)) << c.rule << " did not fire";
    for (const auto& f : fire.findings)
      if (f.rule == c.rule) {
        EXPECT_FALSE(f.evidence.empty()) << c.rule;
        EXPECT_EQ(f.severity, find_rule(c.rule)->severity);
      }
    auto quiet = evaluate(c.silent(), cfg());
    EXPECT_FALSE(quiet.holds(c.rule)) << c.rule << " fired on its silent fixture";
  }
  for (const auto& r : rules()) {
    EXPECT_TRUE(tested.count(r.id)) << "rule " << r.id << " has no fire/silent case";
    EXPECT_FALSE(r.why.empty());
    EXPECT_FALSE(r.fix.empty());
    EXPECT_TRUE(r.severity == "critical" || r.severity == "warning" || r.severity == "info") << r.id;
  }
}

TEST(SetupRules, HealthyStacksHaveNoFindingAtAll) {
  for (auto f : {healthy_btrfs(), healthy_zfs(), healthy_bcachefs()}) {
    auto e = evaluate(f, cfg());
    std::string got;
    for (const auto& x : e.findings) got += x.rule + " ";
    EXPECT_TRUE(e.findings.empty()) << f.fs << ": " << got;
  }
}

// zfs-fuse (pool v23): no autotrim, ashift 0, no I/O size; members of unknown type.
StackFacts zfs_fuse_facts() {
  auto f = healthy_zfs();
  f.zpool->autotrim.reset();
  f.zpool->ashift = 0;
  f.measured_io_bytes.reset();
  f.devices.clear();
  return f;
}

TEST(SetupRules, UnknownPropertiesAreNotEvaluableNeverFindings) {
  auto f = zfs_fuse_facts();
  auto e = evaluate(f, cfg());
  EXPECT_TRUE(e.findings.empty());
  std::set<std::string> ne;
  for (const auto& n : e.not_evaluable) ne.insert(n.rule);
  EXPECT_TRUE(ne.count("zfs_autotrim_off"));
  EXPECT_TRUE(ne.count("zfs_ashift_too_small"));
  EXPECT_TRUE(ne.count("zfs_recordsize_mismatch"));
  f.zpool->ashift = 99;  // garbage from a tool: not evaluable, no shift past 63
  EXPECT_FALSE(evaluate(f, cfg()).holds("zfs_ashift_too_small"));
  // Nothing readable at all: every ZFS rule not evaluable, still no finding.
  StackFacts bare;
  bare.fs = "zfs";
  bare.target = "/x";
  auto e2 = evaluate(bare, cfg());
  EXPECT_TRUE(e2.findings.empty());
  EXPECT_GE(e2.not_evaluable.size(), 7u);
}

// The series budget (issue 33): rules that cannot be judged are one count per target by default,
// one series per rule only with setup.detail: full.
TEST(SetupProbe, NotEvaluableRulesAreOneCountPerTargetUnlessDetailIsFull) {
  auto f = zfs_fuse_facts();
  auto r = judge({f, healthy_btrfs()}, {}, cfg(), kNow);
  const auto n = static_cast<double>(r.targets[0].eval.not_evaluable.size());
  ASSERT_GE(n, 3);
  ASSERT_TRUE(r.targets[1].eval.not_evaluable.empty());
  auto compact = setup_metrics(r, false);
  EXPECT_EQ(compact.value("fsaudit_setup_rules_not_evaluable", {{"target", f.target}}), n);
  EXPECT_FALSE(compact.has("fsaudit_setup_rules_not_evaluable", {{"target", r.targets[1].facts.target}}));
  EXPECT_FALSE(compact.has("fsaudit_setup_rule_not_evaluable"));
  auto full = setup_metrics(r, true);
  EXPECT_EQ(full.value("fsaudit_setup_rule_not_evaluable", {{"target", f.target}, {"rule", "zfs_autotrim_off"}}), 1);
  EXPECT_FALSE(full.has("fsaudit_setup_rules_not_evaluable"));
}

TEST(SetupRules, ZfsCopiesTwoMakesASingleVdevRepairable) {
  auto f = healthy_zfs();
  f.model = zfs_model(kMirrorAndSingle, "fxcaps");  // one file vdev
  EXPECT_TRUE(evaluate(f, cfg()).holds("not_repairable"));
  f.model = zfs_model(kMirrorAndSingle, "fxcaps", 2);
  EXPECT_FALSE(evaluate(f, cfg()).holds("not_repairable"));
  // A stripe of a mirror and one plain disk: a block on the disk has one copy.
  auto mixed = zfs::parse_zpool_status(testing::fixture(kMirrorAndSingle));
  ASSERT_TRUE(mixed.ok());
  auto pool = mixed->pools[0];
  pool.vdevs.insert(pool.vdevs.end(), mixed->pools[1].vdevs.begin(), mixed->pools[1].vdevs.end());
  f.model = zfs::stack_model(pool);
  auto e = evaluate(f, cfg());
  ASSERT_TRUE(e.holds("not_repairable"));
  for (const auto& x : e.findings)
    if (x.rule == "not_repairable") {
      EXPECT_NE(x.evidence.find("mirror+single"), std::string::npos) << x.evidence;
    }
  f.model.reset();
  EXPECT_FALSE(evaluate(f, cfg()).holds("not_repairable"));  // not known: not evaluable, never a finding
}

TEST(SetupRules, AutotrimOnlyMattersOnSsdsAndScrubNeverCompletedCountsFromFirstSeen) {
  auto f = healthy_zfs();
  f.zpool->autotrim = false;
  for (auto& d : f.devices) d.rotational = true;
  EXPECT_FALSE(evaluate(f, cfg()).holds("zfs_autotrim_off"));
  auto b = healthy_btrfs();
  b.scrub = ScrubFacts{kNow - 10 * 86400, 0, ""};
  EXPECT_FALSE(evaluate(b, cfg()).holds("scrub_overdue"));  // watched for 10 days only
  b.scrub->first_seen = kNow - 40 * 86400;
  EXPECT_TRUE(evaluate(b, cfg()).holds("scrub_overdue"));
  b.scrub->unsupported_reason = "kernel has no online scrub";
  EXPECT_FALSE(evaluate(b, cfg()).holds("scrub_overdue"));
}

TEST(SetupRules, BtrfsNodatacowAndBcachefsMountOption) {
  auto f = healthy_btrfs();
  f.options += ",nodatacow";
  EXPECT_TRUE(evaluate(f, cfg()).holds("btrfs_nodatasum"));
  EXPECT_EQ(data_checksummed(f), false);
  auto b = healthy_bcachefs();
  b.options = "rw,data_checksum=none";
  EXPECT_TRUE(evaluate(b, cfg()).holds("bcachefs_data_checksum_none"));
}

// ------------------------------------------------------------------ parsers on captured output
TEST(SetupParse, ZfsFuseTablesAndOpenZfs) {
  auto hdr = parse_property_table(data("zfs-fuse-zpool-get-all.txt"));
  ASSERT_TRUE(hdr.ok()) << hdr.error();
  EXPECT_EQ(hdr->at("setupcap").at("ashift"), "0");
  EXPECT_EQ(hdr->at("setupcap").at("capacity"), "0%");
  EXPECT_FALSE(hdr->at("setupcap").count("autotrim"));  // pool v23 has none
  EXPECT_NEAR(*property_bytes(hdr->at("setupcap").at("size")), 95.5 * 1024 * 1024, 1);
  auto ds = parse_property_table(data("zfs-fuse-zfs-get-Hp-checksum-off.txt"));
  ASSERT_TRUE(ds.ok()) << ds.error();
  EXPECT_EQ(ds->at("setupcap/vm").at("checksum"), "off");
  EXPECT_EQ(ds->at("setupcap").at("checksum"), "on");
  EXPECT_EQ(ds->at("setupcap/vm").at("recordsize"), "131072");
  auto oz = parse_property_table(data("openzfs-2.4.2-zpool-get-Hp-all.txt"));
  ASSERT_TRUE(oz.ok()) << oz.error();
  EXPECT_EQ(oz->at("mqltest").at("autotrim"), "off");
  EXPECT_EQ(oz->at("mqltest").at("capacity"), "0");
  EXPECT_EQ(*property_percent("44%"), 44);
  // The usage text zfs-fuse prints for -Hp is not a table.
  EXPECT_FALSE(parse_property_table(data("zfs-fuse-zpool-get-Hp-rejected.stderr.txt")).ok());
  EXPECT_FALSE(parse_property_table("").ok());
}

TEST(SetupParse, ZfsLayoutFromZpoolStatus) {
  auto st = zfs::parse_zpool_status(data("zfs-fuse-zpool-status-file-mirror.txt"));
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(st->pools.size(), 1u);
  auto l = zfs_layout(st->pools[0]);
  EXPECT_EQ(l.leaves, (std::vector<std::string>{"/tmp/setupx/v1", "/tmp/setupx/v2"}));
  EXPECT_EQ(zfs_pool_of("tank/vm/disk0@snap"), "tank");
  EXPECT_EQ(normalize_fs("fuse.zfs"), "zfs");
}

// ------------------------------------------------------------------ adapter on fixture trees
void mkfile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  write_text(p, text);
}

// sysfs of two disks (one NVMe SSD, one SATA HDD with a partition), an md raid1 over two partitions
// and a loop device backed by a file on /srv.
fs::path make_sys(const fs::path& root) {
  auto sys = root / "sys";
  auto disk = [&](const std::string& n, const std::string& devpath, bool rot, int phys, const std::string& model) {
    auto real = sys / "devices" / devpath / "block" / n;
    mkfile(real / "queue/rotational", rot ? "1\n" : "0\n");
    mkfile(real / "queue/physical_block_size", std::to_string(phys) + "\n");
    if (!model.empty()) mkfile(real / "device/model", model + "   \n");
    mkfile(real / "size", "2097152\n");
    fs::create_directories(sys / "block");
    fs::create_directories(sys / "class/block");
    fs::create_symlink(real, sys / "block" / n);
    fs::create_symlink(real, sys / "class/block" / n);
    return real;
  };
  auto sda = disk("sda", "pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0", true, 4096, "WDC WD40EFRX");
  auto sdb = disk("sdb", "pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0", true, 4096, "WDC WD40EFRX");
  disk("nvme0n1", "pci0000:00/0000:00:1d.0/nvme/nvme0", false, 4096, "Samsung SSD 990");
  mkfile(sys / "block/nvme0n1/device/transport", "pcie\n");
  for (auto [d, p] : {std::pair{sda, "sda1"}, std::pair{sdb, "sdb1"}}) {
    mkfile(d / p / "partition", "1\n");
    mkfile(d / p / "size", "1048576\n");
    fs::create_symlink(d / p, sys / "class/block" / p);
  }
  auto md = disk("md0", "virtual", false, 4096, "");
  mkfile(md / "md/level", "raid1\n");
  fs::create_directories(md / "slaves");
  fs::create_symlink(sda / "sda1", md / "slaves/sda1");
  fs::create_symlink(sdb / "sdb1", md / "slaves/sdb1");
  auto loop = disk("loop7", "virtual", false, 512, "");
  mkfile(loop / "loop/backing_file", "/srv/images/pool.img\n");
  mkfile(sys / "dev/block/9:0/.keep", "");
  fs::remove_all(sys / "dev/block/9:0");
  fs::create_symlink(md, sys / "dev/block/9:0");
  mkfile(root / "proc/sys/kernel/osrelease", "6.18.44-test\n");
  return sys;
}

TEST(SetupGather, BlockDevicesMdRaidAndLoopBacking) {
  TempDir tmp("fsaudit-setup-sys");
  make_sys(tmp.path());
  auto host = HostPaths::under(tmp.path());
  auto mounts = parse_mountinfo("30 1 8:3 / /srv rw,relatime shared:1 - ext4 /dev/sdc3 rw\n");
  ASSERT_TRUE(mounts.ok());
  auto sda1 = describe_block(host, "sda1", *mounts);
  EXPECT_EQ(sda1.disk, "sda");
  EXPECT_EQ(sda1.rotational, true);
  EXPECT_EQ(sda1.physical_block_size, 4096u);
  EXPECT_EQ(sda1.model, "WDC WD40EFRX");
  EXPECT_EQ(sda1.transport, "sata");
  EXPECT_EQ(describe_block(host, "nvme0n1", *mounts).transport, "pcie");
  auto loop = describe_block(host, "loop7", *mounts);
  EXPECT_EQ(loop.transport, "loop");
  EXPECT_EQ(loop.loop_backing_file, "/srv/images/pool.img");
  EXPECT_EQ(loop.loop_backing_fs, "ext4");
  EXPECT_EQ(loop.loop_backing_mount, "/srv");
  std::vector<std::string> leaves;
  auto l = lower_layers(host, "md0", &leaves);
  EXPECT_EQ(l.raid, "md-raid1");
  EXPECT_FALSE(l.integrity);
  EXPECT_EQ(leaves, (std::vector<std::string>{"sda1", "sdb1"}));

  // XFS on md0 (9:0): both blind-stack findings, with the md layout as evidence and in the signature.
  FakeRunner runner;
  ToolPaths tools;
  auto sc = cfg();
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", *mounts, kNow);
  Target t{"/var/lib/mysql", "/var/lib/mysql", "xfs", "/dev/md0", "rw", "rw", 9, 0};
  auto f = gather_facts(t, env);
  EXPECT_EQ(f.kernel_release, "6.18.44-test");
  ASSERT_EQ(f.devices.size(), 2u);
  auto e = evaluate(f, sc);
  EXPECT_TRUE(e.holds("no_data_checksums"));
  EXPECT_TRUE(e.holds("raid_without_integrity"));
  auto sig = stack_signature(f);
  EXPECT_EQ(sig["redundancy"], "md-raid1");
  EXPECT_EQ(sig["device_model"], "WDC WD40EFRX");
  EXPECT_EQ(sig["device_transport"], "sata");
  EXPECT_EQ(sig["data_checksums"], "off");
}

TEST(SetupGather, BtrfsAllocationFromSysfs) {
  TempDir tmp("fsaudit-setup-btrfs");
  auto sys = make_sys(tmp.path());
  auto id = std::string("0a5b1c2d-3e4f-5a6b-7c8d-9e0f1a2b3c4d");
  auto b = sys / "fs/btrfs" / id;
  for (auto n : {"sda1", "sdb1"}) mkfile(b / "devices" / n / "dev", "8:1\n");
  mkfile(b / "allocation/data/single/total_bytes", "1\n");
  mkfile(b / "allocation/data/disk_total", std::to_string(900ull << 20) + "\n");
  mkfile(b / "allocation/metadata/raid1/total_bytes", "1\n");
  mkfile(b / "allocation/metadata/disk_total", std::to_string(100ull << 20) + "\n");
  mkfile(b / "allocation/system/raid1/total_bytes", "1\n");
  mkfile(b / "allocation/system/disk_total", std::to_string(16ull << 20) + "\n");
  auto host = HostPaths::under(tmp.path());
  FakeRunner runner;
  ToolPaths tools;
  auto sc = cfg();
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", {}, kNow);
  env.scan_nocow = false;
  Target t{"/srv", "/srv", "btrfs", "/dev/sda1", "rw,nodatasum", "rw", 8, 1};
  auto f = gather_facts(t, env);
  ASSERT_TRUE(f.btrfs) << (f.problems.empty() ? "" : f.problems[0]);
  EXPECT_EQ(f.btrfs->data_profiles, std::vector<std::string>{"single"});
  EXPECT_EQ(f.btrfs->metadata_profiles, std::vector<std::string>{"raid1"});
  ASSERT_TRUE(f.btrfs->unallocated_bytes);
  EXPECT_EQ(*f.btrfs->unallocated_bytes, 2 * (512ull << 20) - (1016ull << 20));  // 2 x 512 MiB partitions
  f.size_bytes = 1024.0 * 1024 * 1024;
  auto e = evaluate(f, sc);
  EXPECT_TRUE(e.holds("btrfs_nodatasum"));
  EXPECT_TRUE(e.holds("not_repairable"));
  EXPECT_FALSE(e.holds("metadata_not_duplicated"));
  EXPECT_TRUE(e.holds("btrfs_unallocated_low"));  // 8 MiB left of 1 GiB
}

TEST(SetupGather, ZfsFuseThroughFakeToolsAndScrubState) {
  TempDir tmp("fsaudit-setup-zfs");
  auto host = HostPaths::under(tmp.path());
  // The file vdevs of the captured pool, on an ext4 mount in the fixture root.
  mkfile(tmp.path() / "tmp/setupx/v1", "");
  mkfile(tmp.path() / "tmp/setupx/v2", "");
  auto mounts = parse_mountinfo("30 1 8:3 / /tmp rw,relatime shared:1 - ext4 /dev/sdc3 rw\n" + data("zfs-fuse.mountinfo"));
  ASSERT_TRUE(mounts.ok());
  FakeRunner runner;
  runner.answer("zfs get -Hp checksum,copies,compression,recordsize setupcap/vm", data("zfs-fuse-zfs-get-Hp-checksum-off.txt"));
  runner.answer("zpool status", data("zfs-fuse-zpool-status-file-mirror.txt"));
  runner.answer("zpool get -Hp all setupcap", "", 2, data("zfs-fuse-zpool-get-Hp-rejected.stderr.txt"));
  runner.answer("zpool get all setupcap", data("zfs-fuse-zpool-get-all.txt"));
  ToolPaths tools;
  auto sc = cfg();
  mkfile(tmp.path() / "state/scrub/zfs_setupcap.state",
         "first_seen=" + std::to_string(kNow - 60 * 86400) + "\nlast_completed_end=0\n");
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", *mounts, kNow);
  Target t{"/setupcap/vm", "/setupcap/vm", "fuse.zfs", "setupcap/vm", "rw,relatime", "rw", 0, 40};
  auto f = gather_facts(t, env);
  EXPECT_EQ(f.fs, "zfs");
  ASSERT_TRUE(f.zpool);
  ASSERT_TRUE(f.zdataset);
  EXPECT_EQ(f.zpool->ashift, 0);
  EXPECT_FALSE(f.zpool->autotrim);
  ASSERT_EQ(f.zpool->stacked.size(), 2u);
  EXPECT_TRUE(f.zpool->stacked[0].is_file);
  EXPECT_EQ(f.zpool->stacked[0].backing_fs, "ext4");
  auto e = evaluate(f, sc);
  EXPECT_TRUE(e.holds("zfs_checksum_off"));
  EXPECT_TRUE(e.holds("zfs_stacked_vdev"));
  EXPECT_TRUE(e.holds("zfs_compression_off"));
  EXPECT_TRUE(e.holds("scrub_overdue"));
  EXPECT_FALSE(e.holds("not_repairable"));  // a mirror
  EXPECT_FALSE(e.holds("zfs_autotrim_off"));
  EXPECT_FALSE(e.holds("zfs_ashift_too_small"));
  EXPECT_EQ(runner.count("zpool status"), 1);
  // A second dataset of the same pool reuses this run's zpool status and zpool get.
  runner.answer("zfs get -Hp checksum,copies,compression,recordsize setupcap", data("zfs-fuse-zfs-get-Hp-checksum-off.txt"));
  Target root{"/setupcap", "/setupcap", "fuse.zfs", "setupcap", "rw", "rw", 0, 39};
  auto f2 = gather_facts(root, env);
  EXPECT_FALSE(evaluate(f2, sc).holds("zfs_checksum_off"));
  EXPECT_EQ(runner.count("zpool status"), 1);
  EXPECT_EQ(runner.count("zpool get all setupcap"), 1);
}

// 200 datasets were 200 `zfs get` processes per setup run: the properties of every mounted dataset
// now come from one command (per 256 datasets), and a dataset missing from its answer (unmounted
// in between) is asked for alone, so its own error is what is reported.
TEST(SetupGather, OneZfsGetForEveryMountedDataset) {
  TempDir tmp("fsaudit-setup-zfs-batch");
  auto host = HostPaths::under(tmp.path());
  auto mounts = parse_mountinfo(data("zfs-fuse.mountinfo") +
                                "44 42 0:41 / /setupcap/gone rw,relatime - fuse.zfs setupcap/gone rw,user_id=0\n");
  ASSERT_TRUE(mounts.ok());
  FakeRunner runner;
  const std::string batch = "zfs get -Hp checksum,copies,compression,recordsize setupcap setupcap/gone setupcap/vm";
  runner.answer(batch, data("zfs-fuse-zfs-get-Hp-checksum-off.txt"), 1,
                "cannot open 'setupcap/gone': dataset does not exist");
  runner.answer("zfs get -Hp checksum,copies,compression,recordsize setupcap/gone", "", 1,
                "cannot open 'setupcap/gone': dataset does not exist");
  runner.answer("zpool status", data("zfs-fuse-zpool-status-file-mirror.txt"));
  runner.answer("zpool get all setupcap", data("zfs-fuse-zpool-get-all.txt"));
  ToolPaths tools;
  auto sc = cfg();
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", *mounts, kNow);
  auto vm = gather_facts(Target{"/setupcap/vm", "/setupcap/vm", "fuse.zfs", "setupcap/vm", "rw", "rw", 0, 40}, env);
  auto root = gather_facts(Target{"/setupcap", "/setupcap", "fuse.zfs", "setupcap", "rw", "rw", 0, 39}, env);
  auto gone = gather_facts(Target{"/setupcap/gone", "/setupcap/gone", "fuse.zfs", "setupcap/gone", "rw", "rw", 0, 41}, env);
  EXPECT_EQ(runner.count(batch), 1);
  EXPECT_EQ(runner.count("zfs get -Hp checksum,copies,compression,recordsize setupcap/vm"), 0);
  EXPECT_EQ(runner.count("zfs get -Hp checksum,copies,compression,recordsize setupcap"), 0);
  ASSERT_TRUE(vm.zdataset);
  ASSERT_TRUE(root.zdataset);
  EXPECT_EQ(vm.zdataset->checksum, "off");
  EXPECT_EQ(root.zdataset->checksum, "on");
  EXPECT_TRUE(evaluate(vm, sc).holds("zfs_checksum_off"));
  EXPECT_FALSE(evaluate(root, sc).holds("zfs_checksum_off"));
  // The one the batch did not answer for: asked alone, and its error is its problem.
  EXPECT_EQ(runner.count("zfs get -Hp checksum,copies,compression,recordsize setupcap/gone"), 1);
  EXPECT_FALSE(gone.zdataset);
  std::string problems;
  for (const auto& p : gone.problems) problems += p + "\n";
  EXPECT_NE(problems.find("dataset does not exist"), std::string::npos) << problems;
}

TEST(SetupParse, ObjsetKstatGivesTheWriteSize) {
  auto o = parse_objset_kstat(data("openzfs-objset-kstat-vm-4k-writes.txt"));
  ASSERT_TRUE(o.ok()) << o.error();
  EXPECT_EQ(o->dataset, "tank/vm");
  EXPECT_EQ(o->nwritten / o->writes, 4096u);
  EXPECT_FALSE(parse_objset_kstat("dataset_name 7 tank\n").ok());
  EXPECT_FALSE(parse_objset_kstat("1 1 0x01\nname type data\ndataset_name 7 tank\n").ok());
}

TEST(SetupGather, RecordsizeAgainstTheMeasuredWriteSize) {
  TempDir tmp("fsaudit-setup-kstat");
  auto host = HostPaths::under(tmp.path());
  mkfile(tmp.path() / "proc/spl/kstat/zfs/tank/objset-0x36", data("openzfs-objset-kstat-vm-4k-writes.txt"));
  FakeRunner runner;
  runner.answer("zfs get -Hp checksum,copies,compression,recordsize tank/vm",
             "tank/vm\tchecksum\ton\tdefault\ntank/vm\tcopies\t1\tdefault\ntank/vm\tcompression\tlz4\tlocal\n"
             "tank/vm\trecordsize\t131072\tdefault\n");
  ToolPaths tools;
  auto sc = cfg();
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", {}, kNow);
  auto f = gather_facts(Target{"/tank/vm", "/tank/vm", "zfs", "tank/vm", "rw", "rw", 0, 50}, env);
  ASSERT_TRUE(f.measured_io_bytes);
  EXPECT_EQ(*f.measured_io_bytes, 4096);
  auto e = evaluate(f, sc);
  ASSERT_TRUE(e.holds("zfs_recordsize_mismatch"));
  EXPECT_NE(e.findings[0].evidence.find("32x"), std::string::npos) << e.findings[0].evidence;
}

TEST(SetupGather, ZfsToolFailureIsAProblemNotAFinding) {
  TempDir tmp("fsaudit-setup-zfs-missing");
  auto host = HostPaths::under(tmp.path());
  FakeRunner runner;
  runner.missing("zfs get -Hp checksum,copies,compression,recordsize tank/a");
  runner.answer("zpool status", "", 1, "connect: No such file or directory");
  ToolPaths tools;
  auto sc = cfg();
  GatherEnv env(host, runner, tools, sc, tmp.path() / "state", {}, kNow);
  auto f = gather_facts(Target{"/tank/a", "/tank/a", "zfs", "tank/a", "rw", "rw", 0, 50}, env);
  EXPECT_GE(f.problems.size(), 2u);
  EXPECT_TRUE(evaluate(f, sc).findings.empty());
}

// ------------------------------------------------------------------ NOCOW scan bounds
TEST(SetupNocow, ScanIsBoundedByEntriesAndDepth) {
  TempDir tmp("fsaudit-setup-nocow");
  for (int i = 0; i < 5; ++i) mkfile(tmp / ("d" + std::to_string(i)) / "a" / "b" / "deep.txt", "x");
  NocowOptions o;
  o.max_depth = 0;
  o.max_entries = 1000;
  auto s = scan_nocow(tmp.path(), o);
  EXPECT_EQ(s.examined, 5u);  // only the top level
  EXPECT_FALSE(s.truncated);
  EXPECT_EQ(s.nocow, 0u);     // not btrfs: no NOCOW flag anywhere
  o.max_depth = 3;
  s = scan_nocow(tmp.path(), o);
  EXPECT_EQ(s.examined, 20u);
  o.max_entries = 7;
  s = scan_nocow(tmp.path(), o);
  EXPECT_EQ(s.examined, 7u);
  EXPECT_TRUE(s.truncated);
  o.max_entries = 1000;
  o.skip = {(tmp / "d0").string()};
  EXPECT_EQ(scan_nocow(tmp.path(), o).examined, 16u);
}

// ------------------------------------------------------------------ coverage
CanaryProof proof(const Signature& sig, bool met, double age, double interval = 86400) {
  CanaryProof p;
  p.name = "btrfs-mirror";
  p.signature = sig;
  p.has_run = true;
  p.expectation_met = met;
  p.verdict = met ? "repaired" : "detected";
  p.expect = "repaired";
  p.finished = kNow - age;
  p.interval_seconds = interval;
  return p;
}

TEST(SetupCoverage, CoveredOnlyByAMatchingFreshCanaryThatMetItsExpectation) {
  auto sc = cfg();
  auto sig = stack_signature(healthy_btrfs());
  EXPECT_EQ(sig["redundancy"], "raid1");
  EXPECT_EQ(sig["data_checksums"], "on");
  EXPECT_EQ(sig["compression"], "off");
  EXPECT_TRUE(evaluate_coverage(sig, {proof(sig, true, 3600)}, sc, kNow).covered);
  // Stale: older than interval (24 h) + grace (6 h).
  auto stale = evaluate_coverage(sig, {proof(sig, true, 31 * 3600)}, sc, kNow);
  EXPECT_FALSE(stale.covered);
  EXPECT_NE(stale.reason.find("last met its expectation"), std::string::npos) << stale.reason;
  auto missed = evaluate_coverage(sig, {proof(sig, false, 3600)}, sc, kNow);
  EXPECT_FALSE(missed.covered);
  EXPECT_NE(missed.reason.find("did not meet"), std::string::npos) << missed.reason;
  // A different redundancy does not cover; the reason names the differing field.
  auto other = sig;
  other["redundancy"] = "single";
  auto miss = evaluate_coverage(sig, {proof(other, true, 60)}, sc, kNow);
  EXPECT_FALSE(miss.covered);
  EXPECT_NE(miss.reason.find("redundancy single != raid1"), std::string::npos) << miss.reason;
  // Device model is compared only when configured.
  auto model = sig;
  model["device_model"] = "other disk";
  EXPECT_TRUE(evaluate_coverage(sig, {proof(model, true, 60)}, sc, kNow).covered);
  sc.coverage_match.push_back("device_model");
  EXPECT_FALSE(evaluate_coverage(sig, {proof(model, true, 60)}, sc, kNow).covered);
  EXPECT_EQ(evaluate_coverage(sig, {}, sc, kNow).reason, "no canary configured");
}

TEST(SetupCoverage, CanarySignatureFromConfigUsesTheLayoutVocabulary) {
  config::CanaryTarget c;
  c.name = "zfs-m";
  c.fs = "zfs";
  c.layout = "mirror";
  auto s = canary_signature(c, nullptr, {}, "6.18");
  EXPECT_EQ(s["fs"], "zfs");
  EXPECT_EQ(s["redundancy"], "mirror");
  EXPECT_EQ(s["data_checksums"], "on");
  c.fs = "btrfs";
  c.layout = "raid1";
  c.mount_options = "nodatasum";
  EXPECT_EQ(canary_signature(c, nullptr, {}, "6.18")["data_checksums"], "off");
  c.fs = "xfs";
  c.layout = "plain";
  auto x = canary_signature(c, nullptr, {}, "6.18");
  EXPECT_EQ(x["redundancy"], "plain");
  EXPECT_EQ(redundancy_of(plain_xfs()), "md-raid1");
  EXPECT_EQ(normalize_layout("zfs", "raidz"), "raidz1");
}

TEST(SetupCoverage, SuggestPrintsAConfigThatParsesAndWouldMatch) {
  auto f = healthy_btrfs();
  f.options += ",compress=zstd:3";
  auto text = suggest_canary(f, cfg());
  EXPECT_NE(text.find("fs: btrfs"), std::string::npos) << text;
  EXPECT_NE(text.find("layout: raid1"), std::string::npos) << text;
  EXPECT_NE(text.find("compress=zstd:3"), std::string::npos) << text;
  // The printed YAML is a valid canary section (after filling in the device paths).
  auto c = config::parse_config("state_dir: /tmp/x\n" + text, "suggest");
  ASSERT_EQ(c.canary.canaries.size(), 1u);
  const auto& ct = c.canary.canaries[0];
  EXPECT_EQ(ct.devices.size(), 2u);
  auto sig = canary_signature(ct, nullptr, f.devices, f.kernel_release);
  EXPECT_TRUE(evaluate_coverage(stack_signature(f), {proof(sig, true, 60)}, cfg(), kNow).covered);
  // ZFS: the pool key; bcachefs: no canary support, said so.
  EXPECT_NE(suggest_canary(healthy_zfs(), cfg()).find("pool: fsaudit-cover-tank-vm"), std::string::npos);
  EXPECT_NE(suggest_canary(healthy_bcachefs(), cfg()).find("no canary support"), std::string::npos);
}

// ------------------------------------------------------------------ probe-level pieces
TEST(SetupProbe, TransitionsMetricsSilencingAndExemption) {
  auto sc = cfg();
  sc.silence.push_back({"/scratch*", {"no_data_checksums"}});
  sc.coverage_exempt = {"/boot"};
  auto x = plain_xfs();
  x.size_bytes = 100;
  auto scratch = plain_xfs();
  scratch.target = "/scratch";
  scratch.lower = {};
  scratch.size_bytes = 50;
  auto boot = plain_xfs();
  boot.target = "/boot";
  boot.size_bytes = 1;
  auto bt = healthy_btrfs();
  bt.size_bytes = 300;
  auto sig = stack_signature(bt);
  auto r = judge({x, scratch, boot, bt}, {proof(sig, true, 60)}, sc, kNow);
  auto b = setup_metrics(r, false);
  EXPECT_EQ(b.value("fsaudit_setup_finding", {{"target", "/var/lib/mysql"}, {"rule", "no_data_checksums"}}), 1);
  EXPECT_FALSE(b.has("fsaudit_setup_finding", {{"target", "/scratch"}}));
  EXPECT_EQ(b.value("fsaudit_setup_finding_silenced", {{"target", "/scratch"}, {"rule", "no_data_checksums"}}), 1);
  EXPECT_EQ(b.value("fsaudit_detection_covered", {{"target", "/srv"}}), 1);
  EXPECT_EQ(b.value("fsaudit_detection_covered", {{"target", "/var/lib/mysql"}}), 0);
  EXPECT_FALSE(b.has("fsaudit_detection_covered", {{"target", "/boot"}}));
  EXPECT_EQ(b.value("fsaudit_detection_production_bytes"), 450);
  EXPECT_EQ(b.value("fsaudit_detection_covered_bytes"), 300);
  EXPECT_DOUBLE_EQ(b.value("fsaudit_detection_coverage_ratio"), 300.0 / 450);
  EXPECT_EQ(b.value("fsaudit_stack_info", {{"target", "/srv"}, {"redundancy", "raid1"}, {"fs", "btrfs"}}), 1);
  EXPECT_EQ(b.value("fsaudit_canary_stack_info", {{"canary", "btrfs-mirror"}, {"redundancy", "raid1"}}), 1);

  auto m1 = finding_map(r);
  EXPECT_EQ(finding_transitions(m1, m1).size(), 0u);
  auto first = finding_transitions({}, m1);
  ASSERT_FALSE(first.empty());
  EXPECT_TRUE(first[0].appeared);
  EXPECT_FALSE(first[0].fix.empty());
  auto x2 = plain_xfs();
  x2.lower.integrity = true;  // both findings on /var/lib/mysql clear
  auto r2 = judge({x2, bt}, {}, sc, kNow);
  auto ev = finding_transitions(m1, finding_map(r2));
  int cleared = 0;
  for (const auto& e : ev) cleared += !e.appeared;
  EXPECT_EQ(cleared, static_cast<int>(ev.size()));
  EXPECT_GE(cleared, 3);  // mysql: 2 rules; /boot vanished: 1 rule
}

TEST(SetupProbe, RunLogsAppearOnceAndClearOnFixtureHost) {
  TempDir tmp("fsaudit-setup-run");
  make_sys(tmp.path());
  mkfile(tmp.path() / "proc/self/mountinfo",
         "30 1 9:0 / /var/lib/mysql rw,relatime shared:1 - xfs /dev/md0 rw,attr2\n"
         "31 1 0:5 / /proc rw - proc proc rw\n");
  auto c = config::parse_config("state_dir: " + (tmp / "state").string() + "\nhost: {procfs: " + (tmp / "proc").string() +
                                    ", sysfs: " + (tmp / "sys").string() + ", devfs: " + (tmp / "dev").string() + "}\n",
                                "test");
  std::vector<FindingEvent> events;
  SetupProbe p(c, [&](const FindingEvent& e) { events.push_back(e); });
  FakeRunner runner;
  ToolPaths tools;
  auto& clock = SystemClock::instance();
  ProbeContext ctx{c.host, runner, clock, tools, c.state_dir, {}, std::chrono::steady_clock::now() + std::chrono::seconds(30)};
  auto r = p.run(Target::host(), ctx);
  ASSERT_EQ(r.outcome, Outcome::ok) << r.reason;
  EXPECT_EQ(events.size(), 2u);  // no_data_checksums, raid_without_integrity
  EXPECT_EQ(r.metrics.value("fsaudit_setup_finding", {{"rule", "raid_without_integrity"}}), 1);
  EXPECT_EQ(r.metrics.value("fsaudit_detection_covered", {{"target", "/var/lib/mysql"}}), 0);
  events.clear();
  ASSERT_EQ(p.run(Target::host(), ctx).outcome, Outcome::ok);
  EXPECT_TRUE(events.empty()) << "a finding that still holds is not logged again";
  // A restart keeps the memory (state file): still nothing new.
  SetupProbe p2(c, [&](const FindingEvent& e) { events.push_back(e); });
  ASSERT_EQ(p2.run(Target::host(), ctx).outcome, Outcome::ok);
  EXPECT_TRUE(events.empty());
  // The filesystem is unmounted: its findings clear (and are logged as cleared).
  mkfile(tmp.path() / "proc/self/mountinfo", "31 1 0:5 / /proc rw - proc proc rw\n");
  auto r3 = p2.run(Target::host(), ctx);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].appeared);
}

TEST(SetupConfig, SectionParsesAndRejectsUnknownFields) {
  auto c = config::parse_config(
      "setup:\n  silence:\n    - target: /scratch\n      rules: [no_data_checksums]\n  scrub_max_age: 20d\n"
      "  nocow_scan: {max_depth: 1, max_entries: 50}\n  coverage: {match: [fs, redundancy], grace: 2h, exempt: []}\n",
      "t.yaml");
  EXPECT_TRUE(c.setup.silenced("/scratch", "no_data_checksums"));
  EXPECT_FALSE(c.setup.silenced("/scratch", "scrub_overdue"));
  EXPECT_EQ(c.setup.scrub_max_age, std::chrono::hours(24 * 20));
  EXPECT_EQ(c.setup.nocow_max_entries, 50);
  EXPECT_EQ(c.setup.coverage_match, (std::vector<std::string>{"fs", "redundancy"}));
  EXPECT_FALSE(c.setup.exempt("/boot"));
  EXPECT_TRUE(c.schedule("setup").enabled);
  EXPECT_THROW(config::parse_config("setup: {coverage: {match: [colour]}}\n", "t.yaml"), config::ConfigError);
  EXPECT_THROW(config::parse_config("setup: {silence: [{rules: [x]}]}\n", "t.yaml"), config::ConfigError);
}

}  // namespace
}  // namespace fsaudit::setup

namespace fsaudit::setup {
namespace {

// The CLI entry: `fsauditd canary suggest PATH` resolves the filesystem holding PATH on this host
// (read-only) and prints its signature and a canary entry or why none is possible.
TEST(SetupCli, CanarySuggestThroughTheDaemonBinary) {
  testing::TempDir tmp("fsaudit-setup-cli");
  testing::write_text(tmp / "c.yaml", "state_dir: " + (tmp / "state").string() + "\n");
  auto r = testing::run({FSAUDITD_BINARY, "canary", "suggest", tmp.path().string(), "--config", (tmp / "c.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# Stack of "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel_release="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# coverage now: NOT covered: no canary configured"), std::string::npos) << r.out;
  auto bad = testing::run({FSAUDITD_BINARY, "canary", "suggest", "/nonexistent/fsaudit/path", "--config",
                           (tmp / "c.yaml").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("No such file or directory"), std::string::npos) << bad.err;
  auto usage = testing::run({FSAUDITD_BINARY, "canary", "suggest"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("canary suggest TARGET"), std::string::npos) << usage.err;
}

}  // namespace
}  // namespace fsaudit::setup

// Issue 33: info findings (advice no alert reads, one per dataset on hosts of thousands) are series
// only with setup.detail: full; warnings always; the status page's facts list both either way.
namespace fsaudit::setup {
TEST(SetupProbe, InfoFindingsAreSeriesOnlyWithDetailFull) {
  HostReport r;
  TargetReport t;
  t.facts.target = "/tank/customer-7";
  t.eval.findings = {{"zfs_compression_off", "info", "compression=off"}, {"zfs_stacked_vdev", "warning", "a file vdev"}};
  r.targets.push_back(t);
  for (bool full : {false, true}) {
    SCOPED_TRACE(full ? "detail full" : "detail compact");
    auto b = setup_metrics(r, full);
    EXPECT_EQ(b.value("fsaudit_setup_finding", {{"target", "/tank/customer-7"}, {"rule", "zfs_stacked_vdev"}}), 1);
    EXPECT_EQ(b.has("fsaudit_setup_finding", {{"target", "/tank/customer-7"}, {"rule", "zfs_compression_off"}}), full);
    EXPECT_EQ(b.status.fs("/tank/customer-7").setup_findings.size(), 2u);
  }
}

}  // namespace fsaudit::setup
