#pragma once
// The `scan:` block of `zpool status` (scrub / resilver), in every generation of wording seen in
// real output, and the scan_stats object of `zpool status -j`. Pure functions, no I/O.
//
// STABLE API: the scrub scheduler and the canary helpers call parse_zfs_scan(); keep it stable.
//
// Wordings understood (text):
//   scan: none requested                                      (OpenZFS, ZoL, illumos)
//   scrub: none requested                                     (Solaris / zfs-fuse, pool v23)
//   scan: scrub repaired 0 in 0h2m with 0 errors on <date>   (legacy)
//   scan: scrub repaired 0B in 14:00:07 with 0 errors on <date>       (OpenZFS 0.8+)
//   scan: scrub repaired 0 in 0 days 00:19:47 with 0 errors on <date> (OpenZFS 0.8-2.0)
//   scan: resilvered 432K in 00:00:01 with 0 errors on <date>
//   scan: scrub canceled on <date> / resilver canceled on <date>
//   scan: scrub paused since <date>  (+ "scrub started on <date>" line)
//   scan: scrub in progress since <date>
//         3.62G scanned at 530M/s, 378M issued at 54.0M/s, 3.62G total
//         12.9T / 18.1T scanned at 11.0G/s, 179G / 17.9T issued at 153M/s        (2.2+)
//         14.2T scanned out of 37.5T at 775M/s, 8h45m to go                      (pre-0.8)
//         0B repaired, 10.18% done, 00:01:01 to go | 1 days 16:09:43 to go | no estimated completion time
//         50.2G resilvered, 0.96% done ...
//   scrub: scrub completed after 0h0m with 0 errors on <date> (Solaris / zfs-fuse)
//   scrub: scrub in progress for 0h0m, 12.34% done, 0h1m to go (Solaris / zfs-fuse)
//   scrub: resilver in progress, 0.14% done, 0h0m to go         (Solaris)
//   scrub: resilver completed after 0h0m with 0 errors on <date>
//   scrub: scrub stopped after 0h0m with 0 errors on <date>     (Solaris: canceled)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsaudit::zfs {

enum class ScanFunction { none, scrub, resilver, error_scrub };
enum class ScanState { none, in_progress, finished, canceled, paused };

std::string_view to_string(ScanFunction f);  // "none", "scrub", "resilver", "error_scrub"
std::string_view to_string(ScanState s);     // "none", "in_progress", "finished", "canceled", "paused"

// How to read the wall-clock dates zpool prints ("Sun Jul 16 23:21:45 2023"): zpool formats them
// in the local time zone of the host that ran it.
enum class ScanTimeZone { local, utc };

struct ZfsScan {
  ScanFunction function = ScanFunction::none;
  ScanState state = ScanState::none;
  bool recognized = false;  // false when the block was present but its wording is not known

  // Wall times as Unix seconds. start: "in progress since" / "paused since" / JSON start_time;
  // end: the "on <date>" of a finished/canceled scan / JSON end_time.
  std::optional<std::int64_t> start_time;
  std::optional<std::int64_t> end_time;
  // A finished scan's duration as zpool status prints it: end - start, time paused included ("in
  // 06:58:02", "after 0h0m", "in 1 days 01:02:03"; JSON: end_time - start_time).
  std::optional<double> duration_seconds;

  // Progress of a scan in progress (bytes; text values are humanised, so approximate).
  std::optional<double> examined_bytes;  // "X scanned"
  std::optional<double> issued_bytes;    // "Y issued"
  std::optional<double> total_bytes;     // "Z total", "X / Z scanned", "scanned out of Z"
  std::optional<double> scan_rate_bytes_per_second;   // "scanned at R/s"
  std::optional<double> issue_rate_bytes_per_second;  // "issued at R/s"
  std::optional<double> eta_seconds;                  // "... to go"
  std::optional<double> progress_ratio;               // "P% done" / 100, 0..1

  // Results: for a scrub the bytes repaired; for a resilver the bytes resilvered.
  std::optional<double> repaired_bytes;
  std::optional<std::uint64_t> errors;  // "with N errors" (finished) / JSON errors

  std::string text;  // the block as given (trimmed), for logs
};

// `scan_block`: the text after "scan:" (or "scrub:") up to the next "config:" line, continuation
// lines included; a leading "scan:"/"scrub:" label is accepted and ignored. Empty text -> state
// none, recognized=true ("no scan line" = never scanned on OpenZFS 2.x). Never throws.
ZfsScan parse_zfs_scan(std::string_view scan_block, ScanTimeZone tz = ScanTimeZone::local);

// "Sun Jul 16 23:21:45 2023" / "Wed Jan 25 03:47:27 2017" -> Unix seconds.
std::optional<std::int64_t> parse_zpool_date(std::string_view text, ScanTimeZone tz);

// "0h2m", "29h37m", "00:01:06", "0 days 00:19:47", "1 days 16:09:43", "8h45m" -> seconds.
std::optional<double> parse_zpool_elapsed(std::string_view text);

}  // namespace fsaudit::zfs
