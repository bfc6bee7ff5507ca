#include "probes/ext4/probe.hpp"

#include <cstring>
#include <filesystem>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "probes/ext4/block_name.hpp"

namespace fsaudit::ext4 {

namespace fs = std::filesystem;

namespace {

const char* const kFiles[] = {"errors_count",       "first_error_time",  "first_error_func",  "first_error_line",
                              "first_error_ino",    "first_error_block", "first_error_errcode", "last_error_time",
                              "last_error_func",    "last_error_line",   "last_error_ino",    "last_error_block",
                              "last_error_errcode", "warning_count",     "msg_count"};

// A file that is there must hold what the kernel prints ("%u\n", "%lld\n"): anything else is junk
// or a cut read, reported rather than taken as 0.
Result<std::optional<ErrorRecord>> record(const std::map<std::string, std::string>& f, const std::string& which) {
  auto get = [&](const std::string& k) -> std::optional<std::string_view> {
    auto it = f.find(which + "_error_" + k);
    if (it == f.end()) return std::nullopt;
    return trim(it->second);
  };
  std::string bad;
  auto num = [&](const std::string& k, auto parse, auto& dst) {
    auto v = get(k);
    if (!v || !bad.empty()) return;
    if (auto n = parse(*v)) dst = *n;
    else bad = which + "_error_" + k + " is '" + std::string(v->substr(0, 40)) + "', not a number";
  };
  if (!get("time")) return std::optional<ErrorRecord>();
  ErrorRecord r;
  num("time", parse_i64, r.time);
  if (auto v = get("func")) r.function = std::string(*v);
  num("line", parse_u64, r.line);
  num("ino", parse_u64, r.inode);
  num("block", parse_u64, r.block);
  num("errcode", parse_i64, r.errcode);
  if (!bad.empty()) return err("ext4 sysfs: " + bad);
  return std::optional<ErrorRecord>(std::move(r));
}

}  // namespace

std::string errno_name(std::int64_t code) {
  // ext4 stores its own codes, not errno values (fs/ext4/ext4.h EXT4_ERR_*, ext4_errno_to_code()).
  static const char* const names[] = {"",      "UNKNOWN", "EIO",    "ENOMEM",    "EFSBADCRC", "EFSCORRUPTED",
                                      "ENOSPC", "ENOKEY", "EROFS",  "EFBIG",     "EEXIST",    "ERANGE",
                                      "EOVERFLOW", "EBUSY", "ENOTDIR", "ENOTEMPTY", "ESHUTDOWN", "EFAULT"};
  if (code >= 0 && code < static_cast<std::int64_t>(sizeof(names) / sizeof(names[0]))) return names[code];
  return std::to_string(code);
}

Result<ErrorState> parse_ext4_sysfs(const std::map<std::string, std::string>& f) {
  auto it = f.find("errors_count");
  if (it == f.end()) return err("ext4 sysfs: no errors_count file (kernel too old?)");
  auto n = parse_u64(trim(it->second));
  if (!n) return err("ext4 sysfs: errors_count is '" + std::string(trim(it->second)) + "', not a number");
  ErrorState s;
  s.errors_count = *n;
  for (auto [which, dst] : {std::pair{"first", &s.first}, std::pair{"last", &s.last}}) {
    auto r = record(f, which);
    if (!r) return err(r.error());
    *dst = std::move(*r);
  }
  for (auto [name, dst] : {std::pair{"warning_count", &s.warning_count}, std::pair{"msg_count", &s.msg_count}}) {
    auto it = f.find(name);
    if (it == f.end()) continue;
    *dst = parse_u64(trim(it->second));
    if (!*dst) return err("ext4 sysfs: " + std::string(name) + " is '" + std::string(trim(it->second)) + "', not a number");
  }
  return s;
}

std::map<std::string, std::string> read_ext4_sysfs_files(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto* name : kFiles) {
    auto r = read_file(dir / name, 4096);
    if (r) out[name] = *r;
  }
  return out;
}

metrics::Batch ext4_metrics(const Target& t, const std::string& device, const ErrorState& s) {
  metrics::Batch b;
  metrics::Labels l{{"target", t.name}, {"device", device}};
  b.gauge("fsaudit_ext4_errors",
          "ext4 errors recorded in the superblock (errors_count) since the last e2fsck cleared them; any value > 0 "
          "means the kernel found corrupted metadata or failed I/O.",
          l, static_cast<double>(s.errors_count));
  for (const auto& [which, rec] : {std::pair{"first", s.first}, std::pair{"last", s.last}}) {
    if (!rec || rec->time == 0) continue;
    b.gauge(std::string("fsaudit_ext4_") + which + "_error_timestamp_seconds",
            std::string("Time of the ") + which + " ext4 error recorded in the superblock (Unix time).", l,
            static_cast<double>(rec->time));
    b.info("fsaudit_ext4_error_info",
           "Where the first/last recorded ext4 error happened (value 1): kernel function, source line, inode, "
           "block, errno.",
           {{"target", t.name},
            {"device", device},
            {"which", which},
            {"function", rec->function},
            {"line", std::to_string(rec->line)},
            {"inode", std::to_string(rec->inode)},
            {"block", std::to_string(rec->block)},
            {"errcode", errno_name(rec->errcode)}});
  }
  if (s.warning_count)
    b.gauge("fsaudit_ext4_warnings", "ext4 warnings logged since mount (warning_count).", l,
            static_cast<double>(*s.warning_count));
  return b;
}

}  // namespace fsaudit::ext4

namespace fsaudit::probes {

namespace {

class Ext4Probe final : public Probe {
 public:
  std::string name() const override { return "ext4"; }
  bool batched() const override { return true; }  // sysfs reads only
  bool applies_to(const Target& t) const override { return t.fstype == "ext4" || t.fstype == "ext3" || t.fstype == "ext2"; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    try {
      auto dev = ext4::sysfs_fs_dir_name(ctx.host, t, "ext4");
      if (dev.empty()) {
        std::string tried;
        for (const auto& n : ext4::block_name_candidates(ctx.host, t)) tried += (tried.empty() ? "" : ", ") + n;
        return ProbeResult::failed("no " + ctx.host.sys("fs/ext4").string() + "/<dev> directory for " + t.mountpoint +
                                   " (tried: " + tried + ")");
      }
      auto s = ext4::parse_ext4_sysfs(ext4::read_ext4_sysfs_files(ctx.host.sys("fs/ext4") / dev));
      if (!s) return ProbeResult::failed(s.error());
      return ProbeResult::ok(ext4::ext4_metrics(t, dev, *s));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("ext4 probe: ") + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Probe> make_ext4_probe(const config::Config&) { return std::make_unique<Ext4Probe>(); }

}  // namespace fsaudit::probes
