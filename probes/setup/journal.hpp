#pragma once
// One structured journald record when a setup finding appears or clears (as the canary logs its
// cycles): journalctl MESSAGE_ID=<kFindingMessageId> FSAUDIT_TARGET=/srv
#include <functional>
#include <string>

namespace fsaudit::setup {

inline constexpr const char* kFindingMessageId = "3b6d0c1e8f2a4b7c9d5e1f0a2b3c4d5e";

struct FindingEvent {
  std::string target, rule, severity, evidence, why, fix;
  bool appeared = true;  // false: cleared
};

// Where events go: journald by default; tests install their own.
using FindingSink = std::function<void(const FindingEvent&)>;
void journal_finding(const FindingEvent& e);

}  // namespace fsaudit::setup
