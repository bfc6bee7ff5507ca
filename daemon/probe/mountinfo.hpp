#pragma once
// The mount table as data, and its pure parser. Reading it from the host is read_mount_table()
// and mount_table() in daemon/probe/targets.hpp: the one place shipped code opens mountinfo.
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit {

struct MountEntry {
  int mount_id = 0;
  int parent_id = 0;
  unsigned major = 0, minor = 0;
  std::string root;        // path inside the filesystem; not "/" for bind mounts and btrfs subvolumes
  std::string mountpoint;  // unescaped
  std::string mount_options;
  std::vector<std::string> optional_fields;  // shared:N, master:N, ...
  std::string fstype;
  std::string source;  // unescaped
  std::string super_options;

  bool read_only() const;  // ro in either option set, or ext4's emergency_ro after an error
};

// Parses proc(5) mountinfo. Any line that does not parse, or a last line without its newline (cut
// short), makes the whole call an error: a partial table would leave mounts silently unwatched. So
// does an empty table: every mount namespace has at least its root mount.
Result<std::vector<MountEntry>> parse_mountinfo(std::string_view text);

}  // namespace fsaudit
