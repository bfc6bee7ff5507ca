#pragma once
// The identity record `fsauditd canary init` keeps (<state_dir>/canary/<name>/identity.json): who
// each member device is. Pure (text in, record out); root acts on it, so its parser is strict.
// Reading the devices themselves is identity.hpp's.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

struct CanaryRecord {
  std::string name;
  std::string signature_id;  // random; also in the marker file on the canary
  std::uint64_t pattern_key = 0;
  double created = 0;
  std::vector<DeviceIdentity> devices;
};

// The text of <state_dir>/canary/<name>/identity.json.
std::string record_text(const CanaryRecord& r);
// The record's text as save_record writes it, for canary `name`: every field with its type, a known
// device kind, 1 to 64 devices; anything else is refused with the field at fault. Pure.
Result<CanaryRecord> parse_record(std::string_view text, const std::string& name);

}  // namespace fsaudit::canary
