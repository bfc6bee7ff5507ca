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
#include "probes/canary/record.hpp"

namespace fsaudit::canary {

Result<DeviceIdentity> identify_device(const std::string& path, const HostPaths& host);

// Fine when the identity has a field that stays with the device across reboots and replugs (WWN,
// serial, a by-id link, a loop device's backing file, a file vdev's inode); otherwise refused: a
// device with only a kernel name and a size cannot be told from another one.
Result<void> weak_identity(const DeviceIdentity& id);

// Fine when `now` is the same device as `recorded`; otherwise refused, saying what changed.
Result<void> identity_mismatch(const DeviceIdentity& recorded, const DeviceIdentity& now);

std::filesystem::path canary_state_dir(const std::filesystem::path& state_dir, const std::string& name);
// <state_dir>/canary/<name>/identity.json through parse_record (a symlink or non-regular file refused).
Result<CanaryRecord> load_record(const std::filesystem::path& state_dir, const std::string& name);
Result<void> save_record(const std::filesystem::path& state_dir, const CanaryRecord& r);

// The signature file at the root of the canary filesystem.
inline constexpr const char* kSignatureFile = ".fsaudit-canary";
std::string signature_text(const std::string& name, const std::string& id);
// Fine if `text` is the signature of (name, id); else refused, saying why not.
Result<void> check_signature(const std::string& text, const std::string& name, const std::string& id);

}  // namespace fsaudit::canary
