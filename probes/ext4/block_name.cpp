#include "probes/ext4/block_name.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <system_error>

#include "daemon/core/block_device.hpp"

namespace fsaudit::ext4 {

namespace fs = std::filesystem;

namespace {

// Visits the candidates in order, each as soon as it is known, until `take` accepts one (returned).
// The first (the mount's device number, one readlink) nearly always answers, and the probes ask per
// target per interval, so the later ones (a walk of the source's links) are rarely computed.
std::string first_candidate(const HostPaths& host, const Target& t, const std::function<bool(const std::string&)>& take) {
  auto ok = [&](const std::string& n) { return !n.empty() && n != "." && n != ".." && take(n); };
  if (t.dev_major != 0)
    if (auto n = block::name_of_devnum(host, t.dev_major, t.dev_minor); n && ok(*n)) return *n;
  if (t.source.starts_with("/dev/"))
    if (auto n = block::kernel_name(host, t.source); n && ok(*n)) return *n;
  if (auto n = fs::path(t.source).filename().string(); ok(n)) return n;
  return {};
}

}  // namespace

std::vector<std::string> block_name_candidates(const HostPaths& host, const Target& t) {
  std::vector<std::string> out;
  first_candidate(host, t, [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return false;  // all of them
  });
  return out;
}

std::string sysfs_fs_dir_name(const HostPaths& host, const Target& t, const std::string& fs_dir) {
  std::error_code ec;
  const fs::path base = host.sys("fs") / fs_dir;
  return first_candidate(host, t, [&](const std::string& n) { return fs::is_directory(base / n, ec); });
}

}  // namespace fsaudit::ext4
