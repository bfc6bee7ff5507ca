#include "probes/kernel_log/classify.hpp"

#include "daemon/core/strings.hpp"
#include "daemon/metrics/label_value.hpp"

namespace fsaudit::kernel_log {
namespace {

using sv = std::string_view;

bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }
bool has(sv s, sv p) { return s.find(p) != sv::npos; }

// The token after `key` up to a blank, ',', ')' or ';'. Empty when `key` is absent.
sv token_after(sv s, sv key) {
  auto p = s.find(key);
  if (p == sv::npos) return {};
  s.remove_prefix(p + key.size());
  std::size_t n = 0;
  while (n < s.size() && s[n] != ' ' && s[n] != ',' && s[n] != ')' && s[n] != ';' && s[n] != '\t') ++n;
  return s.substr(0, n);
}

// "(device sda3): rest" -> ("sda3", "rest"), for BTRFS/EXT4; XFS uses "XFS (sdb): rest".
bool split_paren(sv s, sv open, sv* dev, sv* rest) {
  auto p = s.find(open);
  if (p == sv::npos) return false;
  s.remove_prefix(p + open.size());
  auto q = s.find(')');
  if (q == sv::npos) return false;
  *dev = s.substr(0, q);
  s.remove_prefix(q + 1);
  if (starts(s, ":")) s.remove_prefix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  *rest = s;
  return true;
}

Event make(sv k, sv fs, sv device, sv fs_device, sv extra) {
  Event e;
  e.kind = k;
  e.fs = std::string(fs);
  // Device tokens become label values and state-file keys: cleaned here (valid UTF-8, bounded), so
  // a line with junk bytes counts under the same key across restarts.
  e.device = metrics::clean_label_value(device_label(device.empty() ? fs_device : device));
  e.fs_device = metrics::clean_label_value(device_label(fs_device.empty() ? device : fs_device));
  e.extra = std::string(trim(extra));
  return e;
}

std::optional<Event> btrfs(sv msg) {
  // "BTRFS warning (device sda3): ...", "BTRFS: error (device sdb) in ...", "BTRFS critical (device x): ..."
  sv dev, body;
  if (!split_paren(msg, "(device ", &dev, &body)) return std::nullopt;
  // While a transaction is aborted or a replace runs, btrfs adds its state letters after the name:
  // "(device sdb1: state A)" (STATE_STRING_PREFACE ": state ", 5.15 to 6.8), "(device sdb1 state EA)"
  // (" state ", 6.9 on). A kernel device name has neither a blank nor a colon: the device ends at either.
  if (auto sp = dev.find_first_of(" :"); sp != sv::npos) dev = dev.substr(0, sp);
  if (starts(body, "scrub: ")) body.remove_prefix(7);
  if (starts(body, "bdev ") && has(body, " errs: ")) {
    Event e = make(kind::device_stats, "btrfs", token_after(body, "bdev "), dev, body.substr(body.find(" errs: ") + 7));
    static constexpr sv keys[5] = {"wr ", "rd ", "flush ", "corrupt ", "gen "};
    for (std::size_t i = 0; i < 5; ++i) {
      auto v = parse_u64(token_after(body, keys[i]));
      if (!v) return std::nullopt;
      e.stats[i] = *v;
    }
    return e;
  }
  if (starts(body, "csum failed ")) return make(kind::checksum, "btrfs", {}, dev, body.substr(12));
  if (starts(body, "checksum error at "))
    return make(kind::checksum, "btrfs", token_after(body, " on dev "), dev, body.substr(18));
  if (starts(body, "i/o error at ")) return make(kind::io, "btrfs", token_after(body, " on dev "), dev, body.substr(13));
  // Scrub's errstr for a tree block whose header (bytenr, fsid, generation, level) is wrong (6.4+).
  if (starts(body, "header error at "))
    return make(kind::metadata_corruption, "btrfs", token_after(body, " on dev "), dev, body.substr(16));
  if (starts(body, "fixed up error at "))
    return make(kind::repaired, "btrfs", token_after(body, " on dev "), dev, body.substr(18));
  if (starts(body, "read error corrected"))
    return make(kind::repaired, "btrfs", token_after(body, "(dev "), dev, body.substr(20));
  if (starts(body, "unable to fixup "))
    return make(kind::unrepairable, "btrfs", token_after(body, " on dev "), dev, body.substr(16));
  // Tree block validation (disk-io.c, tree-checker.c), 5.4 to 6.18 wordings. Their follow-up lines
  // ("read time tree block corruption detected", "read error corrected") are another line each.
  static constexpr sv metadata[] = {"parent transid verify failed", "bad tree block ", "corrupt leaf", "corrupt node",
                                    "bad fsid on ", "level verify failed", "tree level mismatch detected",
                                    "tree first key mismatch detected"};
  for (sv m : metadata)
    if (starts(body, m)) return make(kind::metadata_corruption, "btrfs", {}, dev, body);
  // 5.4 printed the device name first: "sdb1 checksum verify failed on 30408704 wanted ...".
  if (has(body, "checksum verify failed on ") || starts(body, "superblock checksum mismatch"))
    return make(kind::checksum, "btrfs", {}, dev, body);
  // Scrub's own superblock check (6.4+): "super block at physical 65536 devid 1 has bad csum".
  if (starts(body, "super block at physical ")) {
    if (has(body, " has bad csum")) return make(kind::checksum, "btrfs", {}, dev, body);
    if (has(body, " has bad ")) return make(kind::metadata_corruption, "btrfs", {}, dev, body);
  }
  if (has(body, "forced readonly")) return make(kind::shutdown, "btrfs", {}, dev, body);
  return std::nullopt;
}

std::optional<Event> xfs(sv msg) {
  sv dev, body;
  if (!split_paren(msg, "XFS (", &dev, &body)) return std::nullopt;
  if (starts(body, "Metadata corruption detected")) return make(kind::metadata_corruption, "xfs", {}, dev, body);
  if (starts(body, "metadata I/O error")) {
    // "... len 1 error 117": a buffer that failed its verifier is reported again here with
    // EFSCORRUPTED (117) or EFSBADCRC (74) right after the "Metadata ... detected" line; only other
    // errors (EIO, ENODEV ...) are new events.
    auto e = body.rfind(" error ");
    sv code = e == sv::npos ? sv{} : token_after(body.substr(e), " error ");
    if (starts(code, "-")) code.remove_prefix(1);
    if (code == "117" || code == "74") return std::nullopt;
    return make(kind::io, "xfs", {}, dev, body);
  }
  if (starts(body, "Metadata CRC error detected") || starts(body, "log record CRC mismatch"))
    return make(kind::checksum, "xfs", {}, dev, body);
  // xfs_error_report: "Internal error XFS_WANT_CORRUPTED_GOTO at line 1423 of file ..." (5.4) /
  // "Internal error !xfs_verify_agbno(...) at line ..." (XFS_IS_CORRUPT, 5.5+). xfs_corruption_error
  // follows it with "Corruption detected. Unmount and run xfs_repair", the same event: not counted.
  if (starts(body, "Internal error ") || starts(body, "Access to block zero in inode ") ||
      starts(body, "Corruption warning: "))
    return make(kind::metadata_corruption, "xfs", {}, dev, body);
  // One shutdown prints "xfs_do_force_shutdown(...) called from ..." and then the reason line
  // ("... Shutting down filesystem" / newer "Filesystem has been shut down due to ..."): count the latter.
  if (has(body, "Shutting down filesystem") || starts(body, "Filesystem has been shut down"))
    return make(kind::shutdown, "xfs", {}, dev, body);
  if (starts(body, "log I/O error ")) return make(kind::io, "xfs", {}, dev, body);
  return std::nullopt;
}

std::optional<Event> ext4(sv msg) {
  sv dev, body;
  if (starts(msg, "EXT4-fs error ")) {
    if (!split_paren(msg, "(device ", &dev, &body)) return std::nullopt;
    return make(kind::fs_error, "ext4", {}, dev, body);
  }
  // ext4_end_bio: "EXT4-fs warning (device sdb1): ext4_end_bio:343: I/O error 10 writing to inode 12 ...".
  if (starts(msg, "EXT4-fs warning ")) {
    if (split_paren(msg, "(device ", &dev, &body) && has(body, ": I/O error ")) return make(kind::io, "ext4", {}, dev, body);
    return std::nullopt;
  }
  if (starts(msg, "EXT4-fs (") && split_paren(msg, "EXT4-fs (", &dev, &body)) {
    if (starts(body, "Remounting filesystem read-only")) return make(kind::shutdown, "ext4", {}, dev, body);
    if (starts(body, "I/O error while writing superblock")) return make(kind::io, "ext4", {}, dev, body);
    if (starts(body, "group descriptors corrupted")) return make(kind::metadata_corruption, "ext4", {}, dev, body);
  }
  return std::nullopt;
}

std::optional<Event> md(sv msg) {
  // "md/raid1:md0: Disk failure on sdb1, disabling device." / "md/raid:md0: read error corrected (8
  // sectors at 2056 on sdb1)" / "md/raid1:md0: sdb1: unrecoverable I/O read error for block 123".
  if (starts(msg, "md/")) {
    auto c1 = msg.find(':');
    if (c1 == sv::npos) return std::nullopt;
    sv rest = msg.substr(c1 + 1);
    auto c2 = rest.find(": ");
    if (c2 == sv::npos) return std::nullopt;
    sv array = rest.substr(0, c2), body = rest.substr(c2 + 2);
    if (starts(body, "Disk failure on "))
      return make(kind::md_failure, "md", token_after(body, "Disk failure on "), array, body);
    if (has(body, "read error corrected")) return make(kind::repaired, "md", token_after(body, " on "), array, body);
    if (has(body, "unrecoverable I/O read error") || has(body, "read error not correctable") ||
        has(body, "read error NOT corrected")) {
      // raid1/raid10: "sdg1: unrecoverable I/O read error for block 2048" names the member first;
      // raid5: "read error not correctable (sector 2056 on sdb1)." / "read error NOT corrected!! (...)".
      sv member = token_after(body, " on ");
      auto colon = body.find(": ");
      if (colon != sv::npos && colon > 0 && body.substr(0, colon).find(' ') == sv::npos) member = body.substr(0, colon);
      return make(kind::unrepairable, "md", member, array, body);
    }
    // raid4/5/6 report the member that leaves too few as "Cannot continue operation (2/3 failed)."
    // instead of "Disk failure on": the array is the device. raid1/raid10 print it as the second line
    // of "Disk failure on sdb1, this is the last device.": the same event, not counted again.
    if (starts(body, "Cannot continue operation"))
      return starts(msg, "md/raid:") ? std::optional<Event>(make(kind::md_failure, "md", {}, array, body)) : std::nullopt;
    if (has(body, "mismatch")) return make(kind::md_mismatch, "md", {}, array, body);
    return std::nullopt;
  }
  return std::nullopt;
}

// The kernel does not log md mismatch counts (they are in /sys/block/mdX/md/mismatch_cnt); mdadm
// --monitor reports them to syslog after a check: "RebuildFinished event detected on md device
// /dev/md0, component device  mismatches found: 12 (on raid level 1)". Only seen when classifying
// syslog text, never on the kernel transport.
std::optional<Event> mdadm(sv msg) {
  if (!starts(msg, "RebuildFinished event detected on md device ")) return std::nullopt;
  sv n = token_after(msg, "mismatches found: ");
  if (n.empty() || n == "0") return std::nullopt;
  return make(kind::md_mismatch, "md", {}, token_after(msg, "on md device "), msg.substr(msg.find("mismatches")));
}

// Block layer (blk_print_req_error): "<status> error, dev sdd, sector 1378595728 op 0x0:(READ) flags ...",
// prefixed "blk_update_request: " (5.4-5.15) or "print_req_error: " (older). The status is the name
// in block/blk-core.c's blk_errors table; new names keep appearing (device offline, duration limit
// exceeded ...), so every status is an I/O error except the ones that are no data error at all.
std::optional<Event> block(sv msg) {
  // The status and an optional caller name fit in 64 bytes: only that much of an unrelated line is read.
  auto at = msg.substr(0, 76).find(" error, dev ");
  if (at == sv::npos) return std::nullopt;
  sv status = msg.substr(0, at);
  if (auto c = status.find(": "); c != sv::npos) {
    for (char ch : status.substr(0, c))
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'))
        return std::nullopt;
    status.remove_prefix(c + 2);
  }
  if (status.empty()) return std::nullopt;
  for (char ch : status)
    if (!((ch >= 'a' && ch <= 'z') || ch == ' ' || ch == 'I' || ch == 'O' || ch == '/')) return std::nullopt;
  sv dev = token_after(msg.substr(at), ", dev ");
  sv rest = msg.substr(at + 12 + dev.size());
  if (starts(rest, ", ")) rest.remove_prefix(2);
  if (dev.empty() || !starts(rest, "sector ")) return std::nullopt;
  // Not a failed read or write of data: a refused discard, another host's reservation, memory or
  // zone limits, a malformed or non-blocking request.
  static constexpr sv not_data[] = {"operation not supported", "reservation conflict", "kernel resource",
                                    "device resource",         "nonblocking retry",    "open zones exceeded",
                                    "active zones exceeded",   "invalid",              "dm internal retry"};
  for (sv n : not_data)
    if (status == n) return std::nullopt;
  return make(kind::io, "block", dev, dev, rest);
}

std::optional<Event> zfs(sv msg) {
  // Old ZFS-on-Linux console events: "zio pool=tank vdev=/dev/sdb1 error=52 type=1 offset=... size=..."
  // (error 52 = EBADE, which ZFS uses as ECKSUM).
  if (starts(msg, "zio pool=")) {
    sv err = token_after(msg, " error=");
    return make(err == "52" ? kind::checksum : kind::io, "zfs", token_after(msg, " vdev="),
                token_after(msg, "zio pool="), msg.substr(4));
  }
  // ZED's all-syslog.sh (syslog, not the kernel): "zed: eid=78683 class=checksum pool_guid=0x...
  // vdev_path=/dev/disk/by-id/...". Newer ZED: "pool='tank' vdev=sdb1".
  if (starts(msg, "zed: ") || starts(msg, "eid=")) {
    sv cls = token_after(msg, "class=");
    sv k;
    if (cls == "checksum") k = kind::checksum;
    else if (cls == "io") k = kind::io;
    else if (cls == "data") k = kind::unrepairable;
    else return std::nullopt;
    sv dev = token_after(msg, "vdev_path=");
    if (dev.empty()) dev = token_after(msg, "vdev=");
    sv pool = token_after(msg, "pool=");
    if (pool.empty()) pool = token_after(msg, "pool_guid=");
    if (pool.size() >= 2 && pool.front() == '\'' && pool.back() == '\'') pool = pool.substr(1, pool.size() - 2);
    if (starts(msg, "zed: ")) msg.remove_prefix(5);
    return make(k, "zfs", dev, pool, msg);
  }
  // "WARNING: Pool 'tank' has encountered an uncorrectable I/O failure and has been suspended."
  if (starts(msg, "WARNING: Pool '") && has(msg, "has been suspended")) {
    sv p = msg.substr(15);
    sv pool = p.substr(0, p.find('\''));
    return make(kind::shutdown, "zfs", pool, pool, msg.substr(9));
  }
  return std::nullopt;
}

}  // namespace

std::string device_label(std::string_view token) {
  if (token.substr(0, 5) == "/dev/" && token.find('/', 5) == std::string_view::npos) token.remove_prefix(5);
  return std::string(token);
}

std::optional<Event> classify(std::string_view msg) {
  while (!msg.empty() && (msg.front() == ' ' || msg.front() == '\t')) msg.remove_prefix(1);
  if (msg.size() < 8) return std::nullopt;
  switch (msg.front()) {  // cheap prefilter: almost every line stops here or at the first prefix check
    case 'B':
      return starts(msg, "BTRFS") ? btrfs(msg) : std::nullopt;
    case 'X':
      return starts(msg, "XFS (") ? xfs(msg) : std::nullopt;
    case 'E':
      return starts(msg, "EXT4-fs ") ? ext4(msg) : std::nullopt;
    case 'm':
      return msg[1] == 'd' && msg[2] == '/' ? md(msg) : block(msg);
    case 'z': case 'e': case 'W':
      if (auto e = zfs(msg)) return e;
      return block(msg);
    case 'R':
      return mdadm(msg);
    default:
      // The block layer's status names start with a letter ("I/O", "critical medium", "device offline").
      return (msg.front() >= 'a' && msg.front() <= 'z') || msg.front() == 'I' ? block(msg) : std::nullopt;
  }
}

std::string_view strip_log_prefix(std::string_view line) {
  // syslog: "Apr 24 16:12:04 nexus3 kernel: msg" (also "zed: msg" is kept with its "zed: " tag)
  if (line.size() > 16 && line[3] == ' ' && line[6] == ' ' && line[9] == ':' && line[12] == ':') {
    auto k = line.find(" kernel: ");
    if (k != std::string_view::npos) {
      line.remove_prefix(k + 9);
    } else {
      auto host_end = line.find(' ', 16);
      if (host_end != std::string_view::npos) line.remove_prefix(host_end + 1);
    }
  }
  // RFC 3339 (rsyslog's default file format, journalctl -o short-iso): "2026-12-04T18:58:59.123456+00:00
  // host kernel: msg".
  if (line.size() > 20 && line[4] == '-' && line[7] == '-' && line[10] == 'T') {
    auto k = line.find(" kernel: ");
    if (k != std::string_view::npos && k < 96) line.remove_prefix(k + 9);
  }
  // dmesg: "[ 6827.513630] msg"; journalctl -o short-monotonic: "[ 6827.513630] host kernel: msg".
  if (!line.empty() && line.front() == '[') {
    auto e = line.find("] ");
    if (e != std::string_view::npos && e < 20) {
      line.remove_prefix(e + 2);
      auto k = line.find(" kernel: ");
      if (k != std::string_view::npos && k < 64 && line.substr(0, k).find(' ') == std::string_view::npos)
        line.remove_prefix(k + 9);
    }
  }
  return line;
}

}  // namespace fsaudit::kernel_log
