#pragma once
// The ONLY code in fsaudit that writes to a raw device. Deliberately tiny, with a narrow request
// {device, offset, bytes}, so it can later run as a separate privileged helper.
//
// It writes only inside a grant: a byte range on one device that the safety gate (safety.hpp) has
// vouched for — a located copy of a canary block on a verified canary member. Everything else is
// refused before the device is opened for writing.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit::canary {

struct RawWriteRequest {
  std::string device;                  // absolute path (symlinks such as by-id are resolved)
  std::uint64_t offset = 0;
  std::vector<unsigned char> bytes;    // 1..512 bytes
  // If set, the write is refused unless the bytes currently there are exactly these (used when a
  // restart restores what a crashed cycle overwrote).
  std::optional<std::vector<unsigned char>> expect_current;
};

struct RawWriteGrant {
  std::string device;   // resolved path of a verified canary member
  std::uint64_t begin = 0, end = 0;  // allowed byte range [begin, end): one located canary block
  // The verified member's identity; the descriptor opened for writing must be this very device (a
  // replugged /dev/sdX or a re-attached loop device has other numbers). A grant without one is refused.
  std::uint64_t rdev = 0;              // block devices: st_rdev
  std::uint64_t ino_dev = 0, ino = 0;  // regular files: st_dev/st_ino; loop devices: their backing file's
  // When set, [begin, end) must hold exactly these bytes (read through the same descriptor) before
  // anything is written.
  std::optional<std::vector<unsigned char>> block;
  bool exclusive = false;              // block devices: open O_EXCL (the canary is offline; nothing may hold it)
                                       // regular files (O_EXCL does nothing there): no other writer (writers_of)
  HostPaths host;                      // where writers_of looks for other writers (/proc)
};

// A process that has a file open for writing (from /proc/<pid>/fd and fdinfo).
struct FileWriter {
  long pid = 0;
  std::string comm;
  long uid = -1;  // real uid from /proc/<pid>/status; -1 when unknown
};
// Every process but `except_pid` with a descriptor open for writing (O_WRONLY or O_RDWR) on the
// file (dev, ino), found through host.procfs. A process that exits during the scan is skipped.
std::vector<FileWriter> writers_of(const HostPaths& host, std::uint64_t dev, std::uint64_t ino, long except_pid);
// Whether a writer of an offline canary's file vdev may stay: only root's zfs-fuse, which keeps
// the vdev files of an exported pool open (and does no I/O to them: its pool is exported, which the
// offline verification checked). Root is not in the threat model (it can write anyway).
bool expected_writer_of_exported_vdev(const FileWriter& w);

struct DeviceIdentity;
// A grant for [begin, end) on a verified member, carrying its identity (loop: the backing file's).
Result<RawWriteGrant> grant_for(const DeviceIdentity& member, std::uint64_t begin, std::uint64_t end);

struct RawWriteReceipt {
  std::string device;  // resolved
  std::uint64_t offset = 0;
  std::vector<unsigned char> before, after;
};

inline constexpr std::size_t kMaxRawWrite = 512;

// Pure validation (no I/O beyond resolving the path): ok if allowed, else `refused` with the reason.
Result<void> validate_raw_write(const RawWriteRequest& req, const std::string& resolved_device,
                                const std::vector<RawWriteGrant>& grants);

// Validates, then O_DIRECT read-modify-write of the containing 4 KiB sector(s), then fsync of the
// device. Refusals return an error starting with "refused: " and write nothing.
Result<RawWriteReceipt> raw_write(const RawWriteRequest& req, const std::vector<RawWriteGrant>& grants);

}  // namespace fsaudit::canary
