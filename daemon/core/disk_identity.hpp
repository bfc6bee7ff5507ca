#pragma once
// Which physical drive a block device is and which whole disks sit under it. Kernel names
// ("sdq", "nvme0n1p3", "dm-2") do not tell an operator which drive to pull; serial, WWN, model and
// the /dev/disk/by-id links do. Everything is read through HostPaths, so fixture sysfs trees work.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/core/host_paths.hpp"

namespace fsaudit::block {

struct DiskIdentity {
  std::string name;       // kernel name, as given
  std::string model;      // <dev>/device/model (ATA, SCSI, NVMe, virtio has none)
  std::string serial;     // <dev>/serial or <dev>/device/serial; a partition's come from its disk
  std::string wwn;        // <dev>/wwid or <dev>/device/wwid (naa.…, eui.…, t10.…)
  std::vector<std::string> by_id;  // /dev/disk/by-id links to exactly this device (host.dev paths), sorted
  std::string transport;  // nvme, sata, sas, scsi, usb, virtio, mmc, loop, md, dm, ""
  std::string backing_file;  // loop devices: the file behind it (its identity across reboots)
};

// The /dev/disk/by-id links by the kernel name they resolve to (host.dev paths, sorted): read once
// for many disks, where resolving every link again for each disk grew with disks x links.
using ByIdLinks = std::map<std::string, std::vector<std::string>>;
ByIdLinks by_id_links(const HostPaths& host);

// Identity of the block device `name` (a kernel name). Missing attributes stay empty: a virtual disk
// has no serial, which is a fact, not an error. `links`: by_id_links() of this pass, or read here.
DiskIdentity identify(const HostPaths& host, std::string_view name, const ByIdLinks* links = nullptr);

// identify() for a probe that asks about the same disks every run: what sysfs says of a disk
// (model, serial, WWN, bus, backing file) is kept while its <sysfs>/class/block/<name>/diskseq
// reads the same (the kernel gives every attach of a disk, a loop device's too, a new sequence
// number); a disk without a diskseq (kernels before 5.15) is read every time. The by-id links are
// the pass's. Not thread-safe: one probe's runs do not overlap.
class IdentityCache {
 public:
  DiskIdentity identify(const HostPaths& host, const std::string& name, const ByIdLinks& links);
  // Keeps only these disks (the others went away).
  void retain(const std::set<std::string>& names);
  std::size_t reads_saved() const { return saved_; }  // for tests

 private:
  struct Known {
    std::string diskseq;
    DiskIdentity id;
  };
  std::map<std::string, Known> known_;
  std::size_t saved_ = 0;
};

// The whole disks under a block device (a kernel name or a /dev path), walking sysfs down the stack:
// a partition to its disk, device-mapper (LVM, crypt, multipath) and md through `slaves/` (md also
// through `md/dev-*` when slaves/ is absent). A loop device is a disk of its own: the disk holding
// its backing file is shared by the whole host, so the file, not that disk, is what tells loop
// devices apart (DiskIdentity::backing_file). Sorted, without repeats; empty for a device sysfs
// does not know (gone, or not a block device: a ZFS file vdev, "mirror-0"), never a guess.
std::vector<std::string> whole_disks(const HostPaths& host, std::string_view device);

// The `disk` label of a device series: whole_disks() joined with ',' ("sdb", "sdb,sdc" for a dm
// or md device over two disks).
std::string disk_label(const HostPaths& host, std::string_view device);

}  // namespace fsaudit::block
