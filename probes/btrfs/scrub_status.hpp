#pragma once
// Parsers for what btrfs-progs reports about a scrub (stable interface: the scrub driver uses it).
//
//  * parse_scrub_status(): the text of `btrfs scrub status [-d] [-R] <mnt>` and of
//    `btrfs scrub start -B [-d] [-R] <mnt>`, in both layouts btrfs-progs has printed:
//      - new (progs >= 5.x): "UUID:" / "Scrub started:" / "Status:" / "Duration:" /
//        "Time left:" / "ETA:" / "Total to scrub:" / "Bytes scrubbed:" / "Rate:" /
//        "Error summary:" + "Corrected:"/"Uncorrectable:"/"Unverified:", or with -R the raw
//        "key: value" counters instead of the summary;
//      - old (progs 4.x): "scrub status for UUID", "\tscrub started at X and finished after H:M:S"
//        (or "and was aborted after", ", running for", ", interrupted after ... not running"),
//        "\ttotal bytes scrubbed: ... with N errors", "\terror details: ...",
//        "\tcorrected errors: N, uncorrectable errors: N, unverified errors: N", or raw counters.
//    With -d the text has one section per device ("scrub device /dev/sda (id 1) history|status",
//    "Scrub device /dev/sda2 (id 1) done"); those go to `devices` and `total` is their aggregate.
//  * parse_scrub_status_file(): /var/lib/btrfs/scrub.status.<FSID> ("scrub status:1" then one
//    line per device "<fsid>:<devid>|key:value|...").
//
// Pure functions: no I/O, no clock. Times printed by btrfs-progs are the host's local time ("%c");
// they are converted with the process's time zone (the daemon runs on the host that printed them).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::btrfs {

enum class ScrubState {
  unknown,      // no Status line understood
  never,        // "no stats available": this filesystem/device was never scrubbed
  running,
  finished,
  aborted,      // canceled (by `scrub cancel` or a signal)
  interrupted,  // stopped without finishing and not running (e.g. a reboot); `scrub resume` continues it
};
std::string_view to_string(ScrubState s);  // "unknown", "never", "running", "finished", "aborted", "interrupted"
const std::vector<std::string>& scrub_states();  // all names, for a state set

// btrfs_scrub_progress as printed by -R (raw) or stored in the status file.
struct ScrubRawCounters {
  std::uint64_t data_extents_scrubbed = 0;
  std::uint64_t tree_extents_scrubbed = 0;
  std::uint64_t data_bytes_scrubbed = 0;
  std::uint64_t tree_bytes_scrubbed = 0;
  std::uint64_t read_errors = 0;
  std::uint64_t csum_errors = 0;
  std::uint64_t verify_errors = 0;
  std::uint64_t no_csum = 0;
  std::uint64_t csum_discards = 0;
  std::uint64_t super_errors = 0;
  std::uint64_t malloc_errors = 0;
  std::uint64_t uncorrectable_errors = 0;
  std::uint64_t unverified_errors = 0;
  std::uint64_t corrected_errors = 0;
  std::uint64_t last_physical = 0;
  void add(const ScrubRawCounters& o);  // sums everything but last_physical (max)
};

// One scrub report: the whole filesystem, or one device (with -d).
struct ScrubSection {
  std::string device;                   // "/dev/sda" for a device section, "" for the filesystem
  std::optional<std::uint64_t> devid;   // "(id N)"
  ScrubState state = ScrubState::unknown;
  bool resumed = false;                         // "Scrub resumed:" / "scrub resumed at"
  std::string started_text;                     // as printed, e.g. "Mon Jul  7 20:46:05 2025"
  std::optional<std::int64_t> started_epoch;    // started_text in the local time zone, Unix seconds
  std::optional<double> duration_seconds;
  std::optional<double> time_left_seconds;      // running only
  std::string eta_text;                         // running only, as printed
  std::optional<double> total_bytes;            // "Total to scrub"
  std::optional<double> scrubbed_bytes;         // "Bytes scrubbed" (running), or raw data+tree bytes
  std::optional<double> progress_ratio;         // "(48.59%)" -> 0.4859; finished -> 1
  std::optional<double> rate_bytes_per_second;  // "Rate:"
  // Error summary (human output). Keys: "read", "super", "verify", "csum" as printed.
  bool summary_seen = false;                    // an "Error summary:" / "error details" / "with N errors" line
  std::map<std::string, std::uint64_t> error_details;
  std::optional<std::uint64_t> corrected;
  std::optional<std::uint64_t> uncorrectable;
  std::optional<std::uint64_t> unverified;
  std::optional<std::uint64_t> old_total_errors;  // old format "with N errors"
  std::optional<ScrubRawCounters> raw;            // -R output
  bool malloc_warning = false;                    // "*** WARNING: memory allocation failed"

  // Normalised counts, whichever form was printed (raw wins). Errors found = read+csum+verify+super
  // (what btrfs-progs calls the error count); nullopt when the text said nothing about errors.
  std::optional<std::uint64_t> errors_found() const;
  std::optional<std::uint64_t> corrected_errors() const;
  std::optional<std::uint64_t> uncorrectable_errors() const;
  std::optional<std::uint64_t> csum_errors() const;
  std::optional<std::uint64_t> read_errors() const;
};

struct ScrubStatus {
  std::string uuid;                   // filesystem UUID ("UUID:", "scrub status for", "scrub done for")
  ScrubSection total;                 // whole filesystem (aggregated from devices when only -d sections)
  bool total_aggregated = false;      // true when `total` was computed from device sections
  std::vector<ScrubSection> devices;  // -d sections, in print order
  // "ERROR: there are uncorrectable errors" (scrub start -B) or similar lines, verbatim.
  std::vector<std::string> error_lines;
  bool uncorrectable_reported() const;  // an ERROR line about uncorrectable errors
};

// btrfs's records say the scrub is over: the filesystem finished and no device record (-d) is still
// open. btrfs-progs writes each device's record as that device ends; its `scrub start -B` has
// nothing left to do but print and exit.
bool scrub_records_final(const ScrubStatus& s);

// Errors when nothing at all was recognised (e.g. a usage message) or when the text ends inside a
// line (cut short: btrfs-progs ends every line with a newline).
Result<ScrubStatus> parse_scrub_status(std::string_view text);

// One device record of /var/lib/btrfs/scrub.status.<FSID>.
struct ScrubFileRecord {
  std::string fsid;
  std::uint64_t devid = 0;
  ScrubRawCounters counters;
  std::int64_t t_start = 0;    // Unix seconds; 0 = never started
  std::int64_t t_resumed = 0;  // Unix seconds; 0 = not resumed
  std::uint64_t duration_seconds = 0;
  bool canceled = false;
  bool finished = false;
  // The file does not record "running"; a record neither finished nor canceled is running or
  // interrupted (the caller decides from whether a scrub is in progress).
  ScrubState state() const;
};
struct ScrubFile {
  int version = 0;
  std::vector<ScrubFileRecord> records;
  // Aggregate over records of one fsid (all records if fsid is empty), as btrfs-progs does for the
  // filesystem line: counters summed, earliest start, longest duration, canceled if any, finished
  // only if all finished. nullopt if there is no matching record.
  std::optional<ScrubFileRecord> aggregate(std::string_view fsid = {}) const;
};
Result<ScrubFile> parse_scrub_status_file(std::string_view text);

// "0:02:17", "15:49:35", "296:36:44", "1 days 02:03:04" -> seconds.
std::optional<double> parse_scrub_duration(std::string_view text);
// "Mon Jul  7 20:46:05 2025" (C-locale %c) -> Unix seconds in the process's local time zone.
std::optional<std::int64_t> parse_ctime_local(std::string_view text);

}  // namespace fsaudit::btrfs
