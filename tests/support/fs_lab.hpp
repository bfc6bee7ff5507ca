#pragma once
// Lab helpers for the filesystem probe tests: raw device pattern search and overwrite, Target from the live
// mount table, and a ProbeContext on the real host.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/probe/targets.hpp"
#include "daemon/runner/runner.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::testing {

// A 64 KiB block made of a marker and a counter, unlikely to occur anywhere else on a fresh fs.
inline std::string pattern_block(const std::string& marker) {
  std::string b;
  int i = 0;
  while (b.size() < 65536) b += marker + "-" + std::to_string(i++) + ";";
  b.resize(65536);
  return b;
}

// Byte offsets on `dev` where `needle` starts (reads the whole device).
inline std::vector<std::uint64_t> find_offsets(const std::string& dev, const std::string& needle) {
  std::vector<std::uint64_t> out;
  int fd = ::open(dev.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  const size_t chunk = 4 << 20;
  std::string buf(chunk + needle.size(), '\0');
  std::uint64_t base = 0;
  size_t carry = 0;
  while (true) {
    ssize_t n = ::read(fd, buf.data() + carry, chunk);
    if (n <= 0) break;
    size_t have = carry + static_cast<size_t>(n);
    std::string_view view(buf.data(), have);
    for (size_t p = view.find(needle); p != std::string_view::npos; p = view.find(needle, p + 1))
      out.push_back(base + p);
    size_t keep = std::min(have, needle.size() - 1);
    std::memmove(buf.data(), buf.data() + have - keep, keep);
    base += have - keep;
    carry = keep;
  }
  ::close(fd);
  // A match inside the carried tail is reported once: drop duplicates.
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

inline bool overwrite(const std::string& dev, std::uint64_t offset, const std::string& bytes) {
  int fd = ::open(dev.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)) == static_cast<ssize_t>(bytes.size());
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// The Target the daemon would build for the mount at `mountpoint`.
inline std::optional<Target> live_target(const std::string& mountpoint) {
  auto text = read_file("/proc/self/mountinfo");
  if (!text) return std::nullopt;
  auto mounts = parse_mountinfo(*text);
  if (!mounts) return std::nullopt;
  std::optional<Target> t;
  for (const auto& m : *mounts)
    if (m.mountpoint == mountpoint)
      t = Target{m.mountpoint, m.mountpoint, m.fstype, m.source, m.mount_options, m.super_options, m.major, m.minor};
  return t;
}

struct LiveContext {
  HostPaths host;
  ProcessRunner runner;
  ToolPaths tools;
  std::filesystem::path state_dir;
  ProbeContext ctx;
  explicit LiveContext(std::filesystem::path state = "/nonexistent-state")
      : state_dir(std::move(state)),
        ctx{host, runner, SystemClock::instance(), tools, state_dir, {},
            SystemClock::instance().now() + std::chrono::seconds(60)} {}
};

// The kernel name the probes put in the `device` label of a /dev/<name> device (loop devices here).
inline std::string kname(const std::string& dev) { return std::filesystem::path(dev).filename().string(); }

// Runs `p` once on the live mount at `mnt`, as the daemon would.
inline ProbeResult run_probe(Probe& p, const std::string& mnt) {
  auto t = live_target(mnt);
  EXPECT_TRUE(t) << "no mount at " << mnt;
  if (!t) return ProbeResult::failed("no mount");
  EXPECT_TRUE(p.applies_to(*t));
  LiveContext c;
  return p.run(*t, c.ctx);
}

// btrfs-progs records scrubs in /var/lib/btrfs/scrub.status.<fsid>: remove the file our scrub created.
class ScrubStatusFileCleanup {
 public:
  explicit ScrubStatusFileCleanup(const std::string& dev) {
    auto c = run({"blkid", "-s", "UUID", "-o", "value", dev});
    auto uuid = std::string(trim(c.out));
    if (c.ok() && !uuid.empty()) path_ = std::filesystem::path("/var/lib/btrfs") / ("scrub.status." + uuid);
  }
  ~ScrubStatusFileCleanup() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove(path_, ec);
  }

 private:
  std::filesystem::path path_;
};

}  // namespace fsaudit::testing
