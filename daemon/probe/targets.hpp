#pragma once
// Which filesystems fsaudit watches: discovered from /proc/self/mountinfo, filtered by globs, plus
// explicit targets from the config.
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"
#include "daemon/probe/mountinfo.hpp"
#include "daemon/probe/probe.hpp"

namespace fsaudit {

// The mount table a probe run should use: the cycle's snapshot from the context, else the host's
// <procfs>/self/mountinfo read now.
Result<MountSnapshot> mount_table(const ProbeContext& ctx);
// Reads and parses <procfs>/self/mountinfo.
Result<MountSnapshot> read_mount_table(const HostPaths& host);

// The same, for a reader that reads it again and again: a text the same as the last one read gives the
// last snapshot back (the same pointer) without parsing it again. 10,000 mounts are 2 MB of text, and the
// timer's read of an unchanged table parsed and matched it all every 30 s.
class MountTableReader {
 public:
  Result<MountSnapshot> read(const HostPaths& host);
  // Whether the last read() gave back the snapshot before it.
  bool unchanged() const { return unchanged_; }

 private:
  std::size_t size_ = 0, hash_ = 0;
  MountSnapshot last_;
  bool unchanged_ = false;
};

// Whether the mount table changed, as the kernel announces it: a poll of an open mountinfo reports
// POLLPRI once per change of the mount namespace (mount, umount, remount, move). The kernel does not
// announce everything: a filesystem it turns read-only after an error keeps its mount, so the table is
// still read on a timer too. Where the file is not the kernel's (a test's host root), nothing is
// announced and only the timer reads it.
class MountTableWatch {
 public:
  explicit MountTableWatch(const HostPaths& host);
  ~MountTableWatch();
  MountTableWatch(const MountTableWatch&) = delete;
  MountTableWatch& operator=(const MountTableWatch&) = delete;
  // True when the kernel announced a change since the last call; false where it cannot announce.
  bool changed();

 private:
  int fd_ = -1;
};


struct ExplicitTarget {
  std::string path;  // a mount point or a directory inside one
  std::string name;  // label override (optional)
};

struct TargetSelection {
  bool discover = true;
  std::vector<std::string> include = {"*"};  // mount point globs
  std::vector<std::string> exclude;          // mount point globs, win over include
  std::vector<std::string> fstypes;          // if non-empty, only these fstypes are discovered
  std::vector<ExplicitTarget> explicit_targets;
};

// One target per filesystem: bind mounts and further mounts of the same device are folded into the
// first (shortest) mount point. Explicit targets are resolved to their containing mount.
std::vector<Target> select_targets(const std::vector<MountEntry>& mounts, const TargetSelection& sel,
                                   std::vector<std::string>* warnings = nullptr);

// The mount that contains `path` (longest mount point prefix), or nullptr.
const MountEntry* containing_mount(const std::vector<MountEntry>& mounts, const std::string& path);

}  // namespace fsaudit
