#pragma once
// Which physical drive a block device is and which whole disks sit under it. Kernel names
// ("sdq", "nvme0n1p3", "dm-2") do not tell an operator which drive to pull; serial, WWN, model and
// the /dev/disk/by-id links do. Everything is read through HostPaths, so fixture sysfs trees work.
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

// Identity of the block device `name` (a kernel name). Missing attributes stay empty: a virtual disk
// has no serial, which is a fact, not an error.
DiskIdentity identify(const HostPaths& host, std::string_view name);

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
