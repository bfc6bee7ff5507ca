#pragma once
// Pure parsers for /proc/mdstat: text in, struct out. No host access here; the
// probe (probes/md/probe.hpp) reads the files.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::md {

struct Member {
  std::string name;  // "sda1"
  int slot = -1;     // the [N] after the name
  bool faulty = false, spare = false, write_mostly = false, journal = false, replacement = false;
};

struct SyncProgress {
  std::string action;  // "resync", "recovery", "check", "repair", "reshape"
  double ratio = 0;    // 0..1
  std::uint64_t done_kib = 0, total_kib = 0;
  std::optional<double> finish_seconds;
  std::optional<double> speed_bytes_per_second;
};

struct Array {
  std::string name;  // "md0"
  bool active = false;
  bool read_only = false, auto_read_only = false;
  std::string level;  // "raid1", "raid5", "linear", ... ("" for inactive)
  std::vector<Member> members;
  std::optional<std::uint64_t> blocks_kib;
  std::string super_version;            // "1.2", "" when not printed (0.90) or external
  std::optional<int> disks_expected;    // [2/1] -> 2
  std::optional<int> disks_active;      // [2/1] -> 1
  std::string status_map;               // "U_"
  std::optional<SyncProgress> sync;
  std::string sync_pending;             // "DELAYED", "PENDING", "REMOTE" (resync=...)
};

struct Mdstat {
  std::vector<std::string> personalities;
  std::vector<Array> arrays;
};
Result<Mdstat> parse_mdstat(std::string_view text);

}  // namespace fsaudit::md
