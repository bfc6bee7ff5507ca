#include "probes/zfs/members.hpp"

#include <filesystem>
#include <system_error>

namespace fsaudit::zfs {

namespace fs = std::filesystem;

std::string member_device(const HostPaths& host, std::string_view name_in) {
  if (name_in.empty()) return "";
  std::string name(name_in);
  if (name.starts_with("/dev/")) return name;
  if (name.front() == '/') return "";  // a file vdev
  std::error_code ec;
  if (name.find('/') == std::string::npos && fs::exists(host.sys("class/block") / name, ec)) return name;
  // The directories zpool import -d searches by default, in its order (zpool_find_import.c).
  for (const char* dir : {"disk/by-vdev", "mapper", "disk/by-partlabel", "disk/by-partuuid", "disk/by-label",
                          "disk/by-uuid", "disk/by-id", "disk/by-path"}) {
    std::error_code e;
    if (fs::exists(fs::symlink_status(host.dev(dir) / name, e)) && !e) return std::string("/dev/") + dir + "/" + name;
  }
  return "";
}

std::vector<std::string> leaf_members(const ZfsStatusReport& report) {
  std::vector<std::string> out;
  for (const auto& p : report.pools)
    for (const auto& v : p.vdevs)
      if (v.leaf) out.push_back(v.name);
  return out;
}

}  // namespace fsaudit::zfs
