#pragma once
// `smartctl --json` (smartmontools 6.7 and later) -> what fsaudit exports about a disk's health.
// Pure: text in, report out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/result.hpp"

namespace fsaudit::disk {

// smartctl's exit status is a bit mask (smartctl(8), RETURN VALUES). Bits 0-2 say the command did
// not do its job; bits 3-7 are what it found on the disk.
struct ExitBits {
  std::vector<std::string> failures;  // bits 0-2: why the read failed
  std::vector<std::string> findings;  // bits 3-7: finding names (kSmartFindings)
};
ExitBits decode_exit_status(int status);
// The names of bits 3-7, in bit order: the `finding` label values.
inline constexpr const char* kSmartFindings[] = {"failing", "prefail_below_threshold", "below_threshold_in_past",
                                                 "error_log_has_errors", "self_test_log_has_errors"};

enum class SmartState {
  ok,           // a health report (findings may say the disk is failing: that is data, not a failure)
  standby,      // -n standby: the disk sleeps and was not woken
  unsupported,  // no SMART here (virtual disk, loop device, USB bridge without SAT, SMART unavailable)
  failed,       // the command failed (bits 0-2) or said nothing usable: `reason` says why
};

struct SmartReport {
  SmartState state = SmartState::ok;
  std::string reason;  // standby/unsupported/failed: why, with smartctl's own messages
  int exit_status = 0;
  ExitBits bits;
  std::string protocol;  // ATA, NVMe, SCSI (device.protocol); "" when not said
  std::string model, serial;
  std::optional<bool> passed;  // smart_status.passed
  // ATA attributes (raw values): 5, 197, 198, 199.
  std::optional<std::uint64_t> reallocated_sectors, pending_sectors, offline_uncorrectable, udma_crc_errors;
  // NVMe health log.
  std::optional<std::uint64_t> critical_warning, media_errors;
  std::optional<double> available_spare, available_spare_threshold, percentage_used;  // percent
  // SCSI/SAS.
  std::optional<std::uint64_t> grown_defects;
  std::optional<std::uint64_t> uncorrected_read, uncorrected_write, uncorrected_verify;
  std::optional<double> temperature_celsius;
  std::optional<double> power_on_hours;
  std::optional<bool> last_self_test_passed;  // the newest self-test with a verdict
  std::string last_self_test;                 // its status text
};

// `exit_status` is smartctl's process exit status when known; the JSON's smartctl.exit_status is
// used otherwise (and wins when both are there: it is what smartctl meant). Errors: not JSON, cut
// JSON, JSON that is not a smartctl report.
Result<SmartReport> parse_smartctl_json(std::string_view text, std::optional<int> exit_status = std::nullopt);

// Whether the disk is at risk of failing soon: SMART overall status failing, reallocated or pending
// sectors (ATA), an NVMe critical warning or its spare at or below the threshold, grown defects or
// uncorrected errors (SCSI). Empty when not; otherwise why, for people.
std::string at_risk(const SmartReport& r);

// NVMe critical warning bits (NVMe base spec, SMART / Health log byte 0), bit order.
inline constexpr const char* kNvmeCriticalWarnings[] = {"spare_below_threshold", "temperature", "reliability_degraded",
                                                        "read_only", "volatile_memory_backup_failed",
                                                        "persistent_memory_unreliable"};

}  // namespace fsaudit::disk
