#pragma once
// What the canary cycle needs from each filesystem stack: take the canary offline and back (to drop
// its caches), list its member devices, read its error counters, read its health, scrub it, clear
// the counters it caused; and lab mode's recipe for building one. One implementation per filesystem
// (probes/btrfs/canary_ops.hpp, probes/zfs/canary_ops.hpp, probes/xfs/canary_ops.hpp,
// probes/ext4/canary_ops.hpp; the last two on PlainOps below), chosen once when a canary is
// resolved (make_canary_ops, probes/canary/stack.hpp), so neither the cycle nor the lab asks which
// filesystem it runs on.
#include <chrono>
#include <cstdint>
#include <map>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/probe/probe.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/canary_ops/lab.hpp"
#include "probes/stack/model.hpp"

namespace fsaudit::canary {

// Error counters of the whole canary, for before/after comparisons.
struct Counters {
  std::uint64_t checksum = 0;  // btrfs corruption_errs, ZFS CKSUM (leaf vdevs)
  std::uint64_t read = 0;      // btrfs read_io_errs, ZFS READ (leaf vdevs)
  std::map<std::string, std::uint64_t> per_device;  // canonical member path (as far as resolvable) -> checksum + read
  std::uint64_t total() const { return checksum + read; }
};

// The members whose counters rose from `before` to `after`.
std::vector<std::string> devices_with_new_errors(const Counters& before, const Counters& after);

struct ScrubOutcome {
  bool supported = false;
  bool ok = false;             // the scrub ran to completion
  std::string error;
  double seconds = 0;
  std::uint64_t errors_found = 0;
  std::uint64_t errors_repaired = 0;
  std::uint64_t uncorrectable = 0;
  std::string summary;         // one line, for the journal
};

struct StackEnv {
  CommandRunner& runner;
  const ToolPaths& tools;
  std::stop_token stop;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // per command
  // How long `btrfs scrub start -B` may outlive btrfs's final records of its scrub before it is
  // stopped (see probes/btrfs/canary_ops.cpp).
  std::chrono::milliseconds tool_exit_grace{std::chrono::seconds(30)};
  // The host's /proc, /sys and /dev (set by make_canary_ops): member names and health are read there.
  HostPaths host{};
  std::string tool(const std::string& n) const {
    auto it = tools.find(n);
    return it == tools.end() || it->second.empty() ? n : it->second;
  }
};

// The part of a configured canary its stack operations read (the config's CanaryTarget would bring
// the YAML reader into every filesystem folder).
struct OpsTarget {
  std::string name;
  std::string fs;  // canonical: btrfs, zfs, xfs, ext4
  std::string mountpoint;
  std::string pool;  // ZFS only
  std::vector<std::string> devices;
  std::string mount_options;  // used when the canary is mounted again ("" = defaults)
};

class CanaryOps {
 public:
  CanaryOps(OpsTarget t, StackEnv env) : t_(std::move(t)), env_(env) {}
  virtual ~CanaryOps() = default;
  CanaryOps(const CanaryOps&) = delete;
  CanaryOps& operator=(const CanaryOps&) = delete;

  // Data checksums: an injected corruption can be detected, and a scrub can find it.
  virtual bool checksumming() const = 0;
  // The stack reports its own members (a multi-device filesystem or a pool): the safety check
  // compares them with the configured devices.
  virtual bool lists_members() const = 0;
  // The canary's own mount is a dataset of its pool (ZFS: found by the pool's name), not a mount of
  // a member device; an exported pool leaves nothing mounted at its mount point.
  virtual bool mounted_as_pool() const { return false; }
  // Members may be regular files (ZFS file vdevs); elsewhere a file member is refused.
  virtual bool allows_file_members() const { return false; }
  // Whether the canary file is fsynced before the stack goes offline.
  virtual bool fsync_before_offline() const { return true; }
  // Members as the stack itself reports them, resolved paths.
  virtual Result<std::vector<std::string>> members() = 0;
  virtual Result<void> take_offline() = 0;
  virtual Result<void> bring_online() = 0;
  virtual Result<Counters> counters() = 0;
  // What the stack is and how healthy it is now, read through the filesystem's own parser.
  virtual Result<stack::StackModel> model() = 0;
  virtual ScrubOutcome scrub() = 0;
  virtual Result<void> clear_counters() = 0;
  // Lab mode: builds this stack on images the lab makes (LabHost), mounted at the target's mount
  // point, and fills in the target's devices (and pool): target() then says what was built.
  virtual Result<void> build_lab(LabHost& lab, const LabSpec& spec) = 0;

  const OpsTarget& target() const { return t_; }

 protected:
  CommandResult run(std::vector<std::string> argv, std::chrono::milliseconds timeout = {}, std::stop_token stop = {});
  // A short-lived reader (an indexer, a backup's stat walk) makes umount and zpool export answer
  // "busy" for a moment: tries `argv` for up to 5 s before giving up with "<what>: <reason>".
  Result<void> run_until_not_busy(const std::vector<std::string>& argv, const std::string& what);
  // `mount -t <fs> [-o options] <first device> <mountpoint>`, `extra_options` after the configured ones.
  Result<void> mount(const std::string& extra_options = "");

  OpsTarget t_;
  StackEnv env_;
};

// A member name as the stack prints it, as a resolved path: an absolute path resolved, a bare kernel
// name (zpool status prints leaves without /dev/) under the host's /dev.
std::string canonical_member(const HostPaths& host, const std::string& name);

// How lab mode makes a plain filesystem: its mkfs command line and the size of its one device. Each
// such filesystem gives its own (probes/xfs/canary_ops.hpp, probes/ext4/canary_ops.hpp).
struct PlainRecipe {
  std::vector<std::string> (*mkfs_argv)(const std::string& device, const std::string& label) = nullptr;
  std::uint64_t (*image_size)(const LabSpec& spec) = nullptr;
};

// A single-device filesystem without data checksums (XFS, ext4): umount / mount, no counters, no
// scrub, one copy; its filesystem's recipe for the lab.
class PlainOps final : public CanaryOps {
 public:
  PlainOps(OpsTarget t, StackEnv env, PlainRecipe recipe) : CanaryOps(std::move(t), env), recipe_(recipe) {}
  bool checksumming() const override { return false; }
  bool lists_members() const override { return false; }
  Result<std::vector<std::string>> members() override;
  Result<void> take_offline() override;
  Result<void> bring_online() override { return mount(); }
  Result<Counters> counters() override { return Counters{}; }
  Result<stack::StackModel> model() override;
  ScrubOutcome scrub() override;
  Result<void> clear_counters() override { return {}; }
  // One loop device of the recipe's size, made with the recipe's mkfs, mounted.
  Result<void> build_lab(LabHost& lab, const LabSpec& spec) override;

 private:
  PlainRecipe recipe_;
};

}  // namespace fsaudit::canary
