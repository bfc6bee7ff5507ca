#pragma once
// Which monitored filesystem (mount point) a kernel device name belongs to.
#include <map>
#include <string>

#include "daemon/core/host_paths.hpp"
#include "probes/kernel_log/classify.hpp"

namespace fsaudit::kernel_log {

class TargetResolver {
 public:
  // Reads <procfs>/self/mountinfo, <sysfs>/dev/block/MAJ:MIN, <devfs> symlinks and
  // <sysfs>/fs/btrfs/*/devices (all members of a multi-device btrfs map to its mount point).
  explicit TargetResolver(const HostPaths& host);
  // Mount point of the filesystem on `device` ("sdb3", "/dev/mapper/x", "dm-3"), following partitions
  // and holders (disk -> partition -> dm/md) when exactly one mounted filesystem sits on top; "" if unknown.
  std::string target_of(const std::string& device) const;
  // The target an event counts under: the filesystem/array device's ("(device X)", "md0"), else the
  // device the line names. device_stats lines are a member's counters: the member's first.
  std::string target_of(const Event& ev) const;
  const std::map<std::string, std::string>& names() const { return by_name_; }

 private:
  std::string kernel_name(const std::string& device) const;
  void collect(const std::string& name, int depth, std::map<std::string, int>* out) const;
  HostPaths host_;
  std::map<std::string, std::string> by_name_;  // kernel name or source path -> mount point
};

}  // namespace fsaudit::kernel_log
