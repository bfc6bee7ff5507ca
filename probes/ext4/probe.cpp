#include "probes/ext4/probe.hpp"

#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "daemon/config/config.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/probe/same_as_last.hpp"
#include "probes/ext4/block_name.hpp"

namespace fsaudit::ext4 {

namespace fs = std::filesystem;

namespace {

const char* const kFiles[] = {"errors_count",       "first_error_time",  "first_error_func",  "first_error_line",
                              "first_error_ino",    "first_error_block", "first_error_errcode", "last_error_time",
                              "last_error_func",    "last_error_line",   "last_error_ino",    "last_error_block",
                              "last_error_errcode", "warning_count",     "msg_count"};

}  // namespace

// A healthy filesystem has first/last_error_time 0 and nothing else to say: the five counters and
// times are read always, the ten detail files of a record only when its time is set (a third of the
// reads per ext4 per interval; the parser treats a record of time 0 alike either way).
Result<std::map<std::string, std::string>> read_ext4_sysfs_files(const fs::path& dir, const AttributeReader& read) {
  std::map<std::string, std::string> out;
  for (const auto* name : kFiles) {
    std::string_view n(name);
    const bool detail = (n.starts_with("first_error_") || n.starts_with("last_error_")) && !n.ends_with("_time");
    if (detail) {
      auto t = out.find(std::string(n.substr(0, n.find("_error_"))) + "_error_time");
      if (t == out.end() || trim(t->second) == "0") continue;
    }
    auto r = read(dir / name);
    if (r.unreadable()) return err("ext4 sysfs: " + r.reason());
    if (r.ok()) out[name] = std::move(r.text);
  }
  return out;
}

Result<std::optional<bool>> read_ext4_shutdown(const fs::path& options_file, const AttributeReader& read) {
  auto r = read(options_file);
  if (r.absent()) return std::optional<bool>();
  if (!r.ok()) return err("ext4: " + r.reason());
  auto s = parse_ext4_options_shutdown(r.text);
  if (!s) return err(options_file.string() + ": " + s.error());
  return std::optional<bool>(*s);
}

metrics::Batch ext4_metrics(const Target& t, const std::string& device, const ErrorState& s, bool warning_series) {
  metrics::Batch b;
  metrics::Labels l{{"target", t.name}, {"device", device}};
  b.gauge("fsaudit_ext4_errors",
          "ext4 errors recorded in the superblock (errors_count) since the last e2fsck cleared them; any value > 0 "
          "means the kernel found corrupted metadata or failed I/O.",
          l, static_cast<double>(s.errors_count));
  if (s.errors_count > 0)
    b.status.fs(t.name).problems.push_back({metrics::Severity::critical,
                                            "ext4 recorded " + std::to_string(s.errors_count) +
                                                " error(s) in its superblock on " + device + " (run e2fsck)",
                                            "FsauditExt4ErrorsRecorded"});
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
  if (s.shutdown)
    b.gauge("fsaudit_ext4_shutdown",
            "1 if the ext4 filesystem has been shut down (EXT4_IOC_SHUTDOWN; the shutdown option in "
            "/proc/fs/ext4/<dev>/options): every read and write fails with EIO until it is unmounted.",
            l, *s.shutdown ? 1 : 0);
  if (warning_series && s.warning_count)
    b.gauge("fsaudit_ext4_warnings", "ext4 warnings logged since mount (warning_count).", l,
            static_cast<double>(*s.warning_count));
  return b;
}


namespace {

class Ext4Probe final : public Probe {
 public:
  explicit Ext4Probe(bool warning_series) : warning_series_(warning_series) {}
  std::string name() const override { return "ext4"; }
  bool batched() const override { return true; }  // sysfs reads only
  bool applies_to(const Target& t) const override { return t.fstype == "ext4" || t.fstype == "ext3" || t.fstype == "ext2"; }
  ProbeResult run(const Target& t, ProbeContext& ctx) override {
    try {
      const auto base = ctx.host.sys("fs/ext4");
      std::string dev = known_dir(t);
      auto count = dev.empty() ? Result<std::string>(err("")) : read_sysfs_attribute(base / dev / "errors_count", 4096);
      if (!count) {  // not known yet, or the directory went away (remounted elsewhere): look it up
        dev = ext4::sysfs_fs_dir_name(ctx.host, t, "ext4");
        if (dev.empty()) {
          std::string tried;
          for (const auto& n : ext4::block_name_candidates(ctx.host, t)) tried += (tried.empty() ? "" : ", ") + n;
          return ProbeResult::failed("no " + base.string() + "/<dev> directory for " + t.mountpoint + " (tried: " +
                                     tried + ")");
        }
        remember_dir(t, dev);
        count = read_sysfs_attribute(base / dev / "errors_count", 4096);
      }
      // Shut down is not an error the kernel counts: the options file is read every run.
      // A procfs seq_file: read to its end, not taken whole from the first read as a sysfs attribute.
      static const AttributeReader proc_reader = [](const fs::path& p) { return read_attribute(p, 64 << 10, true); };
      auto shutdown = ext4::read_ext4_shutdown(ctx.host.proc("fs/ext4") / dev / "options", proc_reader);
      if (!shutdown) return ProbeResult::failed(shutdown.error());
      // The kernel sets the first/last error records only when it adds to errors_count: while the
      // count and warning_count read as last time, nothing the metrics show has changed, and the other
      // files are not read (three files per filesystem per interval instead of six or more).
      if (count) {
        auto warnings = read_attribute(base / dev / "warning_count", 4096);
        if (!warnings.unreadable()) {
          Fingerprint fp;
          fp.add(t.name).add(dev).add(*count).add(warnings.ok() ? std::string_view(warnings.text) : std::string_view("-"));
          fp.add(*shutdown ? (**shutdown ? "shutdown" : "up") : "-");
          if (last_.same(t.name, fp.value(), ctx)) return ProbeResult::same_as_last();
        }
      }
      auto files = ext4::read_ext4_sysfs_files(base / dev);
      if (!files) return ProbeResult::failed(files.error());
      auto s = ext4::parse_ext4_sysfs(*files);
      if (!s) return ProbeResult::failed(s.error());
      s->shutdown = *shutdown;
      return ProbeResult::ok(ext4::ext4_metrics(t, dev, *s, warning_series_));
    } catch (const std::exception& e) {
      return ProbeResult::failed(std::string("ext4 probe: ") + e.what());
    }
  }

 private:
  // The sysfs directory name of a target's device, by device number and source: one readlink and a
  // stat per run saved; a directory that is gone is looked up again.
  static std::string dir_key(const Target& t) {
    return std::to_string(t.dev_major) + ":" + std::to_string(t.dev_minor) + " " + t.source;
  }
  std::string known_dir(const Target& t) const {
    std::lock_guard l(mu_);
    auto it = dirs_.find(dir_key(t));
    return it == dirs_.end() ? std::string() : it->second;
  }
  void remember_dir(const Target& t, const std::string& dev) {
    std::lock_guard l(mu_);
    if (dirs_.size() >= 65536) dirs_.clear();  // bounded; refilled as targets run
    dirs_[dir_key(t)] = dev;
  }

  const bool warning_series_;
  LastPublished last_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::string> dirs_;
};

}  // namespace

std::unique_ptr<Probe> make_ext4_probe(const config::Config& c) {
  return std::make_unique<Ext4Probe>(c.ext4.warning_series());
}

}  // namespace fsaudit::ext4
