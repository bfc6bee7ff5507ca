#pragma once
// Shared test helpers: fixtures, commands, HTTP scrapes.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fsaudit::testing {

// Text of tests/fixtures/<name> (a path relative to tests/fixtures) with its "# source:" lines removed.
std::string fixture(const std::string& name);
std::filesystem::path fixtures_dir();

struct Cmd {
  int exit_code = -1;
  std::string out, err;
  bool ok() const { return exit_code == 0; }
};
// Runs argv (no shell) with a timeout; output captured.
Cmd run(const std::vector<std::string>& argv, int timeout_s = 120);
// Runs argv and fails the current test (ADD_FAILURE) when it does not exit 0.
Cmd must(const std::vector<std::string>& argv, int timeout_s = 120);

// GET http://127.0.0.1:<port><path>; returns the body, or "" with *error set.
std::string http_get(int port, const std::string& path, std::string* error = nullptr, int timeout_ms = 5000);

// A free TCP port on 127.0.0.1 (bound then released).
int free_port();

// Value of the first sample line in Prometheus text whose name is `name` and whose labels include
// every pair in `labels`; NaN if none.
double scrape_value(const std::string& text, const std::string& name,
                    const std::map<std::string, std::string>& labels = {});
// All sample lines of `name` (for messages).
std::string scrape_lines(const std::string& text, const std::string& name);
// Every sample line of the text (a histogram's _bucket, _sum and _count lines each count as one).
struct ScrapeSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
std::vector<ScrapeSample> scrape_samples(const std::string& text);

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "fsaudit-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

void write_text(const std::filesystem::path& p, const std::string& text);

// prefix + 8 random hex digits: names (devices, journal namespaces) no other test run uses.
std::string unique_name(const std::string& prefix);

// A child process that holds `files` open with `flags` (O_RDWR: a writer) under the name `comm`
// (what /proc/PID/comm shows) until release() or destruction kill and reap it. ok(): it opened all.
class FileHolder {
 public:
  FileHolder(const std::vector<std::string>& files, int flags, const std::string& comm);
  ~FileHolder() { release(); }
  FileHolder(const FileHolder&) = delete;
  FileHolder& operator=(const FileHolder&) = delete;
  bool ok() const { return ok_; }
  int pid() const { return pid_; }
  void release();

 private:
  int pid_ = -1;
  bool ok_ = false;
};

}  // namespace fsaudit::testing
