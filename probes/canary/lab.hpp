#pragma once
// Lab mode (canary.lab.enabled): loop-device canaries under <state_dir>/lab/ — the stacks named in
// canary.lab.stacks, out of config::canary_lab_stacks() (btrfs profiles, zfs-fuse pools when
// zfs-fuse is installed, XFS, ext4) — so that one machine shows every verdict. Lab::setup() builds
// them, signs them, and ADDS them to cfg.canary.canaries; Lab::build() only builds them (the lab
// tests configure their canaries as an operator would). The destructor (or teardown()) unmounts,
// destroys/exports and detaches exactly what it created. Leftovers of a crashed previous lab
// (recorded in <dir>/lab.json) are removed first.
#include <memory>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/host_paths.hpp"
#include "daemon/core/result.hpp"
#include "daemon/runner/runner.hpp"
#include "probes/canary_ops/lab.hpp"

namespace fsaudit::canary {

// What a lab.json left by a crashed lab may name that teardown will touch: mounts under <dir>/mnt/,
// pools named fsauditlab<digits>, regular files directly in <dir> (no symlinks). Everything else in
// the file is dropped (and reported in `ignored`): teardown never unmounts, destroys or deletes
// anything the lab could not have made.
struct LabLeftovers {
  std::vector<std::string> mounts, pools, files, loops, ignored;
};
LabLeftovers sanitize_leftovers(const std::string& lab_json, const std::filesystem::path& dir);

// Whether `dir` may hold a lab: a real directory (not a symlink), owned by us, not writable by group
// or others; else `refused`, saying why.
Result<void> check_lab_dir(const std::filesystem::path& dir);

// Each stack is built by its filesystem's recipe (CanaryOps::build_lab); the Lab is the LabHost that
// makes, records and tears down what the recipes ask for.
class Lab : private LabHost {
 public:
  static Result<std::unique_ptr<Lab>> setup(config::Config& cfg);
  // The stacks of cfg.canary.lab.stacks, built and mounted but not signed nor added to cfg; fails
  // on the first stack that cannot be built.
  static Result<std::unique_ptr<Lab>> build(const config::Config& cfg);
  ~Lab() override;
  Lab(const Lab&) = delete;
  Lab& operator=(const Lab&) = delete;

  // Idempotent: unmount, zpool destroy, losetup -d (own devices only), stop zfs-fuse if started.
  void teardown();
  const std::vector<std::string>& canaries() const { return canaries_; }
  // After a config reload: appends the lab's canaries to the new config (if not already there).
  void add_to(config::Config& cfg) const;
  const std::vector<std::string>& warnings() const { return warnings_; }  // stacks that could not be built
  const std::filesystem::path& dir() const { return dir_; }
  // What each built stack is, as a canary entry with the lab's layout word (lab-<stack>).
  const std::vector<config::CanaryTarget>& targets() const { return targets_; }
  // The files the stacks live on: loop devices' backing files and ZFS file vdevs.
  const std::vector<std::string>& images() const { return files_; }

 private:
  Lab() = default;
  static Result<std::unique_ptr<Lab>> open(const config::Config& cfg);
  // The stack's canary entry, built by its filesystem's recipe: devices (and pool) filled in, mounted.
  Result<config::CanaryTarget> build_stack(const config::Config& cfg, const std::string& stack);
  void save() const;
  // LabHost: what the recipes ask for, each recorded (lab.json) before it is used.
  CommandResult run(std::vector<std::string> argv, int timeout_s = 120) override;
  Result<std::string> image(const std::string& name, std::uint64_t size) override;
  Result<std::string> loop_device(const std::string& name, std::uint64_t size) override;
  Result<void> mount(const std::string& device, const std::string& mountpoint,
                     const std::vector<std::string>& options) override;
  Result<void> start_zfs() override;
  std::string new_pool_name() override;
  void created_pool(const std::string& pool) override;
  Result<void> wait_mounted(const std::string& mountpoint) override;

  ProcessRunner runner_;
  HostPaths host_;
  ToolPaths tools_;
  std::filesystem::path dir_;
  std::vector<std::string> loops_, mounts_, pools_, files_;
  std::vector<std::string> canaries_, warnings_;
  std::vector<config::CanaryTarget> targets_;
  int pool_serial_ = 0;
  int zfs_pid_ = -1;
  int zfs_lock_fd_ = -1;
  bool torn_down_ = false;
};

}  // namespace fsaudit::canary
