#pragma once
// Bounded scan for btrfs NOCOW files and directories near the top of a target (what `lsattr -d`
// shows as 'C'): FS_IOC_GETFLAGS on each entry, read-only, breadth-first, at most max_entries
// entries and max_depth levels, never crossing into another mount.
#include <filesystem>
#include <set>
#include <string>

#include "probes/setup/facts.hpp"

namespace fsaudit::setup {

struct NocowOptions {
  int max_depth = 2;          // 0: only the entries directly in the mount point's directory
  int max_entries = 2000;
  std::size_t max_examples = 5;
  std::set<std::string> skip;  // absolute paths not to enter (other mounts, fsaudit's own files)
};

NocowScan scan_nocow(const std::filesystem::path& root, const NocowOptions& o);

}  // namespace fsaudit::setup
