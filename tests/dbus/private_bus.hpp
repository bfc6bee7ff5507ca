#pragma once
// A dbus-daemon of a test's own (custom bus, the repository's policy file), torn down with it.
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/daemon_process.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::testing {

// A dbus-daemon of the test's own, with the policy file from the repository.
class PrivateBus {
 public:
  explicit PrivateBus(const std::filesystem::path& dir) {
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
  ~PrivateBus() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
  }
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  int pid_ = -1;
};

}  // namespace fsaudit::testing
