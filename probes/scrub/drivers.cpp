#include "probes/scrub/drivers.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/scrub/parsers.hpp"
#include "probes/zfs/scan.hpp"

namespace fsaudit::scrub {
namespace fs = std::filesystem;

namespace {

std::chrono::milliseconds cmd_timeout(DriverEnv& env, std::chrono::milliseconds cap = std::chrono::seconds(15)) {
  auto r = env.ctx.remaining();
  if (r < std::chrono::milliseconds(500)) r = std::chrono::milliseconds(500);
  return std::min(r, cap);
}

CommandResult run(DriverEnv& env, std::vector<std::string> argv) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = cmd_timeout(env);
  spec.max_output = 1 << 20;
  return env.ctx.runner.run(spec, env.ctx.stop);
}

std::string cmdline(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::optional<std::string> read_trim(const fs::path& p) {
  auto r = read_file(p);
  if (!r) return std::nullopt;
  return std::string(trim(*r));
}

// Kills the detached job's process group (the watcher survives and records the signal).
Result<void> kill_job(DriverEnv& env, TargetState& st) {
  if (st.job_pid <= 0) return err("no scrub process recorded to stop");
  auto r = run(env, {"kill", "-TERM", "--", "-" + std::to_string(st.job_pid)});
  if (!r.ok()) return err("kill -TERM -" + std::to_string(st.job_pid) + ": " + r.describe());
  return {};
}

// ---------------------------------------------------------------------------------------------
class ZfsDriver final : public Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    (void)st;
    auto r = run(env, {env.ctx.tool("zpool"), "status", t.pool});
    if (!r.ok()) return err("zpool status " + t.pool + ": " + r.describe());
    Observation o = observation_from_zpool_status(r.out);
    {
      if (o.phase == Phase::idle && o.last_outcome == Outcome::finished) {
        // A finished scrub read every allocated byte: the pool's allocation is the amount scrubbed.
        auto l = run(env, {env.ctx.tool("zpool"), "list", "-H", "-o", "allocated", t.pool});
        if (l.ok()) {
          if (auto b = parse_human_bytes(trim(l.out))) o.bytes = *b;
        }
      }
    }
    return o;
  }

  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    (void)st;
    auto r = run(env, {env.ctx.tool("zpool"), "scrub", t.pool});
    if (!r.ok()) return err("zpool scrub " + t.pool + ": " + r.describe());
    return {};
  }
  bool can_pause(const TargetState& st) const override { return !st.pause_unsupported; }
  Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    auto r = run(env, {env.ctx.tool("zpool"), "scrub", "-p", t.pool});
    if (r.ok()) return {};
    std::string text = to_lower(r.err + r.out);
    if (text.find("invalid option") != std::string::npos || text.find("usage") != std::string::npos) {
      st.pause_unsupported = true;  // zfs-fuse's zpool: feature detected by trying
      return err("this zpool cannot pause a scrub (no 'zpool scrub -p')");
    }
    return err("zpool scrub -p " + t.pool + ": " + r.describe());
  }
  Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) override { return start(t, st, env); }
  Result<void> cancel(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    (void)st;
    auto r = run(env, {env.ctx.tool("zpool"), "scrub", "-s", t.pool});
    if (!r.ok()) return err("zpool scrub -s " + t.pool + ": " + r.describe());
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
class BtrfsDriver final : public Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    // Our job is read before the status: `scrub start -B` writes every device's record before it
    // exits, so a status read after seeing the job alive or finished is never older than the job.
    // (Read the other way round, the job could exit in between and a pending-record status would
    // pass for the final one.)
    JobStatus job;
    if (!st.job_dir.empty()) job = read_job(env.ctx.host, st.job_dir, st.job_pid);
    auto r = run(env, {env.ctx.tool("btrfs"), "scrub", "status", "-R", t.mountpoint});
    if (!r.ok()) {
      // btrfs-progs missing or failing: the status file btrfs-progs keeps still tells the last scrub.
      if (auto o = from_status_file(t, env)) return *o;
      return err("btrfs scrub status -R " + t.mountpoint + ": " + r.describe());
    }
    auto parsed = btrfs::parse_scrub_status(r.out);
    if (!parsed) return err("btrfs scrub status -R " + t.mountpoint + ": " + parsed.error());
    const auto& s = parsed->total;
    Observation o = observation_from_btrfs(s);
    // Our own `scrub start -B` still running: btrfs-progs says "no stats available" until its first
    // progress update (several seconds in), so the job's liveness decides.
    // Only when btrfs has nothing newer than the job to say: a canceled ("aborted") scrub of this
    // job is reported as such even if the -B process has not exited yet.
    bool status_predates_job = s.state == btrfs::ScrubState::never || s.state == btrfs::ScrubState::unknown;
    // btrfs-progs records each device's result as that device finishes. On a multi-device
    // filesystem, once the kernel is done but before our `scrub start -B` has written the last
    // device's record, status says "interrupted" with only the first devices' counts (seen here:
    // raid1, the clean device's record alone, 0 errors). While our job lives that is not an end.
    bool records_pending = s.state == btrfs::ScrubState::interrupted;
    if (!st.job_dir.empty() && o.phase != Phase::running) {
      if (!status_predates_job && o.started && job.start > 0 && *o.started < job.start - 2) status_predates_job = true;
      if (job.alive && (status_predates_job || records_pending)) {
        o.phase = Phase::running;
        o.last_outcome = Outcome::none;
        if (!o.started && job.start > 0) o.started = job.start;
        return o;
      }
    }
    // Our own `scrub start -B`: exit 3 means uncorrectable errors even where counters stay 0.
    if (!st.job_dir.empty() && o.phase == Phase::idle) {
      if (job.finished) {
        if (job.exit_code == 3 && o.errors.uncorrectable.value_or(0) == 0) o.errors.uncorrectable = 1;
        if (job.exit_code != 0 && job.exit_code != 3 && o.last_outcome == Outcome::finished) {
          o.last_outcome = Outcome::failed;
          o.detail = "btrfs scrub exited " + std::to_string(job.exit_code) + ": " +
                     std::string(trim(job.output.substr(0, 200)));
        }
        if (job.end > 0 && !o.last_end) o.last_end = job.end;
      }
    }
    // Degraded: a member device is missing.
    if (!parsed->uuid.empty()) {
      std::error_code ec;
      auto devinfo = env.ctx.host.sys("fs/btrfs/" + parsed->uuid + "/devinfo");
      for (auto it = fs::directory_iterator(devinfo, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (read_trim(it->path() / "missing").value_or("0") == "1") o.degraded = true;
    }
    return o;
  }
  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    auto pid = start_detached(env, t, st, {env.ctx.tool("btrfs"), "scrub", "start", "-B", "-R", t.mountpoint});
    if (!pid) return err(pid.error());
    return {};
  }
  bool can_pause(const TargetState&) const override { return true; }  // cancel keeps the position

  std::optional<Observation> from_status_file(const ScrubTarget& t, DriverEnv& env) {
    // The filesystem UUID: /sys/fs/btrfs/<uuid>/devices/<kernel name of the mount source>.
    if (t.source.empty()) return std::nullopt;
    std::string dev = fs::path(t.source).filename().string();
    std::error_code ec;
    for (auto it = fs::directory_iterator(env.ctx.host.sys("fs/btrfs"), ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (!fs::exists(it->path() / "devices" / dev)) continue;
      std::string uuid = it->path().filename().string();
      auto text = read_file(env.ctx.host.rootfs / "var/lib/btrfs" / ("scrub.status." + uuid));
      if (!text) return std::nullopt;
      auto f = btrfs::parse_scrub_status_file(*text);
      if (!f) return std::nullopt;
      auto o = observation_from_btrfs_file(*f, uuid);
      o.detail = "from /var/lib/btrfs/scrub.status." + uuid + " (btrfs scrub status failed)";
      return o;
    }
    return std::nullopt;
  }
  Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env) override { return cancel(t, st, env); }
  Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    auto pid = start_detached(env, t, st, {env.ctx.tool("btrfs"), "scrub", "resume", "-B", "-R", t.mountpoint});
    if (!pid) return err(pid.error());
    return {};
  }
  Result<void> cancel(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    (void)st;
    auto r = run(env, {env.ctx.tool("btrfs"), "scrub", "cancel", t.mountpoint});
    if (!r.ok() && r.exit_code != 2) return err("btrfs scrub cancel " + t.mountpoint + ": " + r.describe());
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// Drivers whose scrub is one long foreground command (xfs_scrub, bcachefs scrub): the detached job
// is the scrub; its output and exit status are the result.
class JobDriver : public Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    Observation o;
    if (!st.unsupported_reason.empty() && env.now - st.unsupported_since < 24 * 3600) {
      o.supported = false;
      o.unsupported_reason = st.unsupported_reason;
      return o;
    }
    std::string tool = find_tool(env.ctx.tool(exe()));
    if (tool.empty()) {
      o.supported = false;
      o.unsupported_reason = exe() + " is not installed";
      return o;
    }
    if (!st.job_dir.empty()) {
      auto job = read_job(env.ctx.host, st.job_dir, st.job_pid);
      if (job.alive) {
        o.phase = Phase::running;
        o.started = job.start > 0 ? std::optional<double>(job.start) : std::nullopt;
        fill_progress(o, job.output);
        return o;
      }
      if (st.running && st.by_us) {
        o.started = job.start > 0 ? std::optional<double>(job.start) : std::nullopt;
        o.last_end = job.end > 0 ? job.end : env.now;
        if (job.finished) {
          o.last_duration = job.end - job.start;
          fill_result(o, job, st, env.now);
        } else {
          o.last_outcome = Outcome::failed;
          o.detail = exe() + " job vanished without a status (daemon host rebooted?)";
        }
        return o;
      }
    }
    if (process_running(env.ctx.host, exe(), t.mountpoint, also_arg())) {
      o.phase = Phase::running;  // somebody else's run
      o.detail = exe() + " started by someone else is running";
    }
    return o;
  }
  Result<void> cancel(const ScrubTarget&, TargetState& st, DriverEnv& env) override { return kill_job(env, st); }

 protected:
  virtual std::string exe() const = 0;
  virtual std::string also_arg() const { return ""; }
  virtual void fill_progress(Observation&, const std::string&) {}
  virtual void fill_result(Observation& o, const JobStatus& job, TargetState& st, double now) = 0;
};

class XfsDriver final : public JobDriver {
 public:
  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    // -b: background mode (one thread, lower priority), like xfs_scrub_all.
    auto pid = start_detached(env, t, st, {find_tool(env.ctx.tool("xfs_scrub")), "-b", t.mountpoint});
    if (!pid) return err(pid.error());
    return {};
  }

 protected:
  std::string exe() const override { return "xfs_scrub"; }
  void fill_result(Observation& o, const JobStatus& job, TargetState& st, double now) override {
    auto r = parse_xfs_scrub(job.output);
    if (r.kernel_unsupported) {
      st.unsupported_reason = "the kernel does not support XFS online scrub";
      st.unsupported_since = now;
      o.last_outcome = Outcome::failed;
      o.detail = st.unsupported_reason;
      return;
    }
    if (job.signal != 0) {
      o.last_outcome = Outcome::canceled;
      o.detail = "xfs_scrub stopped by signal " + std::to_string(job.signal);
      return;
    }
    o.bytes = r.data_found_bytes;
    o.errors.found = r.found();
    o.errors.repaired = r.repairs_made.value_or(0);
    o.errors.uncorrectable = r.uncorrectable();
    if (job.exit_code & 1) o.errors.uncorrectable = std::max<std::uint64_t>(1, *o.errors.uncorrectable);
    if (job.exit_code & 1) o.errors.found = std::max(*o.errors.found, *o.errors.uncorrectable);
    o.last_outcome = (job.exit_code & (4 | 8)) || job.exit_code < 0 ? Outcome::failed : Outcome::finished;
    o.detail = "xfs_scrub exit " + std::to_string(job.exit_code) + ((job.exit_code & 2) ? " (optimisations possible)" : "");
  }
};

class BcachefsDriver final : public JobDriver {
 public:
  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    std::string tool = find_tool(env.ctx.tool("bcachefs"));
    // `bcachefs scrub` from tools 1.33; `bcachefs data scrub` before.
    std::vector<std::string> argv = {tool, "scrub", t.mountpoint};
    auto v = run(env, {tool, "version"});
    auto ver = v.ok() ? parse_bcachefs_version(v.out) : std::nullopt;
    if (ver && (ver->first < 1 || (ver->first == 1 && ver->second < 33))) argv = {tool, "data", "scrub", t.mountpoint};
    auto pid = start_detached(env, t, st, argv);
    if (!pid) return err(pid.error());
    return {};
  }

 protected:
  std::string exe() const override { return "bcachefs"; }
  std::string also_arg() const override { return "scrub"; }
  void fill_progress(Observation& o, const std::string& out) override {
    auto p = parse_bcachefs_scrub(out);
    if (!p || p->total_bytes() <= 0) return;
    o.progress = p->checked_bytes() / p->total_bytes();
    o.bytes = p->checked_bytes();
  }
  void fill_result(Observation& o, const JobStatus& job, TargetState&, double) override {
    auto p = parse_bcachefs_scrub(job.output);
    if (job.signal != 0) {
      o.last_outcome = Outcome::canceled;
      return;
    }
    // Exit bits: 1 interrupted/error, 2 errors corrected, 4 uncorrected errors. Counts are in
    // sectors of 512 bytes in the table; report sectors as the error count.
    std::uint64_t corrected = p ? static_cast<std::uint64_t>(p->corrected_bytes() / 512) : 0;
    std::uint64_t uncorrected = p ? static_cast<std::uint64_t>(p->uncorrected_bytes() / 512) : 0;
    if ((job.exit_code & 2) && corrected == 0) corrected = 1;
    if ((job.exit_code & 4) && uncorrected == 0) uncorrected = 1;
    o.errors.found = corrected + uncorrected;
    o.errors.repaired = corrected;
    o.errors.uncorrectable = uncorrected;
    if (p) o.bytes = p->checked_bytes();
    o.last_outcome = (job.exit_code & 1) || job.exit_code < 0 || job.exit_code > 7 ? Outcome::failed : Outcome::finished;
  }
};

// ---------------------------------------------------------------------------------------------
class MdDriver final : public Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    (void)st;
    auto base = env.ctx.host.sys("block/" + t.md + "/md");
    auto action = read_trim(base / "sync_action");
    if (!action) return err("cannot read " + (base / "sync_action").string());
    Observation o;
    o.detail = "sync_action " + *action;
    if (*action == "check" || *action == "repair") o.phase = Phase::running;
    else if (*action == "resync" || *action == "recover" || *action == "reshape") o.resilvering = true;
    o.degraded = read_trim(base / "degraded").value_or("0") != "0";
    if (auto sc = read_trim(base / "sync_completed")) {
      if (auto p = parse_md_sync_completed(*sc); p && p->second > 0 && o.phase == Phase::running) {
        o.progress = static_cast<double>(p->first) / static_cast<double>(p->second);
        o.bytes = static_cast<double>(p->first) * 512;
      }
    }
    if (o.phase == Phase::idle) {
      if (auto size = read_trim(env.ctx.host.sys("block/" + t.md + "/size")))
        if (auto s = parse_u64(*size)) o.bytes = static_cast<double>(*s) * 512;
      auto last = read_trim(base / "last_sync_action").value_or("");
      if (last == "check" || last == "repair") o.last_outcome = Outcome::finished;
    }
    // mismatch_cnt: sectors found inconsistent by the last check (a repair rewrites them).
    if (auto m = read_trim(base / "mismatch_cnt"); m && parse_u64(*m)) {
      o.errors.found = *parse_u64(*m);
      bool repair = *action == "repair" || read_trim(base / "last_sync_action").value_or("") == "repair";
      o.errors.repaired = repair ? *o.errors.found : 0;
    }
    return o;
  }
  Result<void> start(const ScrubTarget& t, TargetState&, DriverEnv& env) override { return write_action(t, env, "check"); }
  Result<void> cancel(const ScrubTarget& t, TargetState&, DriverEnv& env) override { return write_action(t, env, "idle"); }

 private:
  Result<void> write_action(const ScrubTarget& t, DriverEnv& env, const std::string& what) {
    auto p = env.ctx.host.sys("block/" + t.md + "/md/sync_action");
    std::ofstream f(p);
    if (!f) return err("cannot open " + p.string() + " for writing (needs root)");
    f << what << "\n";
    f.flush();
    if (!f) return err("writing \"" + what + "\" to " + p.string() + " failed");
    return {};
  }
};

}  // namespace


std::string extract_zfs_scan_block(std::string_view zpool_status) {
  std::string block;
  bool in_scan = false;
  for (auto line : lines(zpool_status)) {
    auto l = trim(line);
    if (!in_scan && block.empty() && (l.rfind("scan:", 0) == 0 || l.rfind("scrub:", 0) == 0)) in_scan = true;
    else if (in_scan && (l.rfind("config:", 0) == 0 || l.empty() || l.rfind("errors:", 0) == 0)) break;
    if (in_scan) block += std::string(line) + "\n";
  }
  return block;
}

Observation observation_from_zpool_status(std::string_view text) {
  Observation o;
  for (auto line : lines(text)) {
    auto l = trim(line);
    if (l.rfind("state:", 0) == 0) o.degraded = trim(l.substr(6)) != "ONLINE";
  }
  std::string block = extract_zfs_scan_block(text);
  auto scan = zfs::parse_zfs_scan(block);
  o.detail = std::string(trim(block));
  if (!scan.recognized) o.detail = "unrecognised scan text: " + o.detail;
  bool scrub = scan.function == zfs::ScanFunction::scrub || scan.function == zfs::ScanFunction::error_scrub;
  if (scan.function == zfs::ScanFunction::resilver && scan.state == zfs::ScanState::in_progress) o.resilvering = true;
  if (!scrub) return o;
  if (scan.start_time) o.started = static_cast<double>(*scan.start_time);
  switch (scan.state) {
    case zfs::ScanState::in_progress: o.phase = Phase::running; break;
    case zfs::ScanState::paused: o.phase = Phase::paused; break;
    case zfs::ScanState::finished: o.last_outcome = Outcome::finished; break;
    case zfs::ScanState::canceled: o.last_outcome = Outcome::canceled; break;
    case zfs::ScanState::none: break;
  }
  if (scan.end_time) o.last_end = static_cast<double>(*scan.end_time);
  o.last_duration = scan.duration_seconds;
  if (!o.started && o.last_end && o.last_duration) o.started = *o.last_end - *o.last_duration;
  o.progress = scan.progress_ratio;
  if (o.phase == Phase::running)
    o.rate = scan.issue_rate_bytes_per_second ? scan.issue_rate_bytes_per_second : scan.scan_rate_bytes_per_second;
  o.repaired_bytes = scan.repaired_bytes;
  if (o.phase != Phase::idle) o.bytes = scan.issued_bytes ? scan.issued_bytes : scan.examined_bytes;
  if (scan.errors) {
    // "with N errors" are the errors the scrub could not repair. A count of repaired blocks is not
    // printed (only repaired bytes), so found/repaired counts are known only when nothing was repaired.
    o.errors.uncorrectable = *scan.errors;
    if (scan.repaired_bytes.value_or(0) == 0) {
      o.errors.found = *scan.errors;
      o.errors.repaired = 0;
    }
  }
  return o;
}

Observation observation_from_btrfs(const btrfs::ScrubSection& s) {
  Observation o;
  o.detail = std::string(btrfs::to_string(s.state));
  switch (s.state) {
    case btrfs::ScrubState::running: o.phase = Phase::running; break;
    case btrfs::ScrubState::finished: o.last_outcome = Outcome::finished; break;
    case btrfs::ScrubState::aborted:
    case btrfs::ScrubState::interrupted: o.last_outcome = Outcome::canceled; break;
    case btrfs::ScrubState::never:
    case btrfs::ScrubState::unknown: break;
  }
  if (s.started_epoch) o.started = static_cast<double>(*s.started_epoch);
  o.last_duration = s.duration_seconds;
  if (o.phase == Phase::idle && o.started && o.last_duration && o.last_outcome != Outcome::none)
    o.last_end = *o.started + *o.last_duration;
  o.bytes = s.scrubbed_bytes;
  o.rate = s.rate_bytes_per_second;
  if (o.phase == Phase::running) {
    o.progress = s.progress_ratio;
    if (!o.progress && s.total_bytes && *s.total_bytes > 0 && s.scrubbed_bytes)
      o.progress = std::min(1.0, *s.scrubbed_bytes / *s.total_bytes);
  }
  if (auto v = s.errors_found()) o.errors.found = *v;
  if (auto v = s.corrected_errors()) o.errors.repaired = *v;
  if (auto v = s.uncorrectable_errors()) o.errors.uncorrectable = *v;
  return o;
}

Observation observation_from_btrfs_file(const btrfs::ScrubFile& f, const std::string& fsid) {
  Observation o;
  auto a = f.aggregate(fsid);
  if (!a || a->t_start == 0) return o;
  o.started = static_cast<double>(a->t_start);
  o.last_duration = static_cast<double>(a->duration_seconds);
  // The file does not say "running"; unfinished and not canceled = interrupted or running. Report
  // only ended scrubs from it.
  if (a->finished || a->canceled) {
    o.last_outcome = a->canceled ? Outcome::canceled : Outcome::finished;
    o.last_end = *o.started + *o.last_duration;
  }
  const auto& c = a->counters;
  o.bytes = static_cast<double>(c.data_bytes_scrubbed + c.tree_bytes_scrubbed);
  o.errors.found = c.read_errors + c.csum_errors + c.verify_errors + c.super_errors;
  o.errors.repaired = c.corrected_errors;
  o.errors.uncorrectable = c.uncorrectable_errors;
  return o;
}

Result<void> Driver::pause(const ScrubTarget&, TargetState&, DriverEnv&) { return err("pause is not supported"); }

std::string ScrubTarget::key() const {
  std::string k = fs + "_";
  for (char c : name) k += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  if (name == "/") k += "root";
  return k;
}

std::unique_ptr<Driver> make_driver(const std::string& f) {
  if (f == "zfs") return std::make_unique<ZfsDriver>();
  if (f == "btrfs") return std::make_unique<BtrfsDriver>();
  if (f == "xfs") return std::make_unique<XfsDriver>();
  if (f == "bcachefs") return std::make_unique<BcachefsDriver>();
  if (f == "md") return std::make_unique<MdDriver>();
  return nullptr;
}

std::string find_tool(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string p = std::string(path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") +
                  ":/usr/sbin:/sbin";
  for (auto dir : split(p, ':')) {
    if (dir.empty()) continue;
    std::string cand = std::string(dir) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return "";
}

JobStatus read_job(const HostPaths& host, const fs::path& dir, int pid) {
  JobStatus j;
  if (auto out = read_file(dir / "output", 1 << 20)) j.output = *out;
  if (auto st = read_file(dir / "status")) {
    j.finished = true;
    for (auto line : lines(*st)) {
      auto eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      auto k = line.substr(0, eq);
      auto v = line.substr(eq + 1);
      if (k == "exit") j.exit_code = static_cast<int>(parse_i64(v).value_or(-1));
      else if (k == "signal") j.signal = static_cast<int>(parse_i64(v).value_or(0));
      else if (k == "start") j.start = parse_double(v).value_or(0);
      else if (k == "end") j.end = parse_double(v).value_or(0);
    }
    return j;
  }
  if (pid > 0) {
    // Alive when the watcher's /proc entry exists and still is our helper (pids get reused).
    auto cmd = read_file(host.proc(std::to_string(pid) + "/cmdline"));
    j.alive = cmd && cmd->find("fsaudit-scrub-detach") != std::string::npos;
  }
  struct stat sb;
  if (::stat((dir / "pid").c_str(), &sb) == 0) j.start = static_cast<double>(sb.st_mtim.tv_sec);
  return j;
}

Result<int> start_detached(DriverEnv& env, const ScrubTarget& t, TargetState& st, const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return err("scrub tool not found");
  if (env.detach_helper.empty() || ::access(env.detach_helper.c_str(), X_OK) != 0)
    return err("fsaudit-scrub-detach helper not found (set tools.fsaudit-scrub-detach)");
  fs::path dir = env.jobs_dir / t.key();
  std::error_code ec;
  fs::create_directories(env.jobs_dir, ec);
  fs::remove_all(dir, ec);
  std::vector<std::string> full = {env.detach_helper, dir.string(), "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  CommandSpec spec;
  spec.argv = full;
  spec.timeout = cmd_timeout(env, std::chrono::seconds(10));
  auto r = env.ctx.runner.run(spec, env.ctx.stop);
  if (!r.ok()) return err(cmdline(argv) + ": " + r.describe());
  auto out = trim(r.out);
  if (out.rfind("pid=", 0) != 0) return err("fsaudit-scrub-detach printed no pid: " + std::string(out));
  auto pid = parse_i64(out.substr(4));
  if (!pid || *pid <= 0) return err("fsaudit-scrub-detach printed a bad pid: " + std::string(out));
  st.job_pid = static_cast<int>(*pid);
  st.job_dir = dir.string();
  return static_cast<int>(*pid);
}

bool process_running(const HostPaths& host, const std::string& exe, const std::string& arg, const std::string& also_arg) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(host.procfs, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    auto cmd = read_file(it->path() / "cmdline", 64 << 10);
    if (!cmd || cmd->empty()) continue;
    auto args = split(*cmd, '\0');
    if (args.empty() || fs::path(std::string(args[0])).filename() != exe) continue;
    bool has_arg = false, has_also = also_arg.empty();
    for (size_t i = 1; i < args.size(); ++i) {
      has_arg = has_arg || args[i] == arg;
      has_also = has_also || args[i] == also_arg;
    }
    if (has_arg && has_also) return true;
  }
  return false;
}

}  // namespace fsaudit::scrub
