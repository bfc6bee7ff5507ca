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
  std::string sync_pending_action;      // what waits: "resync" (also "recovery", "reshape", "check", ...)
};

struct Mdstat {
  std::vector<std::string> personalities;
  std::vector<Array> arrays;
};
Result<Mdstat> parse_mdstat(std::string_view text);

// As parse_mdstat, but content cut short keeps the arrays that were whole before the cut (md_seq_show
// ends each array with a blank line): `cut` says why the rest is missing. Content that is not
// mdstat at all is still an error.
struct MdstatUntilCut {
  Mdstat mdstat;
  std::string cut;  // "" when the content is whole
};
Result<MdstatUntilCut> parse_mdstat_until_cut(std::string_view text);

// The sync_action the kernel reports for an array /proc/mdstat shows (no sysfs): "resync",
// "recover", "check", "repair", "reshape" while one runs or waits its turn (=DELAYED, =REMOTE),
// "idle" otherwise (=PENDING: a read-only array's resync that has not started; the kernel's
// sync_action says idle).
std::string mdstat_sync_action(const Array& a);

}  // namespace fsaudit::md
