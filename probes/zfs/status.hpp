#pragma once
// `zpool status` (text, any generation; and `zpool status -j` JSON) and `zpool list -H` parsers.
// Pure functions, no I/O. The vdev tree is read from its structure (indentation in text, nesting
// in JSON), never from device-name patterns.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"
#include "probes/zfs/scan.hpp"

namespace fsaudit::zfs {

struct ZfsVdev {
  std::string name;     // exactly as zpool prints it (GUID, by-id name, file path, "mirror-0", ...)
  std::string parent;   // name of the parent vdev; "" for top-level vdevs and section members
  // Role of the top-level vdev this one belongs to: "data", "log", "cache", "spare", "special",
  // "dedup" (text: from the section header line; JSON: from the pool-level object / class).
  std::string role = "data";
  // Interior vdevs: "mirror", "raidz1", "raidz2", "raidz3", "draid1", "replacing", "spare", ...
  // (text: the name up to its "-N" id, the only place zpool prints the type). Leaves: "leaf" in
  // text; JSON's vdev_type ("disk", "file") in JSON.
  std::string type;
  int depth = 0;        // 0 = top-level vdev (child of the pool root or of a section header)
  bool leaf = true;     // has no children
  std::string state;    // ONLINE, DEGRADED, FAULTED, OFFLINE, UNAVAIL, REMOVED, AVAIL, INUSE, ...
  std::optional<std::uint64_t> read_errors, write_errors, checksum_errors;
  std::string note;     // trailing text: "was /dev/sdc1", "too many errors", "9.41M repaired", ...
};

struct ZfsPoolStatus {
  std::string name;
  std::string state;    // as printed: ONLINE, DEGRADED, FAULTED, OFFLINE, UNAVAIL, REMOVED, SUSPENDED
  std::string status;   // "status:" text (continuation lines joined by spaces), may be empty
  std::string action;
  std::string see;
  bool has_scan = false;  // a scan:/scrub: line was printed
  ZfsScan scan;
  // Counters of the pool's root vdev row (the line named like the pool).
  std::optional<std::uint64_t> read_errors, write_errors, checksum_errors;
  std::string root_state;
  std::vector<ZfsVdev> vdevs;  // print order (depth-first), without the root row
  // "errors: No known data errors" -> 0; "N data errors, use '-v'" -> N; "Permanent errors have
  // been detected ..." -> number of entries listed (with -v); unknown/unavailable -> nullopt.
  std::optional<std::uint64_t> data_errors;
  std::string errors_text;  // the "errors:" line as printed
  // zpool prints "errors:" last for every pool whose configuration it knows: without it the
  // output was cut short (or is an excerpt) and vdevs after the cut are missing. JSON: true.
  bool complete = false;
};

struct ZfsStatusReport {
  std::vector<ZfsPoolStatus> pools;
  bool no_pools = false;  // "no pools available"
};

// Text `zpool status [-p] [-v] [-x] [-s] [-P]` of any number of pools. Error only when the text is
// not zpool status output at all.
Result<ZfsStatusReport> parse_zpool_status(std::string_view text, ScanTimeZone tz = ScanTimeZone::local);

// `zpool status -j [-p] [--json-int]` (OpenZFS 2.3+). Numbers may be strings ("0", "3.62T") or ints.
Result<ZfsStatusReport> parse_zpool_status_json(std::string_view text, ScanTimeZone tz = ScanTimeZone::local);

// One row of `zpool list -H [-p] -o <columns>`.
struct ZfsPoolList {
  std::string name;
  std::optional<double> size_bytes, allocated_bytes, free_bytes;
  std::optional<double> fragmentation_ratio;  // 0..1
  std::optional<double> capacity_ratio;       // 0..1
  std::optional<double> dedup_ratio;          // 1.00x -> 1.0
  std::string health;
};

// `columns` are the -o list (empty: the text has zpool list's header line, as without -H; -v rows skipped)
// ("name,size,allocated,free,fragmentation,capacity,dedupratio,health";
// the short names alloc/frag/cap/dedup are accepted too). Values may be exact (-p) or human
// ("91.5M", "44%", "1.00x", "-"). Rows whose field count does not match are an error.
Result<std::vector<ZfsPoolList>> parse_zpool_list(std::string_view text, std::string_view columns);

// `zpool get -Hp all|size,allocated,...` (NAME<TAB>PROPERTY<TAB>VALUE<TAB>SOURCE) and
// `zpool get -jp all` (OpenZFS 2.3+): the same pool figures as zpool list.
Result<std::vector<ZfsPoolList>> parse_zpool_get(std::string_view text);
Result<std::vector<ZfsPoolList>> parse_zpool_get_json(std::string_view text);

// True when a vdev/pool state means the data is still fully redundant.
bool state_is_healthy(std::string_view state);
// False for a pool zpool could not open (UNAVAIL, FAULTED, ...): its error count is unknown, and
// zpool status prints no "errors:" line (no error_count in -j) for it.
bool pool_prints_error_count(std::string_view state);

}  // namespace fsaudit::zfs
