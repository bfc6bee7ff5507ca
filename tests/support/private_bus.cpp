#include "tests/support/private_bus.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "tests/support/daemon_process.hpp"

namespace fsaudit::testing {

PrivateBus::PrivateBus(const std::filesystem::path& dir) {
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                        std::filesystem::perms::others_exec);
  auto sock = dir / "bus.sock";
  write_text(dir / "bus.conf", "<busconfig>\n  <type>custom</type>\n  <listen>unix:path=" + sock.string() +
                                   "</listen>\n  <auth>EXTERNAL</auth>\n"
                                   "  <policy context=\"default\">\n    <allow user=\"*\"/>\n    <allow own=\"*\"/>\n"
                                   "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n    <allow eavesdrop=\"true\"/>\n  </policy>\n  <include>" FSAUDIT_SOURCE_DIR
                                   "/dbus/org.fsaudit.Daemon1.conf</include>\n</busconfig>\n");
  // --fork with the addresses in a file: a forked daemon holding run()'s pipe would stall it.
  auto info = dir / "bus.info";
  // std::system waits for the shell only; dbus-daemon --fork leaves with no pipe of ours open.
  std::string cmd = "dbus-daemon --config-file='" + (dir / "bus.conf").string() + "' --fork --print-address=3 --print-pid=4 3>'" +
                    info.string() + "' 4>'" + info.string() + ".pid' </dev/null >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::string text;
  for (int i = 0; i < 50; ++i) {
    std::ifstream in(info);
    text.assign(std::istreambuf_iterator<char>(in), {});
    if (!text.empty() && text.back() == '\n') break;
    DaemonProcess::sleep_ms(100);
  }
  address_ = text.substr(0, text.find('\n'));
  std::ifstream pid(info.string() + ".pid");
  pid >> pid_;
  ::chmod(sock.c_str(), 0666);
}

PrivateBus::~PrivateBus() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  // Gone (or a zombie nobody has reaped yet) before its directory is removed: it unlinks its
  // socket on the way out.
  auto stat = "/proc/" + std::to_string(pid_) + "/stat";
  for (int i = 0; i < 50; ++i) {
    std::ifstream in(stat);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto close = text.rfind(')');
    if (!in || close == std::string::npos || text.substr(close + 2, 1) == "Z") return;
    DaemonProcess::sleep_ms(50);
  }
}

Bus::Bus(const std::string& address) {
  EXPECT_GE(sd_bus_new(&b), 0);
  sd_bus_set_address(b, address.c_str());
  sd_bus_set_bus_client(b, 1);
  EXPECT_GE(sd_bus_start(b), 0);
}

Bus::~Bus() { sd_bus_flush_close_unref(b); }

bool Bus::watch_jobs() {
  return sd_bus_match_signal(b, nullptr, nullptr, dbus::kObjectPath, dbus::kInterface, "JobFinished", nullptr, nullptr) >= 0;
}

Bus::Finished Bus::wait_finished(std::uint64_t id, int timeout_s) {
  Finished f;
  for (int i = 0; i < timeout_s * 10 && !f.arrived; ++i) {
    sd_bus_message* sig = nullptr;
    while (sd_bus_process(b, &sig) > 0) {
      if (sig && sd_bus_message_is_signal(sig, dbus::kInterface, "JobFinished")) {
        std::uint64_t got = 0;
        const char *state = nullptr, *result = nullptr;
        if (sd_bus_message_read(sig, "tss", &got, &state, &result) > 0 && got == id) {
          f = {true, state, result};
        }
      }
      sd_bus_message_unref(sig);
      sig = nullptr;
    }
    if (!f.arrived) sd_bus_wait(b, 100000);
  }
  return f;
}

Cmd run_ctl(const std::string& ctl, const std::string& address, const std::vector<std::string>& args, const std::string& as,
            int timeout_s) {
  std::vector<std::string> argv;
  if (as == "nobody") argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
  if (as == "adm") argv = {"setpriv", "--reuid=65534", "--regid=65534", "--groups=4"};
  argv.push_back(ctl);
  argv.push_back("--bus");
  argv.push_back(address);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, timeout_s);
}

}  // namespace fsaudit::testing
