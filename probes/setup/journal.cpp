#include "probes/setup/journal.hpp"

#include <systemd/sd-journal.h>

namespace fsaudit::setup {

void journal_finding(const FindingEvent& e) {
  int prio = !e.appeared ? 6 : e.severity == "critical" ? 3 : e.severity == "warning" ? 4 : 5;
  std::string msg = "setup finding " + e.rule + " on " + e.target + (e.appeared ? " appeared: " : " cleared: ") + e.evidence;
  sd_journal_send("MESSAGE=%s", msg.c_str(),
                  "MESSAGE_ID=%s", kFindingMessageId,
                  "PRIORITY=%d", prio,
                  "SYSLOG_IDENTIFIER=fsauditd",
                  "FSAUDIT_PROBE=setup",
                  "FSAUDIT_TARGET=%s", e.target.c_str(),
                  "FSAUDIT_RULE=%s", e.rule.c_str(),
                  "FSAUDIT_SEVERITY=%s", e.severity.c_str(),
                  "FSAUDIT_STATE=%s", e.appeared ? "appeared" : "cleared",
                  "FSAUDIT_EVIDENCE=%s", e.evidence.c_str(),
                  "FSAUDIT_WHY=%s", e.why.c_str(),
                  "FSAUDIT_FIX=%s", e.fix.c_str(),
                  nullptr);
}

}  // namespace fsaudit::setup
