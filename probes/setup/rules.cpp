#include "probes/setup/rules.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "daemon/core/strings.hpp"

namespace fsaudit::setup {

bool StackFacts::has_option(const std::string& opt) const {
  for (auto o : split(options, ','))
    if (o == opt) return true;
  return false;
}

std::optional<std::string> StackFacts::option_value(const std::string& key) const {
  std::optional<std::string> v;
  for (auto o : split(options, ','))
    if (o.size() > key.size() && o.substr(0, key.size()) == key && o[key.size()] == '=')
      v = std::string(o.substr(key.size() + 1));
  return v;
}

const std::vector<RuleInfo>& rules() {
  static const std::vector<RuleInfo> r = {
      {"no_data_checksums", "warning", "Data not checksummed",
       "Nothing in this stack checks file data: a disk or cable that corrupts data is read back as success "
       "(XFS and ext4 on md/LVM RAID returned corrupted data with exit code 0 in every injection test).",
       "Put data that matters on btrfs (raid1), ZFS (mirror/raidz) or bcachefs (replicas), or add dm-integrity "
       "below the filesystem; keep a blind-stack canary so the risk stays visible."},
      {"btrfs_nodatasum", "critical", "btrfs mounted without data checksums",
       "nodatasum/nodatacow turn off btrfs data checksums for new data: corrupted data is returned as success, "
       "exactly like XFS, while every health probe shows a healthy filesystem.",
       "Remove nodatasum/nodatacow from the mount options (fstab) and remount; data written meanwhile stays "
       "unchecksummed until it is rewritten (e.g. btrfs filesystem defragment on a copy)."},
      {"btrfs_nocow_files", "warning", "btrfs NOCOW files or directories",
       "Files with the NOCOW attribute (chattr +C, common for VM images and databases) have no data checksums: "
       "their corruption is silent even on a btrfs raid1.",
       "chattr -C on the directory and copy the files anew (the attribute only changes for new files), or keep "
       "such data on ZFS (a zvol or a dataset with a small recordsize) where checksums stay on."},
      {"zfs_checksum_off", "critical", "ZFS dataset with checksum=off",
       "checksum=off makes ZFS hand back corrupted data with success and makes scrubs unable to see it, while the "
       "pool reports ONLINE.",
       "zfs set checksum=on DATASET (new writes are protected; rewrite old data, e.g. zfs send | zfs receive)."},
      {"bcachefs_data_checksum_none", "critical", "bcachefs data_checksum=none",
       "data_checksum=none turns off bcachefs data checksums: corrupted data is returned as success.",
       "Set data_checksum to crc32c (default) or xxhash (bcachefs set-fs-option or the mount option) and rewrite "
       "the data (bcachefs data rereplicate)."},
      {"not_repairable", "warning", "Checksummed but not repairable",
       "Checksums detect a bad block, but with a single copy there is nothing to repair it from: reads fail with "
       "EIO and the file is lost (the canary's verdict is 'detected', not 'repaired').",
       "Add redundancy: btrfs balance -dconvert=raid1 (or dup on one disk), a ZFS mirror (zpool attach) or "
       "copies=2 on the dataset, bcachefs data_replicas=2."},
      {"btrfs_raid56", "warning", "btrfs raid5/raid6",
       "btrfs raid5/raid6 has a write hole (a crash during a partial stripe write can corrupt other data) and is "
       "still marked unstable by its developers; metadata on raid5/6 risks the whole filesystem.",
       "Convert data to raid1/raid10 (or raid1c3) and metadata to raid1c3/raid1c4: btrfs balance start "
       "-dconvert=raid1 -mconvert=raid1c3 MOUNTPOINT."},
      {"metadata_not_duplicated", "warning", "Metadata not duplicated",
       "With a single copy of metadata one bad block can make a whole directory tree or the filesystem "
       "unreadable; checksums then only say that it is gone.",
       "btrfs balance start -mconvert=dup (one device) or -mconvert=raid1 (several) MOUNTPOINT; bcachefs "
       "metadata_replicas=2."},
      {"zfs_stacked_vdev", "warning", "ZFS vdev on a file or another filesystem",
       "A pool on files (or on loop devices backed by files) of another filesystem pays for two filesystems: "
       "double journaling and read-modify-write of whole records. A hosting company measured ZFS on a file on "
       "ext4 41x slower than ext4 (47 ms vs 1 ms per save); the lower filesystem can also lose or reorder "
       "writes ZFS believes are on disk.",
       "Give ZFS whole disks or partitions (zpool create POOL mirror /dev/disk/by-id/A /dev/disk/by-id/B) and "
       "migrate with zfs send | zfs receive."},
      {"zfs_ashift_too_small", "warning", "ZFS ashift below the disks' physical sector size",
       "An ashift below the physical sector size (e.g. 9 on 4K disks) makes every write a read-modify-write "
       "inside the drive: much slower, and a torn sector can damage neighbouring blocks.",
       "ashift is fixed per vdev at creation: recreate the vdev with -o ashift=12 (4K) or 13 (8K) and move the "
       "data (zfs send | zfs receive)."},
      {"zfs_recordsize_mismatch", "info", "recordsize far from the measured I/O size",
       "Writes much smaller than recordsize force ZFS to read, modify and rewrite whole records (128K records "
       "under 4K VM writes: up to 32x the work).",
       "zfs set recordsize=16K (or the application's block size) on the dataset, or use a zvol with a matching "
       "volblocksize; only new files get the new recordsize."},
      {"zfs_compression_off", "info", "ZFS compression off",
       "lz4/zstd compression is nearly free on modern CPUs, saves space and often makes I/O faster.",
       "zfs set compression=lz4 DATASET (applies to new writes)."},
      {"zfs_autotrim_off", "info", "autotrim off on a non-rotational pool",
       "Without TRIM, SSDs do not learn which blocks are free: write amplification and latency grow as the "
       "drives fill.",
       "zpool set autotrim=on POOL (or schedule zpool trim POOL)."},
      {"raid_without_integrity", "warning", "XFS/ext4 on md or LVM RAID without dm-integrity",
       "md and LVM RAID cannot tell which copy is right: a check finds mismatches (mismatch_cnt) but a read "
       "returns whichever copy it hits, corrupted or not.",
       "Add dm-integrity under each RAID member (integritysetup, or lvcreate --raidintegrity y), or move the "
       "data to a checksumming filesystem with its own redundancy."},
      {"scrub_overdue", "warning", "No completed scrub within the configured age",
       "Corruption in data nobody reads is found only by a scrub; without one, a second failure can turn a "
       "repairable error into lost data.",
       "Let fsaudit schedule scrubs (scrub: section) or fix the timer/cron job that should run them; check "
       "fsaudit_scrub_decision_info for why none ran."},
      {"zfs_fill_high", "warning", "ZFS pool fuller than the level where it degrades",
       "Above about 80 % allocation ZFS spends more and more time finding free space: writes slow down sharply "
       "and fragmentation grows.",
       "Free space (delete data, destroy old snapshots) or add a vdev of the same redundancy."},
      {"btrfs_unallocated_low", "warning", "btrfs unallocated space low",
       "When no unallocated device space is left btrfs cannot create a new metadata chunk and returns ENOSPC "
       "(or goes read-only) although df shows free space.",
       "btrfs balance start -dusage=50 MOUNTPOINT to compact data chunks, delete data or add a device."},
  };
  return r;
}

const RuleInfo* find_rule(const std::string& id) {
  for (const auto& r : rules())
    if (r.id == id) return &r;
  return nullptr;
}

bool Evaluation::holds(const std::string& rule) const {
  for (const auto& f : findings)
    if (f.rule == rule) return true;
  return false;
}

bool checksumming_fs(const std::string& fs) { return fs == "btrfs" || fs == "zfs" || fs == "bcachefs"; }

std::optional<bool> data_checksummed(const StackFacts& f) {
  if (f.fs == "btrfs") return !f.has_option("nodatasum") && !f.has_option("nodatacow");
  if (f.fs == "zfs") {
    if (!f.zdataset || !f.zdataset->checksum) return std::nullopt;
    return to_lower(*f.zdataset->checksum) != "off";
  }
  if (f.fs == "bcachefs") {
    auto v = f.option_value("data_checksum");
    if (!v && f.bcachefs && f.bcachefs->data_checksum) v = f.bcachefs->data_checksum;
    if (!v) return true;  // crc32c is the default
    return to_lower(*v) != "none";
  }
  return f.lower.integrity;  // only dm-integrity below checks the data of XFS, ext4, ...
}

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string bytes(double v) {
  const char* u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  while (v >= 1024 && i < 5) v /= 1024, ++i;
  return fmt(i ? "%.1f" : "%.0f", v) + " " + u[i];
}

class Judge {
 public:
  Judge(const StackFacts& f, const config::SetupConfig& c) : f_(f), c_(c) {}
  void fire(const std::string& rule, std::string evidence) {
    const auto* r = find_rule(rule);
    e_.findings.push_back({rule, r ? r->severity : "warning", std::move(evidence)});
  }
  void unknown(const std::string& rule, std::string reason) { e_.not_evaluable.push_back({rule, std::move(reason)}); }
  // not_repairable from the stack model: whether every data block has a second copy or parity.
  void repairable(const std::string& what) {
    if (!f_.model || f_.model->layout.empty()) {
      unknown("not_repairable", "the filesystem's layout is not known (" +
                                    (f_.model ? f_.model->reason : std::string("no stack model")) + ")");
      return;
    }
    const auto& m = *f_.model;
    if (!m.repairs)
      fire("not_repairable", what + m.layout +
                                 (m.copies ? ", " + std::to_string(*m.copies) + " cop" + (*m.copies == 1 ? "y" : "ies")
                                           : std::string(", a block may have one copy")) +
                                 " of a data block, no parity");
  }
  Evaluation run();

 private:
  void checksums();
  void btrfs();
  void zfs();
  void bcachefs();
  void lower();
  void scrub();
  const StackFacts& f_;
  const config::SetupConfig& c_;
  Evaluation e_;
};

void Judge::checksums() {
  if (checksumming_fs(f_.fs)) return;
  if (f_.lower.integrity) return;
  fire("no_data_checksums", f_.fs + " on " + (f_.source.empty() ? "?" : f_.source) +
                                " checks no file data (no data checksums, no dm-integrity below)");
}

void Judge::btrfs() {
  std::vector<std::string> off;
  for (const char* o : {"nodatasum", "nodatacow"})
    if (f_.has_option(o)) off.push_back(o);
  if (!off.empty()) fire("btrfs_nodatasum", "mounted with " + join(off, ",") + " (options: " + f_.options + ")");
  if (!f_.btrfs) {
    for (const char* r : {"not_repairable", "btrfs_raid56", "metadata_not_duplicated", "btrfs_unallocated_low"})
      unknown(r, "btrfs allocation profiles not readable (sysfs fs/btrfs)");
    return;
  }
  const auto& b = *f_.btrfs;
  if (b.nocow) {
    if (b.nocow->nocow > 0)
      fire("btrfs_nocow_files", std::to_string(b.nocow->nocow) + " NOCOW entr" + (b.nocow->nocow == 1 ? "y" : "ies") +
                                    " among " + std::to_string(b.nocow->examined) + " examined" +
                                    (b.nocow->truncated ? " (scan bounded)" : "") + ": " + join(b.nocow->examples));
  } else {
    unknown("btrfs_nocow_files", "NOCOW scan disabled or not run");
  }
  repairable("btrfs data profile ");
  std::vector<std::string> r56;
  for (const auto& p : b.data_profiles)
    if (p == "raid5" || p == "raid6") r56.push_back("data " + p);
  for (const auto& p : b.metadata_profiles)
    if (p == "raid5" || p == "raid6") r56.push_back("metadata " + p);
  if (!r56.empty()) fire("btrfs_raid56", "btrfs " + join(r56) + " (write hole; unstable)");
  if (b.metadata_profiles.empty()) {
    unknown("metadata_not_duplicated", "no metadata profile in sysfs allocation");
  } else {
    std::vector<std::string> bad;
    for (const auto& p : b.metadata_profiles)
      if (p == "single" || p == "raid0") bad.push_back(p);
    if (!bad.empty()) fire("metadata_not_duplicated", "btrfs metadata profile " + join(bad, "+"));
  }
  if (!b.unallocated_bytes || !f_.size_bytes) {
    unknown("btrfs_unallocated_low", "device sizes or allocation not readable");
  } else {
    double limit = std::min<double>(static_cast<double>(c_.btrfs_unallocated_min), 0.1 * *f_.size_bytes);
    if (static_cast<double>(*b.unallocated_bytes) < limit)
      fire("btrfs_unallocated_low", bytes(static_cast<double>(*b.unallocated_bytes)) + " unallocated on the devices (limit " +
                                        bytes(limit) + ")");
  }
}

void Judge::zfs() {
  if (!f_.zdataset) {
    for (const char* r : {"zfs_checksum_off", "zfs_compression_off", "zfs_recordsize_mismatch"})
      unknown(r, "dataset properties not readable (zfs get)");
  } else {
    const auto& d = *f_.zdataset;
    if (!d.checksum) unknown("zfs_checksum_off", "property checksum unknown to this zfs");
    else if (to_lower(*d.checksum) == "off") fire("zfs_checksum_off", "dataset " + d.name + " has checksum=off");
    if (!d.compression) unknown("zfs_compression_off", "property compression unknown to this zfs");
    else if (to_lower(*d.compression) == "off") fire("zfs_compression_off", "dataset " + d.name + " has compression=off");
    if (!d.recordsize) unknown("zfs_recordsize_mismatch", "property recordsize unknown to this zfs");
    else if (!f_.measured_io_bytes || *f_.measured_io_bytes <= 0)
      unknown("zfs_recordsize_mismatch", "no I/O size measured on this dataset (per-dataset kstats need OpenZFS 0.8+ and 1000 writes)");
    else {
      double rs = static_cast<double>(*d.recordsize), io = *f_.measured_io_bytes;
      double ratio = std::max(rs / io, io / rs);
      if (ratio >= c_.recordsize_factor)
        fire("zfs_recordsize_mismatch", "recordsize " + bytes(rs) + " vs measured I/O size " + bytes(io) + " (" +
                                            fmt("%.0f", ratio) + "x)");
    }
  }
  if (!f_.zpool) {
    for (const char* r : {"not_repairable", "zfs_stacked_vdev", "zfs_ashift_too_small", "zfs_autotrim_off", "zfs_fill_high"})
      unknown(r, "pool layout or properties not readable (zpool status / zpool get)");
    return;
  }
  const auto& p = *f_.zpool;
  repairable("pool " + p.name + ": data vdevs ");
  if (!p.stacked.empty()) {
    std::vector<std::string> ev;
    for (const auto& v : p.stacked)
      ev.push_back(v.name + (v.is_file ? " is a file" : " is a loop device") +
                   (v.backing_fs.empty() ? "" : " on " + v.backing_fs + " (" + v.backing_mount + ")"));
    fire("zfs_stacked_vdev", "pool " + p.name + ": " + join(ev, "; "));
  }
  // ashift against the members' physical sector size.
  std::uint64_t phys = 0;
  for (const auto& d : f_.devices)
    if (d.physical_block_size) phys = std::max(phys, *d.physical_block_size);
  if (!p.ashift) unknown("zfs_ashift_too_small", "property ashift unknown to this zpool");
  else if (*p.ashift == 0) unknown("zfs_ashift_too_small", "pool ashift is 0 (chosen per vdev at creation; not readable here)");
  else if (*p.ashift < 9 || *p.ashift > 20) unknown("zfs_ashift_too_small", "pool ashift " + std::to_string(*p.ashift) + " is not a valid ashift");
  else if (phys == 0) unknown("zfs_ashift_too_small", "members' physical sector size unknown");
  else if ((1ull << *p.ashift) < phys)
    fire("zfs_ashift_too_small", "pool " + p.name + " ashift=" + std::to_string(*p.ashift) + " (" +
                                     std::to_string(1ull << *p.ashift) + " B) below the members' physical sector size " +
                                     std::to_string(phys) + " B");
  if (!p.autotrim) {
    unknown("zfs_autotrim_off", "property autotrim unknown to this zpool");
  } else if (!*p.autotrim) {
    bool any = false, all_ssd = true;
    for (const auto& d : f_.devices) {
      if (!d.rotational) {
        all_ssd = false;
        continue;
      }
      any = true;
      all_ssd = all_ssd && !*d.rotational;
    }
    if (!any) unknown("zfs_autotrim_off", "members' rotational flag unknown");
    else if (all_ssd) fire("zfs_autotrim_off", "pool " + p.name + " has autotrim=off on non-rotational members");
  }
  if (!p.capacity_percent) unknown("zfs_fill_high", "pool capacity unknown");
  else if (*p.capacity_percent > c_.zfs_fill_max_percent)
    fire("zfs_fill_high", "pool " + p.name + " is " + fmt("%.0f", *p.capacity_percent) + " % allocated (limit " +
                              fmt("%.0f", c_.zfs_fill_max_percent) + " %)");
}

void Judge::bcachefs() {
  auto dc = data_checksummed(f_);
  if (dc && !*dc)
    fire("bcachefs_data_checksum_none", "data_checksum=none" + std::string(f_.option_value("data_checksum") ? " (mount option)" : ""));
  if (!f_.bcachefs || !f_.bcachefs->data_replicas) {
    unknown("not_repairable", "data_replicas not readable (sysfs fs/bcachefs/*/options)");
  } else if (*f_.bcachefs->data_replicas < 2) {
    fire("not_repairable", "bcachefs data_replicas=" + std::to_string(*f_.bcachefs->data_replicas));
  }
  if (f_.bcachefs && f_.bcachefs->metadata_replicas && *f_.bcachefs->metadata_replicas < 2)
    fire("metadata_not_duplicated", "bcachefs metadata_replicas=" + std::to_string(*f_.bcachefs->metadata_replicas));
}

void Judge::lower() {
  if (f_.lower.raid.empty() || f_.lower.integrity) return;
  fire("raid_without_integrity", f_.fs + " on " + f_.lower.raid +
                                     (f_.lower.description.empty() ? "" : " (" + f_.lower.description + ")") +
                                     ", no dm-integrity below");
}

void Judge::scrub() {
  if (f_.fs != "btrfs" && f_.fs != "zfs" && f_.fs != "bcachefs" && f_.fs != "xfs") return;
  if (!f_.scrub) {
    unknown("scrub_overdue", "no scrub state for this target (the scrub probe has not seen it)");
    return;
  }
  const auto& s = *f_.scrub;
  if (!s.unsupported_reason.empty()) {
    unknown("scrub_overdue", "cannot scrub here: " + s.unsupported_reason);
    return;
  }
  double max_age = std::chrono::duration<double>(c_.scrub_max_age).count();
  auto days = [](double secs) { return fmt("%.1f", secs / 86400) + " days"; };
  if (s.last_completed_end > 0) {
    double age = f_.now - s.last_completed_end;
    if (age > max_age) fire("scrub_overdue", "last completed scrub " + days(age) + " ago (limit " + days(max_age) + ")");
  } else if (s.first_seen > 0 && f_.now - s.first_seen > max_age) {
    fire("scrub_overdue", "no completed scrub in the " + days(f_.now - s.first_seen) + " fsaudit has watched (limit " +
                              days(max_age) + ")");
  }
}

Evaluation Judge::run() {
  checksums();
  if (f_.fs == "btrfs") btrfs();
  if (f_.fs == "zfs") zfs();
  if (f_.fs == "bcachefs") bcachefs();
  if (!checksumming_fs(f_.fs)) lower();
  scrub();
  return std::move(e_);
}

}  // namespace

Evaluation evaluate(const StackFacts& f, const config::SetupConfig& cfg) { return Judge(f, cfg).run(); }

}  // namespace fsaudit::setup
