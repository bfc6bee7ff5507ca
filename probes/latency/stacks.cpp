#include "probes/latency/stacks.hpp"
#include "daemon/core/fstype.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "daemon/core/strings.hpp"

namespace fsaudit::latency {

namespace fs = std::filesystem;

namespace {

using fstype::is_zfs;

// The kernel's name of the block device a mount source names: /dev/mapper/x -> dm-0 (the link's
// target), /dev/loop3 -> loop3.
std::string device_name(const std::string& source, const HostPaths& host) {
  if (source.rfind("/dev/", 0) != 0) return "";
  std::error_code ec;
  fs::path p = host.dev(source.substr(5));
  if (fs::is_symlink(p, ec)) {
    auto t = fs::read_symlink(p, ec);
    if (!ec) return t.filename().string();
  }
  return fs::path(source).filename().string();
}

std::string btrfs_fsid(const MountEntry& m, const HostPaths& host) {
  auto dev = device_name(m.source, host);
  if (dev.empty()) return "";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(host.sys("fs/btrfs"), ec)) {
    std::error_code ec2;
    if (fs::exists(e.path() / "devices" / dev, ec2) || fs::is_symlink(e.path() / "devices" / dev, ec2))
      return e.path().filename().string();
  }
  return "";
}

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

// The entry that is visible at `mountpoint` (later entries shadow earlier ones).
const MountEntry* entry_at(const std::vector<MountEntry>& mounts, const std::string& mountpoint) {
  const MountEntry* found = nullptr;
  for (const auto& m : mounts)
    if (m.mountpoint == mountpoint) found = &m;
  return found;
}

std::string join_dir(const std::string& base, const std::string& name) { return (fs::path(base) / name).string(); }

}  // namespace

std::string stack_id(const MountEntry& m, const HostPaths& host) {
  if (is_zfs(m.fstype)) {
    auto pool = m.source.substr(0, m.source.find('/'));
    if (!pool.empty()) return "zfs:" + pool;
  }
  if (m.fstype == "btrfs") {
    auto fsid = btrfs_fsid(m, host);
    if (!fsid.empty()) return "btrfs:" + fsid;
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

  for (const auto& t : watched) {
    if (t.is_host()) continue;
    const MountEntry* m = entry_at(mounts, t.mountpoint);
    if (!m) continue;
    auto& w = by_id[stack_id(*m, host)];
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
    auto id = stack_id(*m, host);
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
    w.plan.dir = join_dir(path, sel.dir_name);
  }

  std::vector<StackPlan> out;
  for (auto& [id, w] : by_id) {
    StackPlan p = std::move(w.plan);
    p.id = id;
    if (w.best) {
      p.sampled = true;
      p.fs = w.best->fstype;
      p.mountpoint = w.best->mountpoint;
      if (!w.opted_in) {
        p.target = w.best->mountpoint;
        p.dir = join_dir(w.best->mountpoint, sel.dir_name);
      }
    } else {
      p.why = !sel.discover ? "latency.discover is false and no latency.targets path is on this stack"
                            : "every mount of this stack matches latency.exclude";
    }
    for (const auto& t : watched) {
      if (t.is_host() || std::find(p.targets.begin(), p.targets.end(), t.name) == p.targets.end()) continue;
      auto d = fs::path(join_dir(t.mountpoint, sel.dir_name));
      if (!p.sampled || d != p.dir) p.other_dirs.push_back(d);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fsaudit::latency
