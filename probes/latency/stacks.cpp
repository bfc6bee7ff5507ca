#include "probes/latency/stacks.hpp"
#include "daemon/core/fstype.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "daemon/core/strings.hpp"

namespace fsaudit::latency {

namespace fs = std::filesystem;

namespace {

using fstype::is_zfs;

// Rank of a mount as the home of its stack's probe file: smaller is better.
// A read-only mount only holds the probe file when the stack has no writable one (the sampler then
// reports read_only instead of going quiet).
std::tuple<bool, std::size_t, std::size_t, std::size_t, std::string> rank(const MountEntry& m) {
  if (is_zfs(m.fstype)) {
    auto depth = static_cast<std::size_t>(std::count(m.source.begin(), m.source.end(), '/'));
    return {m.read_only(), depth, 0, m.mountpoint.size(), m.mountpoint};
  }
  return {m.read_only(), m.root == "/" ? 0u : 1u, m.root.size(), m.mountpoint.size(), m.mountpoint};
}

std::string join_dir(const std::string& base, const std::string& name) { return (fs::path(base) / name).string(); }

}  // namespace

std::string StackPlan::dir(const std::string& dir_name) const { return join_dir(target, dir_name); }

std::string stack_id(const MountEntry& m, const HostPaths& host, btrfs::SysfsMemo* memo) {
  if (is_zfs(m.fstype)) {
    auto pool = m.source.substr(0, m.source.find('/'));
    if (!pool.empty()) return "zfs:" + pool;
  }
  if (m.fstype == "btrfs") {
    // The btrfs probe owns which fsid a mount source belongs to (by member name or device number).
    if (auto fsid = btrfs::find_fsid(host, m.source, memo)) return "btrfs:" + *fsid;
  }
  std::string mm = std::to_string(m.major) + ":" + std::to_string(m.minor);
  if (m.major != 0) {
    std::error_code ec;
    fs::path link = host.sys("dev/block/" + mm);
    auto t = fs::read_symlink(link, ec);
    if (!ec && !t.filename().empty()) {
      std::error_code ec2;
      bool md = fs::exists(link / "md", ec2);
      return (md ? "md:" : "block:") + t.filename().string();
    }
  }
  return "dev:" + mm;
}

std::vector<StackPlan> plan_stacks(const std::vector<MountEntry>& mounts, const std::vector<Target>& watched,
                                   const StackSelection& sel, const HostPaths& host,
                                   std::vector<std::string>* warnings) {
  struct Work {
    StackPlan plan;
    const MountEntry* best = nullptr;
    bool opted_in = false;
  };
  std::map<std::string, Work> by_id;
  auto excluded = [&](const std::string& mp) {
    return std::any_of(sel.exclude.begin(), sel.exclude.end(), [&](const std::string& g) { return glob_match(g, mp); });
  };

  // The entry visible at each mount point (later entries shadow earlier ones), indexed once: a scan
  // of the table per target made a replan quadratic (10,000 mounts: a tenth of the daemon's CPU).
  std::unordered_map<std::string_view, const MountEntry*> visible;
  visible.reserve(mounts.size());
  for (const auto& m : mounts) visible[m.mountpoint] = &m;
  btrfs::SysfsMemo memo;  // one look at sysfs per btrfs, not one per mount of it
  for (const auto& t : watched) {
    if (t.is_host()) continue;
    auto at = visible.find(t.mountpoint);
    if (at == visible.end()) continue;
    const MountEntry* m = at->second;
    auto& w = by_id[stack_id(*m, host, &memo)];
    w.plan.targets.push_back(t.name);
    if (!sel.discover || excluded(m->mountpoint)) continue;
    if (!w.best || rank(*m) < rank(*w.best)) w.best = m;
  }

  for (const auto& path : sel.opt_in) {
    const MountEntry* m = containing_mount(mounts, path);
    if (!m) {
      if (warnings) warnings->push_back("latency.targets: " + path + " is not on any mounted filesystem");
      continue;
    }
    auto id = stack_id(*m, host, &memo);
    auto& w = by_id[id];
    if (w.opted_in) {
      if (warnings)
        warnings->push_back("latency.targets: " + path + " is on device stack " + id + " like " + w.plan.target +
                            "; one sampler per stack, so it is sampled through " + w.plan.target);
      continue;
    }
    w.opted_in = true;
    w.best = m;
    w.plan.target = path;
  }

  std::unordered_map<std::string_view, const Target*> watched_by_name;
  for (const auto& t : watched)
    if (!t.is_host()) watched_by_name.try_emplace(t.name, &t);
  std::vector<StackPlan> out;
  out.reserve(by_id.size());  // grown by doubling, up to half of it was slack (2 MB at 9,000 stacks)
  for (auto& [id, w] : by_id) {
    StackPlan p = std::move(w.plan);
    p.id = id;
    if (w.best) {
      p.sampled = true;
      p.fs = w.best->fstype;
      if (!w.opted_in) p.target = w.best->mountpoint;
      if (p.target != w.best->mountpoint) p.mount = w.best->mountpoint;
    } else {
      p.why = !sel.discover ? "latency.discover is false and no latency.targets path is on this stack"
                            : "every mount of this stack matches latency.exclude";
    }
    const std::string dir = p.sampled ? p.dir(sel.dir_name) : std::string();
    for (const auto& name : p.targets) {  // in the order of `watched`, as they were added
      auto d = join_dir(watched_by_name.at(name)->mountpoint, sel.dir_name);
      if (!p.sampled || d != dir) p.other_dirs.push_back(std::move(d));
    }
    if (p.sampled && p.targets.size() == 1 && p.targets[0] == p.target) p.targets.clear();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fsaudit::latency
