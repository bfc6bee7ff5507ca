#include "probes/kernel_log/attribution.hpp"
#include "daemon/core/fstype.hpp"

#include <set>
#include <system_error>

#include "daemon/core/block_device.hpp"
#include "daemon/core/files.hpp"
#include "daemon/probe/targets.hpp"

namespace fsaudit::kernel_log {

namespace fs = std::filesystem;

namespace {
void put(std::map<std::string, std::string>& m, const std::string& key, const std::string& mountpoint) {
  if (key.empty()) return;
  auto it = m.find(key);
  if (it == m.end() || mountpoint.size() < it->second.size()) m[key] = mountpoint;  // shortest mount wins
}
}  // namespace

TargetResolver::TargetResolver(const HostPaths& host) : host_(host) {
  auto table = read_mount_table(host_);
  if (!table) return;
  const auto& mounts = *table;
  std::error_code ec;
  // btrfs: uuid -> member device names
  std::map<std::string, std::set<std::string>> btrfs_members;
  for (const auto& d : fs::directory_iterator(host_.sys("fs/btrfs"), ec)) {
    std::set<std::string> names;
    std::error_code ec2;
    for (const auto& m : fs::directory_iterator(d.path() / "devices", ec2)) names.insert(m.path().filename());
    if (!names.empty()) btrfs_members[d.path().filename()] = std::move(names);
  }
  for (const auto& m : *mounts) {
    if (fstype::is_pseudo(m.fstype)) continue;
    std::set<std::string> names;
    if (m.major != 0)
      if (auto n = block::name_of_devnum(host_, m.major, m.minor)) names.insert(*n);
    if (m.source.rfind("/dev/", 0) == 0) {
      put(by_name_, m.source, m.mountpoint);
      names.insert(kernel_name(m.source));
    }
    if (m.fstype == "btrfs")
      for (const auto& [uuid, members] : btrfs_members)
        for (const auto& n : names)
          if (members.count(n)) {
            names.insert(members.begin(), members.end());
            break;
          }
    for (const auto& n : names) put(by_name_, n, m.mountpoint);
  }
}

std::string TargetResolver::kernel_name(const std::string& device) const {
  if (device.rfind("/dev/", 0) != 0) return device;
  return block::kernel_name_or_last(host_, device);
}

void TargetResolver::collect(const std::string& name, int depth, std::map<std::string, int>* out) const {
  if (depth > 4 || name.empty() || out->count(name)) return;
  (*out)[name] = depth;
  std::error_code ec;
  for (const auto& h : fs::directory_iterator(host_.sys("class/block/" + name + "/holders"), ec))
    collect(h.path().filename(), depth + 1, out);
  std::error_code ec2;
  for (const auto& p : fs::directory_iterator(host_.sys("block/" + name), ec2)) {
    std::string sub = p.path().filename();
    if (sub.size() > name.size() && sub.compare(0, name.size(), name) == 0) collect(sub, depth + 1, out);
  }
}

std::string TargetResolver::target_of(const std::string& device) const {
  if (device.empty()) return "";
  if (auto it = by_name_.find(device); it != by_name_.end()) return it->second;
  std::string name = kernel_name(device);
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  std::map<std::string, int> reach;
  collect(name, 0, &reach);
  std::set<std::string> found;
  for (const auto& [n, d] : reach)
    if (auto it = by_name_.find(n); it != by_name_.end()) found.insert(it->second);
  return found.size() == 1 ? *found.begin() : "";
}

std::string TargetResolver::target_of(const Event& ev) const {
  const bool member_first = ev.kind == kind::device_stats;
  std::string t = target_of(member_first ? ev.device : ev.fs_device);
  if (t.empty() && ev.device != ev.fs_device) t = target_of(member_first ? ev.fs_device : ev.device);
  return t;
}

}  // namespace fsaudit::kernel_log
