#pragma once
#include <filesystem>
#include <string>

namespace fsaudit {

// Where the host's /proc, /sys and /dev are, as node_exporter's --path.procfs/--path.sysfs.
// Probes never hard-code "/proc": tests point these at fixture trees.
struct HostPaths {
  std::filesystem::path procfs = "/proc";
  std::filesystem::path sysfs = "/sys";
  std::filesystem::path devfs = "/dev";
  std::filesystem::path rootfs = "/";

  std::filesystem::path proc(const std::string& rel) const { return procfs / rel; }
  std::filesystem::path sys(const std::string& rel) const { return sysfs / rel; }
  std::filesystem::path dev(const std::string& rel) const { return devfs / rel; }

  // A whole fixture tree laid out as <root>/proc, <root>/sys, <root>/dev.
  static HostPaths under(const std::filesystem::path& root) {
    return HostPaths{root / "proc", root / "sys", root / "dev", root};
  }
};

}  // namespace fsaudit
