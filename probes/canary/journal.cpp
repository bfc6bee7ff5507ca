#include "probes/canary/journal.hpp"

#include <systemd/sd-journal.h>

#include <string>

namespace fsaudit::canary {

void journal_cycle(const CycleReport& r) {
  int prio = 6;  // info
  if (r.verdict == Verdict::silent || r.verdict == Verdict::error || r.verdict == Verdict::refused) prio = 3;
  else if (!r.expectation_met) prio = 4;
  std::string msg = "canary " + r.canary + " (" + r.fs + " " + r.layout + "): " + std::string(to_string(r.verdict)) +
                    (r.reason.empty() ? "" : " - " + r.reason) + "; expected " + r.expect +
                    (r.expectation_met ? " (met)" : " (NOT met)");
  const auto* i = r.injection ? &*r.injection : nullptr;
  auto s = [](double v) { return std::to_string(v); };
  sd_journal_send("MESSAGE=%s", msg.c_str(),
                  "MESSAGE_ID=%s", kCycleMessageId,
                  "PRIORITY=%d", prio,
                  "SYSLOG_IDENTIFIER=fsauditd",
                  "FSAUDIT_CANARY=%s", r.canary.c_str(),
                  "FSAUDIT_FS=%s", r.fs.c_str(),
                  "FSAUDIT_LAYOUT=%s", r.layout.c_str(),
                  "FSAUDIT_VERDICT=%s", std::string(to_string(r.verdict)).c_str(),
                  "FSAUDIT_EXPECTED=%s", r.expect.c_str(),
                  "FSAUDIT_EXPECTATION_MET=%d", r.expectation_met ? 1 : 0,
                  "FSAUDIT_REASON=%s", r.reason.c_str(),
                  "FSAUDIT_COPIES_FOUND=%llu", static_cast<unsigned long long>(r.copies_found),
                  "FSAUDIT_DEVICE=%s", i ? i->device.c_str() : "",
                  "FSAUDIT_OFFSET=%llu", static_cast<unsigned long long>(i ? i->offset : 0),
                  "FSAUDIT_BYTES_BEFORE=%s", i ? i->before_hex.c_str() : "",
                  "FSAUDIT_BYTES_AFTER=%s", i ? i->after_hex.c_str() : "",
                  "FSAUDIT_READ_RESULT=%s", r.read_result.c_str(),
                  "FSAUDIT_DETECTED_BY=%s", r.detected_by.c_str(),
                  "FSAUDIT_TIME_TO_DETECT_SECONDS=%s", s(r.time_to_detect_seconds).c_str(),
                  "FSAUDIT_SCRUB=%s", r.scrub_summary.c_str(),
                  "FSAUDIT_SCRUB_FOUND=%llu", static_cast<unsigned long long>(r.scrub_found),
                  "FSAUDIT_SCRUB_REPAIRED=%llu", static_cast<unsigned long long>(r.scrub_repaired),
                  "FSAUDIT_REPAIR_VERIFIED=%d", r.repair_verified,
                  "FSAUDIT_RECOVERY=%s", r.recovery.c_str(),
                  "FSAUDIT_DURATION_SECONDS=%s", s(r.duration_seconds).c_str(),
                  nullptr);
}

}  // namespace fsaudit::canary
