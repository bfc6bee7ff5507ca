#pragma once
// "Stack facts": what one production filesystem is built from, gathered by the adapter (gather.hpp)
// and judged by pure rules (rules.hpp). Every fact is optional: a property the tool does not know
// (zfs-fuse has no autotrim) is "not evaluable", never a finding.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "probes/stack/model.hpp"

namespace fsaudit::setup {

// One member block device as the kernel sees it (the partition's whole disk for model etc.).
struct BlockDevice {
  std::string name;                     // kernel name: sda1, nvme0n1p2, loop3, dm-0
  std::string disk;                     // whole disk: sda, nvme0n1, loop3
  std::optional<bool> rotational;       // queue/rotational
  std::optional<std::uint64_t> physical_block_size;  // queue/physical_block_size
  std::string model;                    // device/model ("" unknown)
  std::string transport;                // nvme, sata, sas, usb, virtio, loop, ...
  std::string loop_backing_file;        // loop devices: the file behind it
  std::string loop_backing_fs;          // ... and the filesystem type that file lives on
  std::string loop_backing_mount;       // ... and its mount point
};

// What sits between XFS/ext4 and the disks.
struct LowerLayers {
  std::string raid;          // "md-raid1", "lvm-raid5", ... ("" when no RAID below)
  bool integrity = false;    // dm-integrity (or LVM raid with integrity) somewhere below
  std::string description;   // "md0 (raid1) over sda1 sdb1"
};

struct ZfsVdevFacts {
  std::string name;          // as zpool prints it
  bool is_file = false;      // a plain file as vdev
  std::string backing_fs;    // the filesystem the file (or a loop device's backing file) lives on
  std::string backing_mount;
};

struct ZfsPoolFacts {
  std::string name;
  std::vector<ZfsVdevFacts> stacked;        // leaf vdevs that are files or sit on another filesystem
  std::optional<int> ashift;                // pool property; 0 = chosen per vdev at creation
  std::optional<bool> autotrim;             // absent before OpenZFS 0.8 (zfs-fuse)
  std::optional<double> capacity_percent;   // allocated / size
  std::optional<double> size_bytes;
};

struct ZfsDatasetFacts {
  std::string name;
  std::optional<std::string> checksum;      // on, off, fletcher4, sha256, ...
  std::optional<std::string> compression;   // off, on, lz4, zstd, ...
  std::optional<int> copies;
  std::optional<std::uint64_t> recordsize;
};

struct NocowScan {
  std::uint64_t examined = 0;
  std::uint64_t nocow = 0;
  bool truncated = false;                   // hit max_entries
  std::vector<std::string> examples;        // first few NOCOW paths
  std::vector<std::string> errors;          // unreadable entries (first few)
};

struct BtrfsFacts {
  std::string fsid;
  std::vector<std::string> data_profiles, metadata_profiles;  // several while converting
  std::optional<std::uint64_t> unallocated_bytes;
  std::optional<NocowScan> nocow;
};

struct BcachefsFacts {
  std::optional<std::string> data_checksum;   // none, crc32c, crc64, xxhash
  std::optional<std::uint64_t> data_replicas, metadata_replicas;
  std::optional<std::string> compression;
};

// From the scrub probe's state (<state_dir>/scrub/<key>.state).
struct ScrubFacts {
  double first_seen = 0;           // when fsaudit first saw the target
  double last_completed_end = 0;   // 0: never completed while fsaudit watched
  std::string unsupported_reason;  // the scrub driver cannot scrub this target
};

struct StackFacts {
  std::string target;              // label `target`
  std::string fs;                  // btrfs, zfs (zfs-fuse too), bcachefs, xfs, ext4, ...
  std::string mountpoint, source;
  std::string options;             // mount and superblock options, comma-separated
  double now = 0;                  // Unix seconds
  std::optional<double> size_bytes, used_bytes;
  std::vector<BlockDevice> devices;   // member block devices (leaves)
  LowerLayers lower;
  std::optional<ZfsPoolFacts> zpool;
  std::optional<ZfsDatasetFacts> zdataset;
  std::optional<BtrfsFacts> btrfs;
  std::optional<BcachefsFacts> bcachefs;
  std::optional<ScrubFacts> scrub;
  // What the filesystem reports it is (btrfs, ZFS: from their own parsers; probes/stack/model.hpp).
  std::optional<stack::StackModel> model;
  std::optional<double> measured_io_bytes;  // typical write size on this target, where measurable
  std::string kernel_release;
  std::vector<std::string> problems;  // facts that could not be gathered, and why
  bool has_option(const std::string& opt) const;
  std::optional<std::string> option_value(const std::string& key) const;  // "compress=zstd:3" -> "zstd:3"
};

}  // namespace fsaudit::setup
