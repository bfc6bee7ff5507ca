#pragma once
// Lab tests use real loop devices, mounts and zfs-fuse. They create and always tear down their own
// resources (RAII guards run even when an assertion fails), skip with a reason when not root, and
// FAIL instead of skipping when FSAUDIT_REQUIRE_LAB=1 (CI).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace fsaudit::testing {

bool lab_required();
// True when this process's mounts are invisible to the rest of the machine (root: always, from
// before main()), so that no other process can hold or write into a lab filesystem.
bool lab_mounts_private();
// Why lab tests cannot run here (not root, no losetup, ...), or nullopt when they can.
std::optional<std::string> lab_unavailable();
// Why zfs-fuse lab tests cannot run (not installed, no /dev/fuse), or nullopt.
std::optional<std::string> zfs_fuse_unavailable();

// Why a lab test cannot run without `tool` (looked up in PATH, /usr/sbin and /sbin), or nullopt.
std::optional<std::string> lab_tool_missing(const std::string& tool, const std::string& package);
// Why a lab test cannot run without `path` (a kernel interface, a binary), or nullopt.
std::optional<std::string> lab_path_missing(const std::filesystem::path& path, const std::string& what);

// The one way a test skips: with a reason when `why_expr` (an optional<string>) holds one, and as a
// failure instead under FSAUDIT_REQUIRE_LAB=1, so a CI run where something is missing cannot pass
// by skipping. Use in the test body (or SetUp), before anything is created.
#define FSAUDIT_LAB_NEEDS(why_expr)                                                                \
  do {                                                                                           \
    if (auto why_ = (why_expr)) {                                                                \
      if (::fsaudit::testing::lab_required()) FAIL() << "lab test cannot run (FSAUDIT_REQUIRE_LAB=1): " << *why_; \
      GTEST_SKIP() << "lab test skipped: " << *why_;                                              \
    }                                                                                            \
  } while (0)

// Use at the top of a lab test body (or SetUp).
#define FSAUDIT_REQUIRE_LAB_OR_SKIP() FSAUDIT_LAB_NEEDS(::fsaudit::testing::lab_unavailable())

#define FSAUDIT_REQUIRE_ZFS_FUSE_OR_SKIP()                                                         \
  do {                                                                                           \
    FSAUDIT_REQUIRE_LAB_OR_SKIP();                                                               \
    FSAUDIT_LAB_NEEDS(::fsaudit::testing::zfs_fuse_unavailable());                               \
  } while (0)

// A sparse backing file attached with `losetup -f --show`; detached (exactly this device) on scope exit.
class LoopDevice {
 public:
  LoopDevice(const std::filesystem::path& dir, const std::string& name, std::uint64_t size_bytes);
  ~LoopDevice();
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;
  const std::string& device() const { return device_; }       // /dev/loopN, empty if attach failed
  const std::filesystem::path& backing() const { return file_; }
  bool ok() const { return !device_.empty(); }

 private:
  std::filesystem::path file_;
  std::string device_;
};

// mount(8) on scope entry, umount on exit (retrying, then lazily, so a failed test never leaks it).
class Mount {
 public:
  Mount(const std::string& device, const std::filesystem::path& dir, const std::string& fstype = "",
        const std::string& options = "");
  ~Mount();
  Mount(const Mount&) = delete;
  Mount& operator=(const Mount&) = delete;
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::filesystem::path& dir() const { return dir_; }
  // Drops the page cache of this filesystem by remounting (used before re-reading).
  bool remount(const std::string& options);
  void unmount();

 private:
  std::filesystem::path dir_;
  bool ok_ = false;
  std::string error_;
};

// How long ZfsFuse waits for another lab user to release zfs-fuse (inside the lab tests' ctest timeout).
inline constexpr int kZfsFuseLockWaitSeconds = 1200;

// Holds the machine-wide zfs-fuse lab lock (only one zfs-fuse may run), starts zfs-fuse when it is not
// running and stops it again on scope exit if this guard started it. Pools created under it must be
// destroyed by the test (use ZfsPool). Waits for another holder up to kZfsFuseLockWaitSeconds, then
// reports !ok() naming the holder.
class ZfsFuse {
 public:
  ZfsFuse();
  ~ZfsFuse();
  ZfsFuse(const ZfsFuse&) = delete;
  ZfsFuse& operator=(const ZfsFuse&) = delete;
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  // True when this guard started zfs-fuse (none was running): only then may a test restart it.
  bool owned() const { return pid_ > 0; }
  // Stops our zfs-fuse, calls `while_down`, starts it again (it imports its cached pools then).
  bool restart(const std::function<void()>& while_down);

 private:
  void spawn();
  void stop();
  int lock_fd_ = -1;
  int pid_ = -1;
  bool ok_ = false;
  std::string error_;
};

// `zpool create` on scope entry, `zpool destroy -f` on exit.
class ZfsPool {
 public:
  ZfsPool(const std::string& name, const std::vector<std::string>& create_args);  // args after the name
  ~ZfsPool();
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool ok_ = false;
  std::string error_;
};

// Bytes of a file/device region, and a SHA-like digest of a whole device (for "not one byte written").
std::string digest_file(const std::filesystem::path& p);

}  // namespace fsaudit::testing
