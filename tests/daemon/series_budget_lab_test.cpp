// The series budget (issue 33) on the real thing: one `fsauditd --once` with its default settings on
// an ext4, an XFS and a btrfs filesystem (each on its own loop device) and a zfs-fuse pool with two
// datasets. Every sample that names one of them is charged to it, and a class over its budget fails:
//   a filesystem or dataset (samples with its `target` and no `stack`/`pool`)      at most 12
//   a device stack or pool (samples with its `stack`, its `pool`, or the pool as   at most 8
//     `target`; the scrub's series of a filesystem on the stack)
//   so a plain filesystem on its own disk carries at most 20 and a ZFS dataset 12.
// The breakdown by family is printed on every run: it is the repeatable count the budget is planned on.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <unistd.h>

#include "tests/support/daemon_process.hpp"
#include "tests/support/lab.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kFilesystemBudget = 12, kStackBudget = 8, kPlainDiskBudget = kFilesystemBudget + kStackBudget;

// Classes still over their budget by default, each with the count it may not grow past: what the
// cut of issue 33 has not reached yet (probes owned elsewhere). A class listed here that is back
// within its budget fails too, so the list only ever shrinks.
const std::map<std::string, int>& known_over() {
  static const std::map<std::string, int> m{
      // The pool's latency (3) and scrub (4) are within the 8 of a device stack; its own health and
      // capacity come on top: state, scan function and state, data errors, size and allocated bytes
      // (6), and each vdev's state (1 while its error counters are 0). A pool built with redundancy
      // adds its margin and designed redundancy (2); this one is a single file vdev.
      {"pool zfs", 14},
  };
  return m;
}

struct Charge {
  int total = 0;
  std::map<std::string, int> by_family;
};

std::string family_of(const ScrapeSample& s) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    std::string_view n = s.name, x = suffix;
    if (n.size() > x.size() && n.substr(n.size() - x.size()) == x && s.name.rfind("fsaudit_fsync_latency_seconds", 0) == 0)
      return s.name.substr(0, n.size() - x.size());
  }
  return s.name;
}

TEST(SeriesBudgetLab, DefaultScrapeKeepsEveryFilesystemStackAndPoolWithinBudget) {
  FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP();
  TempDir dir("fsaudit-series-budget");
  auto mnt = dir / "mnt";
  LoopDevice ext4(dir.path(), "ext4.img", 64 << 20), xfs(dir.path(), "xfs.img", 300 << 20),
      btrfs(dir.path(), "btrfs.img", 128 << 20);
  ASSERT_TRUE(ext4.ok() && xfs.ok() && btrfs.ok());
  must({"mkfs.ext4", "-q", "-F", ext4.device()});
  must({"mkfs.xfs", "-q", "-f", xfs.device()});
  must({"mkfs.btrfs", "-q", "-f", btrfs.device()});
  Mount m_ext4(ext4.device(), mnt / "ext4", "ext4"), m_xfs(xfs.device(), mnt / "xfs", "xfs"),
      m_btrfs(btrfs.device(), mnt / "btrfs", "btrfs");
  ASSERT_TRUE(m_ext4.ok() && m_xfs.ok() && m_btrfs.ok()) << m_ext4.error() << m_xfs.error() << m_btrfs.error();
  ZfsFuse zfs;
  ASSERT_TRUE(zfs.ok()) << zfs.error();
  auto vdev = dir / "pool.img";
  must({"truncate", "-s", "256M", vdev.string()});
  const std::string pool = "fsauditbudget" + std::to_string(::getpid());
  ZfsPool p(pool, {"-m", (mnt / "zfs").string(), vdev.string()});
  ASSERT_TRUE(p.ok()) << p.error();
  must({"zfs", "create", pool + "/d0"});
  must({"zfs", "create", pool + "/d1"});

  // What each target is: the plain filesystems, the datasets (the pool's root dataset is one too).
  const std::map<std::string, std::string> plain{
      {(mnt / "ext4").string(), "ext4"}, {(mnt / "xfs").string(), "xfs"}, {(mnt / "btrfs").string(), "btrfs"}};
  const std::vector<std::string> datasets{(mnt / "zfs").string(), (mnt / "zfs/d0").string(), (mnt / "zfs/d1").string()};

  fs::create_directories(dir / "state");
  write_text(dir / "fsaudit.yaml", "listen: 127.0.0.1:" + std::to_string(free_port()) + "\nstate_dir: " +
                                       (dir / "state").string() + "\ntargets:\n  include: [\"" + mnt.string() +
                                       "/*\"]\n  fstypes: [ext4, xfs, btrfs, fuse.zfs]\n");
  auto once = run({fsauditd_binary(), "--once", "--config", (dir / "fsaudit.yaml").string()}, 300);
  ASSERT_EQ(once.exit_code, 0) << once.err;
  const auto samples = scrape_samples(once.out);
  ASSERT_GT(samples.size(), 50u) << once.out;

  // Which stack holds each plain filesystem: its latency stack (block:loopN, btrfs:<fsid>).
  std::map<std::string, std::string> stack_of;
  for (const auto& s : samples)
    if (s.name == "fsaudit_latency_stack_info" && plain.count(s.labels.at("target")))
      stack_of[s.labels.at("target")] = s.labels.at("stack");
  ASSERT_EQ(stack_of.size(), plain.size()) << scrape_lines(once.out, "fsaudit_latency_stack_info");

  std::map<std::string, Charge> by_target, by_stack;
  Charge pool_charge;
  const std::string zfs_stack = "zfs:" + pool;
  auto label = [](const ScrapeSample& s, const char* k) {
    auto it = s.labels.find(k);
    return it == s.labels.end() ? std::string() : it->second;
  };
  for (const auto& s : samples) {
    auto add = [&](Charge& c) {
      ++c.total;
      ++c.by_family[family_of(s)];
    };
    const auto stack = label(s, "stack"), target = label(s, "target");
    // A scrub checks the device stack under a filesystem (the issue's "8 per device stack or pool
    // (latency, scrub)"): an XFS or btrfs target's scrub series are its stack's.
    const bool scrub = s.name.rfind("fsaudit_scrub_", 0) == 0;
    const bool dataset = std::find(datasets.begin(), datasets.end(), target) != datasets.end();
    // The stack of each filesystem: one series per filesystem, charged to a dataset (a pool holds
    // thousands) and to a plain filesystem's stack (which holds that one filesystem).
    if (s.name == "fsaudit_latency_stack_info" && dataset) add(by_target[target]);
    else if (stack == zfs_stack || label(s, "pool") == pool || target == pool) add(pool_charge);
    else if (!stack.empty()) add(by_stack[stack]);
    else if (scrub && stack_of.count(target)) add(by_stack[stack_of[target]]);
    else if (!target.empty() && (plain.count(target) || dataset)) add(by_target[target]);
  }

  std::map<std::string, std::pair<int, int>> classes;  // class -> (count, budget)
  for (const auto& [target, fstype] : plain) {
    int fs_n = by_target[target].total, st_n = by_stack[stack_of[target]].total;
    classes["filesystem " + fstype] = {fs_n, kFilesystemBudget};
    classes["stack " + fstype] = {st_n, kStackBudget};
    classes["plain disk " + fstype] = {fs_n + st_n, kPlainDiskBudget};
  }
  int dataset_max = 0;
  for (const auto& d : datasets) dataset_max = std::max(dataset_max, by_target[d].total);
  classes["filesystem zfs dataset"] = {dataset_max, kFilesystemBudget};
  classes["pool zfs"] = {pool_charge.total, kStackBudget};
  // The part the "8 per device stack or pool (latency, scrub)" names, which holds; the
  // pool's own health and capacity (zpool status and list) come on top, 4 more per vdev.
  int pool_latency_scrub = 0;
  for (const auto& [f, n] : pool_charge.by_family)
    if (f.rfind("fsaudit_fsync_", 0) == 0 || f.rfind("fsaudit_latency_", 0) == 0 || f.rfind("fsaudit_scrub_", 0) == 0)
      pool_latency_scrub += n;
  classes["pool zfs latency and scrub"] = {pool_latency_scrub, kStackBudget};

  // The count, for planning (and for the issue): every class, then every family charged.
  auto print = [](const std::string& what, const Charge& c) {
    std::cout << "[ budget ] " << what << ": " << c.total << " series:";
    for (const auto& [f, n] : c.by_family) std::cout << " " << f << "=" << n;
    std::cout << "\n";
  };
  for (const auto& [target, fstype] : plain) {
    print("filesystem " + fstype, by_target[target]);
    print("stack " + stack_of[target], by_stack[stack_of[target]]);
  }
  for (const auto& d : datasets) print("dataset " + d, by_target[d]);
  print("pool " + pool, pool_charge);

  for (const auto& [cls, nb] : classes) {
    const auto [n, budget] = nb;
    std::cout << "[ budget ] " << cls << ": " << n << " (budget " << budget << ")\n";
    EXPECT_GT(n, 0) << cls << ": nothing charged; the classification no longer sees its series\n" << once.out;
    auto over = known_over().find(cls);
    if (over == known_over().end()) {
      EXPECT_LE(n, budget) << cls << " carries " << n << " series by default, its budget is " << budget;
    } else {
      EXPECT_LE(n, over->second) << cls << " grew past its known count " << over->second << " (budget " << budget << ")";
      EXPECT_GT(n, budget) << cls << " is within its budget now: remove it from known_over()";
    }
  }
}

}  // namespace
}  // namespace fsaudit::testing
