// Every storage-error format string of the kernel (probes/kernel_log/kernel_formats.tsv) is expanded
// with plausible values, given the prefix the kernel adds and the prefixes of the logs it reaches us
// through (dmesg, syslog, RFC 3339, journalctl, /dev/kmsg records), and must come out of the
// classifier as the row says: kind, device, filesystem device and a target on a fake host, or nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "daemon/core/strings.hpp"
#include "probes/kernel_log/attribution.hpp"
#include "probes/kernel_log/classify.hpp"
#include "probes/kernel_log/kmsg_record.hpp"
#include "tests/support/support.hpp"

namespace fsaudit::kernel_log {
namespace {

namespace fs = std::filesystem;

struct Row {
  int line = 0;
  std::string source, versions, function, format, expect;
  std::vector<std::string> args;
};

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    auto e = s.find(sep, pos);
    out.emplace_back(s.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos));
    if (e == std::string_view::npos) return out;
    pos = e + 1;
  }
}

std::vector<Row> rows() {
  std::ifstream in(FSAUDIT_KERNEL_FORMATS);
  EXPECT_TRUE(in.good()) << FSAUDIT_KERNEL_FORMATS;
  std::vector<Row> out;
  std::string l;
  int n = 0;
  while (std::getline(in, l)) {
    ++n;
    if (l.empty() || l[0] == '#') continue;
    auto f = split(l, '\t');
    EXPECT_EQ(f.size(), 6u) << "line " << n << ": " << l;
    if (f.size() != 6) continue;
    Row r{n, f[0], f[1], f[2], f[3], f[5], {}};
    if (f[4] != "-")
      for (auto& a : split(f[4], '|')) r.args.push_back(a);
    out.push_back(std::move(r));
  }
  return out;
}

// The printf value a conversion gets when the row gives none: what such a field looks like in a log.
std::string default_value(const std::string& conv) {
  const char c = conv.back();
  if (conv.find('p') != std::string::npos) {
    auto ext = conv.substr(conv.find('p') + 1);
    if (ext.starts_with("S") || ext.starts_with("s") || ext.starts_with("B")) return "xfs_trans_read_buf_map+0x1a1/0x300 [xfs]";
    if (ext.starts_with("U")) return "aa2bb02b-ba70-4a50-a70d-351bb659512f";
    if (ext.starts_with("g")) return "sdd1";
    if (ext.starts_with("d")) return "report 2024.txt";
    if (ext.starts_with("V")) return "invalid key order";
    if (ext.starts_with("h")) return "98f94189";
    return "00000000deadbeef";
  }
  switch (c) {
    case 'd': case 'i': return conv.find("ll") != std::string::npos ? "5" : "2";
    case 'u': return conv.find('l') != std::string::npos || conv.find('z') != std::string::npos ? "30408704" : "1";
    case 'x': case 'X': return conv.find('#') != std::string::npos ? "0x1d00" : "1d00";
    case 'c': return "A";
    case 's': return "value";
  }
  return "?";
}

// printf-style expansion: every conversion (flags, width, precision, length, %p extensions) takes
// the next row value, or its default.
std::string expand(const Row& r, std::size_t* used) {
  std::string out;
  const std::string& f = r.format;
  std::size_t arg = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '%') {
      out.push_back('%');
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < f.size() && std::string_view("-#0 +*.0123456789").find(f[j]) != std::string_view::npos) ++j;
    while (j < f.size() && std::string_view("hlzt").find(f[j]) != std::string_view::npos) ++j;
    if (j >= f.size()) break;
    if (f[j] == 'p')
      while (j + 1 < f.size() && std::isalpha(static_cast<unsigned char>(f[j + 1]))) ++j;
    std::string conv = f.substr(i, j - i + 1);
    std::string v = arg < r.args.size() && !r.args[arg].empty() ? r.args[arg] : default_value(conv);
    ++arg;
    out += v;
    i = j;
  }
  *used = arg;
  return out;
}

std::string btrfs_level(const std::string& fn) {
  static const std::pair<const char*, const char*> m[] = {{"btrfs_emerg", "emergency"}, {"btrfs_alert", "alert"},
                                                         {"btrfs_crit", "critical"},   {"btrfs_err", "error"},
                                                         {"btrfs_warn", "warning"},    {"btrfs_notice", "notice"},
                                                         {"btrfs_info", "info"}};
  for (auto [k, v] : m)
    if (fn.starts_with(k)) return v;
  ADD_FAILURE() << "unknown btrfs function " << fn;
  return "error";
}

// The messages the kernel prints for one expanded format: one per prefix form it has used.
std::vector<std::string> messages(const Row& r, const std::string& body) {
  if (r.function.starts_with("btrfs_")) {
    const std::string lvl = btrfs_level(r.function);
    return {"BTRFS " + lvl + " (device sdb1): " + body,            // no state, every version
            "BTRFS " + lvl + " (device sdb1: state A): " + body,   // state suffix, 5.15 to 6.8
            "BTRFS " + lvl + " (device sdb1 state EA): " + body};  // state suffix, 6.9 on
  }
  if (r.function.starts_with("xfs_")) return {"XFS (sdb1): " + body};
  if (r.function == "ext4_msg") return {"EXT4-fs (sdb1): " + body};
  return {body};
}

// The line forms a message reaches the classifier in: raw, dmesg, syslog, RFC 3339, journalctl.
std::vector<std::string> wrapped(const std::string& msg) {
  return {msg,
          "[ 6827.513630] " + msg,
          "Dec  4 18:58:59 nexus3 kernel: " + msg,
          "Dec  4 18:58:59 nexus3 kernel: [ 6827.513630] " + msg,
          "Dec 04 18:58:59.123456 nexus3 kernel: " + msg,
          "2026-12-04T18:58:59.123456+00:00 nexus3 kernel: " + msg,
          "2026-12-04T18:58:59+0000 nexus3 kernel: " + msg,
          "[ 6827.513630] nexus3 kernel: " + msg};
}

std::string describe(const std::optional<Event>& e) {
  return e ? std::string(e->kind) + " " + e->device + " " + e->fs_device : "ignored";
}

// sdb1 is btrfs (second member sde1) on /srv/fs — the fs device of the btrfs/xfs/ext4 rows; md0
// (member sdd1) on /srv/md; the disk sdc has one mounted partition, sdc1 on /srv/blk.
struct FakeHost {
  testing::TempDir root{"fsaudit-kl-formats"};
  FakeHost() {
    testing::write_text(root / "proc/self/mountinfo",
                        "30 1 0:60 / /srv/fs rw - btrfs /dev/sdb1 rw\n"
                        "31 1 9:0 / /srv/md rw - ext4 /dev/md0 rw\n"
                        "32 1 8:33 / /srv/blk rw - xfs /dev/sdc1 rw\n");
    fs::create_directories(root / "sys/fs/btrfs/aa2bb02b/devices/sdb1");
    fs::create_directories(root / "sys/fs/btrfs/aa2bb02b/devices/sde1");
    fs::create_directories(root / "sys/class/block/sdd1/holders/md0");
    fs::create_directories(root / "sys/block/sdc/sdc1");
  }
};

const std::map<std::string, std::string> kTargetOf = {{"sdb1", "/srv/fs"}, {"md0", "/srv/md"}, {"sdc", "/srv/blk"}};

TEST(KernelFormats, EveryStorageErrorFormatIsClassifiedAttributedOrIgnored) {
  FakeHost host;
  TargetResolver resolver(HostPaths::under(host.root.path()));
  const auto all = rows();
  ASSERT_GT(all.size(), 100u);
  std::set<std::string> seen;
  std::map<std::string, std::pair<int, int>> per_source;  // source -> classified, ignored
  std::map<std::string, int> per_version;
  static const std::vector<std::string> versions = {"5.4", "5.10", "5.15", "6.1", "6.6", "6.12", "6.18"};
  for (const auto& r : all) {
    SCOPED_TRACE("kernel_formats.tsv line " + std::to_string(r.line) + ": " + r.format);
    std::string key = r.source + '\t' + r.versions + '\t' + r.function + '\t' + r.format;
    for (const auto& a : r.args) key += '|' + a;
    EXPECT_TRUE(seen.insert(key).second) << "duplicate row";
    std::size_t used = 0;
    const std::string body = expand(r, &used);
    EXPECT_LE(r.args.size(), used) << "more values than conversions";
    const bool ignored = r.expect.starts_with("ignored: ");
    if (ignored) {
      EXPECT_GT(r.expect.size(), 12u) << "an ignored row names its reason";
    } else {
      auto w = split(r.expect, ' ');
      ASSERT_EQ(w.size(), 3u) << "expect is '<kind> <device> <fs_device>': " << r.expect;
      ASSERT_TRUE(kTargetOf.count(w[2])) << "no fake-host target for " << w[2];
    }
    auto& c = per_source[r.source];
    (ignored ? c.second : c.first) += 1;
    // "5.4-6.2" or "6.18": count the row for every listed release in range.
    auto dash = r.versions.find('-');
    std::string lo = r.versions.substr(0, dash), hi = dash == std::string::npos ? lo : r.versions.substr(dash + 1);
    auto ilo = std::find(versions.begin(), versions.end(), lo), ihi = std::find(versions.begin(), versions.end(), hi);
    if (ilo == versions.end() || ihi == versions.end()) {
      // A range may start or end between listed releases (5.16, 6.3): take the listed ones inside.
      auto num = [](const std::string& v) { return std::stod(v.substr(0, v.find('.'))) * 100 + std::stod(v.substr(v.find('.') + 1)); };
      for (const auto& v : versions)
        if (num(v) >= num(lo) && num(v) <= num(hi)) per_version[v]++;
    } else {
      for (auto it = ilo; it <= ihi; ++it) per_version[*it]++;
    }

    for (const auto& msg : messages(r, body)) {
      for (const auto& line : wrapped(msg)) {
        auto e = classify(strip_log_prefix(line));
        if (ignored) {
          EXPECT_FALSE(e) << line << "\n  classified as " << describe(e);
          continue;
        }
        EXPECT_EQ(describe(e), r.expect) << line;
        if (!e) continue;
        std::string want_target = kTargetOf.at(split(r.expect, ' ')[2]);
        EXPECT_EQ(resolver.target_of(*e), want_target) << line;
      }
      // The same message as a /dev/kmsg record (facility kernel, level 3).
      auto rec = parse_kmsg_record("3,4711,6827513630,-;" + msg + "\n");
      ASSERT_TRUE(rec) << msg;
      EXPECT_EQ(describe(classify(rec->message)), ignored ? "ignored" : r.expect) << msg;
    }
  }
  // The coverage, printed for probes/kernel_log/README.md.
  std::ostringstream o;
  o << "kernel_formats.tsv: " << all.size() << " rows\n";
  for (const auto& [src, c] : per_source) o << "  " << src << ": " << c.first << " classified, " << c.second << " ignored\n";
  for (const auto& v : versions) o << "  Linux " << v << ": " << per_version[v] << " rows\n";
  std::cout << o.str();
}

}  // namespace
}  // namespace fsaudit::kernel_log
