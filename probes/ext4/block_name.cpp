#include "probes/ext4/block_name.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "daemon/core/block_device.hpp"

namespace fsaudit::ext4 {

namespace fs = std::filesystem;

std::vector<std::string> block_name_candidates(const HostPaths& host, const Target& t) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (!n.empty() && n != "." && n != ".." && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  if (t.dev_major != 0)
    if (auto n = block::name_of_devnum(host, t.dev_major, t.dev_minor)) add(*n);
  if (t.source.starts_with("/dev/"))
    if (auto n = block::kernel_name(host, t.source)) add(*n);
  add(fs::path(t.source).filename().string());
  return out;
}

// The candidates of block_name_candidates(), in its order, each tried as soon as it is known: the
// first (the mount's device number, one readlink) nearly always answers, and the probe runs per
// target per interval.
std::string sysfs_fs_dir_name(const HostPaths& host, const Target& t, const std::string& fs_dir) {
  std::error_code ec;
  const fs::path base = host.sys("fs") / fs_dir;
  auto found = [&](const std::string& n) { return !n.empty() && n != "." && n != ".." && fs::is_directory(base / n, ec); };
  if (t.dev_major != 0)
    if (auto n = block::name_of_devnum(host, t.dev_major, t.dev_minor); n && found(*n)) return *n;
  if (t.source.starts_with("/dev/"))
    if (auto n = block::kernel_name(host, t.source); n && found(*n)) return *n;
  if (auto n = fs::path(t.source).filename().string(); found(n)) return n;
  return {};
}

}  // namespace fsaudit::ext4
