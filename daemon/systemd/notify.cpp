#include "daemon/systemd/notify.hpp"

#include <systemd/sd-daemon.h>

#include <ctime>

namespace fsaudit::systemd {

void notify_ready(const std::string& status) { sd_notify(0, ("READY=1\nSTATUS=" + status).c_str()); }
void notify_status(const std::string& status) { sd_notify(0, ("STATUS=" + status).c_str()); }
void notify_watchdog() { sd_notify(0, "WATCHDOG=1"); }
void notify_stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

void notify_reloading() {
  // MONOTONIC_USEC lets systemd (Type=notify-reload) match the reload to this request.
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  auto usec = static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL + static_cast<unsigned long long>(ts.tv_nsec) / 1000;
  sd_notify(0, ("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec)).c_str());
}

void notify_reloaded() { sd_notify(0, "READY=1"); }

std::optional<std::chrono::microseconds> watchdog_interval() {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec);
  return std::nullopt;
}

}  // namespace fsaudit::systemd
