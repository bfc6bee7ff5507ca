#pragma once
// Who a canary member device is (serial/WWN, by-id links, loop backing file, size), fsaudit's
// signature on the canary filesystem, and the record `fsauditd canary init` keeps in the state dir.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"

namespace fsaudit::canary {

enum class DeviceKind { unknown, block, loop, file };
// "block", "loop", "file"; "" for unknown. The spelling in the init record and in messages.
std::string_view to_string(DeviceKind k);
// The inverse of to_string(); anything else is unknown (a record from a future version).
DeviceKind device_kind(std::string_view s);

struct DeviceIdentity {
  std::string path;          // as configured
  std::string resolved;      // canonical path (/dev/sdb9, /dev/loop3, /srv/vdev0.img)
  DeviceKind kind = DeviceKind::unknown;
  std::uint64_t size = 0;    // bytes
  unsigned major = 0, minor = 0;  // block devices
  std::string serial, wwid;  // from sysfs (disk or its parent disk), may be empty
  std::vector<std::string> by_id;  // /dev/disk/by-id links to it
  std::string backing_file;  // loop devices
  std::uint64_t inode = 0, fs_dev = 0;  // regular files
};

Result<DeviceIdentity> identify_device(const std::string& path, const HostPaths& host);

// "" when the identity has a field that stays with the device across reboots and replugs (WWN,
// serial, a by-id link, a loop device's backing file, a file vdev's inode); otherwise why a device
// with only a kernel name and a size cannot be told from another one.
std::string weak_identity(const DeviceIdentity& id);

// "" when `now` is the same device as `recorded`; otherwise what changed.
std::string identity_mismatch(const DeviceIdentity& recorded, const DeviceIdentity& now);

struct CanaryRecord {
  std::string name;
  std::string signature_id;  // random; also in the marker file on the canary
  std::uint64_t pattern_key = 0;
  double created = 0;
  std::vector<DeviceIdentity> devices;
};

std::filesystem::path canary_state_dir(const std::filesystem::path& state_dir, const std::string& name);
// The text of <state_dir>/canary/<name>/identity.json.
std::string record_text(const CanaryRecord& r);
// The record's text as save_record writes it, for canary `name`: every field with its type, a known
// device kind, 1 to 64 devices; anything else is refused with the field at fault. Pure.
Result<CanaryRecord> parse_record(std::string_view text, const std::string& name);
// <state_dir>/canary/<name>/identity.json through parse_record (a symlink or non-regular file refused).
Result<CanaryRecord> load_record(const std::filesystem::path& state_dir, const std::string& name);
Result<void> save_record(const std::filesystem::path& state_dir, const CanaryRecord& r);

// The signature file at the root of the canary filesystem.
inline constexpr const char* kSignatureFile = ".fsaudit-canary";
std::string signature_text(const std::string& name, const std::string& id);
// "" if `text` is the signature of (name, id); else why not.
std::string check_signature(const std::string& text, const std::string& name, const std::string& id);

}  // namespace fsaudit::canary
