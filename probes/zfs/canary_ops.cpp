#include "probes/zfs/canary_ops.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <thread>

#include "probes/zfs/members.hpp"
#include "probes/zfs/properties.hpp"
#include "probes/zfs/scrub_driver.hpp"
#include "probes/zfs/stack.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::zfs {

namespace fs = std::filesystem;

namespace {
// A leaf as zpool names it ("sdb1", "/dev/sdb1", a file vdev, or a /dev/disk/by-* name as most pools
// are built) as a resolved path under the host's /dev: member_device() finds the device, as it does
// for the disk probe.
std::string member_path(const HostPaths& host, const std::string& name) {
  std::string dev = member_device(host, name);
  if (dev.starts_with("/dev/")) dev = host.dev(dev.substr(5)).string();
  return canary::canonical_member(host, dev.empty() ? name : dev);
}
}  // namespace

Result<std::vector<std::string>> CanaryOps::members() {
  auto r = run({env_.tool("zpool"), "status", "-P", t_.pool});
  if (!r.ok()) r = run({env_.tool("zpool"), "status", t_.pool});  // zfs-fuse has no -P
  if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
  auto rep = parse_zpool_status(r.out);
  if (!rep || rep->pools.empty()) return err("cannot parse zpool status of " + t_.pool);
  std::vector<std::string> out;
  for (const auto& v : rep->pools[0].vdevs)
    if (v.leaf && v.role == "data") out.push_back(v.name);
  // Resolved as the counters resolve them: zfs-fuse, without -P, prints a loop device as "loop5".
  for (auto& p : out) p = member_path(env_.host, p);
  return out;
}

Result<void> CanaryOps::take_offline() {
  return run_until_not_busy({env_.tool("zpool"), "export", t_.pool}, "zpool export " + t_.pool);
}

Result<void> CanaryOps::bring_online() {
  std::vector<std::string> argv = {env_.tool("zpool"), "import"};
  std::set<std::string> dirs;
  for (const auto& d : t_.devices) dirs.insert(fs::path(d).parent_path().string());
  for (const auto& d : dirs) argv.insert(argv.end(), {"-d", d});
  argv.push_back(t_.pool);
  auto r = run(argv);
  if (!r.ok()) return err("zpool import " + t_.pool + ": " + r.describe());
  return {};
}

Result<canary::Counters> CanaryOps::counters() {
  canary::Counters c;
  auto r = run({env_.tool("zpool"), "status", t_.pool});
  if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
  auto rep = parse_zpool_status(r.out);
  if (!rep || rep->pools.empty()) return err("cannot parse zpool status of " + t_.pool);
  // Leaf vdevs by tree structure, whatever their names look like.
  for (const auto& v : rep->pools[0].vdevs) {
    if (!v.leaf) continue;
    c.checksum += v.checksum_errors.value_or(0);
    c.read += v.read_errors.value_or(0);
    c.per_device[member_path(env_.host, v.name)] += v.checksum_errors.value_or(0) + v.read_errors.value_or(0);
  }
  return c;
}

Result<stack::StackModel> CanaryOps::model() {
  auto r = run({env_.tool("zpool"), "status", t_.pool});
  if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
  auto rep = parse_zpool_status(r.out);
  if (!rep) return err("zpool status " + t_.pool + ": " + rep.error());
  auto pool = std::find_if(rep->pools.begin(), rep->pools.end(), [&](const auto& p) { return p.name == t_.pool; });
  if (pool == rep->pools.end()) return err("zpool status " + t_.pool + " printed no pool " + t_.pool);
  // A pool that is not whole is refused whatever its dataset says: zfs get may not answer for it.
  auto ds = [&]() -> Result<DatasetShape> {
    auto g = run({env_.tool("zfs"), "get", "-Hp", kDatasetShapeProps, t_.pool});
    if (!g.ok()) return err("zfs get " + std::string(kDatasetShapeProps) + " " + t_.pool + ": " + g.describe());
    auto props = parse_property_table(g.out);
    if (!props) return err("zfs get " + t_.pool + ": " + props.error());
    return dataset_shape(*props, t_.pool);
  }();
  if (!ds) {
    auto whole = stack_model(*pool);
    if (!whole.healthy()) return whole;
    return err(ds.error());
  }
  return stack_model(*pool, *ds);
}

canary::ScrubOutcome CanaryOps::scrub() {
  canary::ScrubOutcome o;
  auto t0 = std::chrono::steady_clock::now();
  o.supported = true;
  auto before = counters();
  auto r = run(scrub_start_argv(env_.tool("zpool"), t_.pool));  // the scrub driver's start
  if (!r.ok()) {
    o.error = "zpool scrub " + t_.pool + ": " + r.describe();
    return o;
  }
  // Watched as the scrub probe watches it: the driver's reading of the pool's scan line. The first
  // polls may still show the scrub before this one (a small canary's scrub can end within them), so
  // an ended scrub counts once this one was seen running, or ended after it was started, or after
  // 2 s of polls (a clock or time zone that makes the end time unreadable must not stall the cycle).
  const double started = static_cast<double>(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
  scrub::Observation seen;
  bool ended = false, saw_running = false;
  for (int i = 0; i < 6000 && !ended; ++i) {
    if (env_.stop.stop_requested()) {
      o.error = "cancelled while waiting for the scrub";
      return o;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 20 ? 100 : 500));
    auto s = run({env_.tool("zpool"), "status", t_.pool});
    auto rep = parse_zpool_status(s.out);
    auto pool = rep ? std::find_if(rep->pools.begin(), rep->pools.end(), [&](const auto& p) { return p.name == t_.pool; })
                    : std::vector<ZfsPoolStatus>::const_iterator{};
    if (!rep || pool == rep->pools.end()) continue;
    seen = observation_from_pool(*pool);
    saw_running = saw_running || seen.phase != scrub::Phase::idle;
    ended = seen.phase == scrub::Phase::idle && seen.last_outcome != scrub::Outcome::none &&
            (saw_running || i >= 20 || !seen.last_end || *seen.last_end >= started - 2);
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ended || seen.last_outcome != scrub::Outcome::finished) {
    o.error = "zpool scrub did not finish: " + seen.detail;
    return o;
  }
  o.ok = true;
  auto after = counters();
  std::uint64_t delta = (before && after && after->total() >= before->total()) ? after->total() - before->total() : 0;
  o.errors_found = delta;
  o.uncorrectable = seen.errors.uncorrectable.value_or(0);
  o.errors_repaired = delta >= o.uncorrectable ? delta - o.uncorrectable : 0;
  if (seen.repaired_bytes.value_or(0) > 0 && o.errors_repaired == 0) o.errors_repaired = 1;
  o.summary = "zpool scrub: " + seen.detail;
  return o;
}

Result<void> CanaryOps::clear_counters() {
  auto r = run({env_.tool("zpool"), "clear", t_.pool});
  if (!r.ok()) return err("zpool clear " + t_.pool + ": " + r.describe());
  return {};
}

// zfs-fuse's smallest vdev: the lab's pools are as small as they can be.
constexpr std::uint64_t kLabVdevSize = 64ull << 20;

Result<void> CanaryOps::build_lab(canary::LabHost& lab, const canary::LabSpec& spec) {
  if (auto z = lab.start_zfs(); !z) return z;
  t_.devices.clear();
  for (int i = 0; i < spec.members; ++i) {
    auto f = lab.image(spec.name + "-" + std::to_string(i) + ".vdev", kLabVdevSize);
    if (!f) return err(f.error());
    t_.devices.push_back(*f);
  }
  t_.pool = lab.new_pool_name();
  std::vector<std::string> argv = {"zpool", "create", "-f", "-m", t_.mountpoint, t_.pool};
  if (!spec.profile.empty()) argv.push_back(spec.profile);
  argv.insert(argv.end(), t_.devices.begin(), t_.devices.end());
  if (auto r = lab.run(argv); !r.ok()) return err("zpool create: " + r.describe());
  lab.created_pool(t_.pool);
  if (spec.copies > 1)
    if (auto r = lab.run({"zfs", "set", "copies=" + std::to_string(spec.copies), t_.pool}); !r.ok())
      return err("zfs set copies: " + r.describe());
  return lab.wait_mounted(t_.mountpoint);
}

}  // namespace fsaudit::zfs

