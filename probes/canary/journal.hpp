#pragma once
#include "probes/canary/cycle.hpp"

namespace fsaudit::canary {

// Stable MESSAGE_ID of the per-cycle journald record (journalctl MESSAGE_ID=...).
inline constexpr const char* kCycleMessageId = "8f1c4e2a9b7d4c3ea5f06b1d2c3e4f50";

// One structured journald record with the full story of the cycle (device, offset, bytes, read
// result, scrub result, verdict). Best effort: a missing journal is not an error.
void journal_cycle(const CycleReport& r);

}  // namespace fsaudit::canary
