#pragma once
// sd_notify(3) for Type=notify: READY=1, STATUS=..., WATCHDOG=1, STOPPING=1, RELOADING=1.
// Without NOTIFY_SOCKET every call is a cheap no-op.
#include <chrono>
#include <optional>
#include <string>

namespace fsaudit::systemd {

void notify_ready(const std::string& status);
void notify_status(const std::string& status);
void notify_watchdog();
void notify_stopping();
void notify_reloading();
void notify_reloaded();
// The watchdog interval systemd asked for (WATCHDOG_USEC for this PID), if any.
std::optional<std::chrono::microseconds> watchdog_interval();

}  // namespace fsaudit::systemd
