#pragma once
// A dbus-daemon of the test's own, with the policy file from the repository, and fsauditctl run
// against it (as root, or as an unprivileged caller).
#include <systemd/sd-bus.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/dbus/service.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::testing {

class PrivateBus {
 public:
  explicit PrivateBus(const std::filesystem::path& dir);
  ~PrivateBus();  // SIGTERM to exactly the dbus-daemon this started
  PrivateBus(const PrivateBus&) = delete;
  PrivateBus& operator=(const PrivateBus&) = delete;
  const std::string& address() const { return address_; }  // "" if it did not start

 private:
  std::string address_;
  int pid_ = -1;
};

// A client connection to a private bus, calling org.fsaudit.Daemon1 directly.
struct Bus {
  sd_bus* b = nullptr;
  explicit Bus(const std::string& address);
  ~Bus();
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;
  // Returns the error name ("" on success); the reply goes to *out.
  template <class... A>
  std::string call(const char* method, sd_bus_message** out, std::string* msg, const char* sig, A... args) {
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(b, dbus::kBusName, dbus::kObjectPath, dbus::kInterface, method, &e, out, sig, args...);
    std::string name = r < 0 ? (e.name ? e.name : "errno") : "";
    if (msg) *msg = e.message ? e.message : "";
    sd_bus_error_free(&e);
    return name;
  }
  // Subscribes to JobFinished; call before starting the job so its signal cannot be missed.
  bool watch_jobs();
  struct Finished {
    bool arrived = false;
    std::string state, result;
  };
  // Waits up to `timeout_s` for JobFinished of job `id` (after watch_jobs()).
  Finished wait_finished(std::uint64_t id, int timeout_s);
};

// `ctl` (the fsauditctl binary) --bus ADDRESS args...; `as`: "" (root), "nobody", or "adm" (nobody in group adm).
Cmd run_ctl(const std::string& ctl, const std::string& address, const std::vector<std::string>& args,
            const std::string& as = "", int timeout_s = 60);

}  // namespace fsaudit::testing
