#pragma once
// Pure classification of one kernel log message into a storage error event. No I/O, no regex: a
// dispatch on the first character plus prefix checks rejects the vast majority of lines (anything
// that is not BTRFS/XFS/EXT4/md/block-layer/ZFS) after one or two byte comparisons.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fsaudit::kernel_log {

// The values of the `kind` label.
namespace kind {
inline constexpr std::string_view checksum = "checksum";
inline constexpr std::string_view io = "io";
inline constexpr std::string_view metadata_corruption = "metadata_corruption";
inline constexpr std::string_view fs_error = "fs_error";
inline constexpr std::string_view shutdown = "shutdown";
inline constexpr std::string_view md_failure = "md_failure";
inline constexpr std::string_view md_mismatch = "md_mismatch";
inline constexpr std::string_view repaired = "repaired";
inline constexpr std::string_view unrepairable = "unrepairable";
// btrfs "bdev /dev/X errs: wr N, rd N, flush N, corrupt N, gen N": the device's cumulative counters,
// restating an event already reported on the line before (or at mount time). Not an event itself.
inline constexpr std::string_view device_stats = "device_stats";
}  // namespace kind

struct Event {
  std::string_view kind;   // one of kind::*
  std::string fs;          // btrfs | xfs | ext4 | md | zfs | block
  std::string device;      // the device the line is about: kernel name ("sdb3") or path as printed
  std::string fs_device;   // the device naming the filesystem/array, "(device X)", for attribution
  std::string extra;       // the rest of the message that identifies the event (not a label)
  // For kind::device_stats only: write, read, flush, corruption, generation.
  std::array<std::uint64_t, 5> stats{};
};

// Classifies a kernel message (text only, without timestamp). nullopt = not a storage error line.
std::optional<Event> classify(std::string_view message);

// Strips a dmesg "[  123.456789] " prefix and a syslog "Mon DD HH:MM:SS host kernel: " prefix, so
// lines of dmesg output or syslog files can be classified; also the RFC 3339 form ("2026-12-04T18:58:59+00:00
// host kernel: ") and journalctl -o short-monotonic ("[  123.456789] host kernel: "). Returns the message part.
std::string_view strip_log_prefix(std::string_view line);

// "/dev/sdb3" -> "sdb3"; "/dev/mapper/x" and everything else stays as printed.
std::string device_label(std::string_view token);

}  // namespace fsaudit::kernel_log
