#pragma once
// A private systemd-journald namespace for lab tests (journald@NS): its own config, journal
// directory and runtime directory, all removed again. Needs root and /lib/systemd/systemd-journald.
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>

namespace fsaudit::testing {

class PrivateJournald {
 public:
  explicit PrivateJournald(const std::string& prefix = "fsaudit-jd-");
  ~PrivateJournald();
  PrivateJournald(const PrivateJournald&) = delete;
  PrivateJournald& operator=(const PrivateJournald&) = delete;

  void start();  // after stop(): the same namespace and journal directory again
  void stop();   // SIGTERM, then SIGKILL after 5 s
  bool ok() const;
  bool running() const;
  const std::string& ns() const { return ns_; }
  const std::filesystem::path& journal_dir() const { return journal_dir_; }
  std::size_t files() const;  // *.journal files in the journal directory

 private:
  std::string ns_;
  std::filesystem::path conf_, journal_dir_, runtime_dir_;
  pid_t pid_ = -1;
};

}  // namespace fsaudit::testing
