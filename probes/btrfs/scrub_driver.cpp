#include "probes/btrfs/scrub_driver.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "daemon/core/block_device.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "daemon/core/strings.hpp"

namespace fsaudit::btrfs {

namespace fs = std::filesystem;
using scrub::DriverEnv;
using scrub::Observation;
using scrub::Outcome;
using scrub::Phase;
using scrub::ScrubTarget;
using scrub::TargetState;

namespace {

scrub::Errors errors_of(const ScrubSection& s) {
  scrub::Errors e;
  if (auto v = s.errors_found()) e.found = *v;
  if (auto v = s.corrected_errors()) e.repaired = *v;
  if (auto v = s.uncorrectable_errors()) e.uncorrectable = *v;
  return e;
}

// Errors by cause, from the raw counters (-R) or the printed summary; empty when the text said
// nothing about errors.
std::map<std::string, std::uint64_t> error_causes(const ScrubSection& s) {
  std::map<std::string, std::uint64_t> out;
  if (s.raw) {
    out = {{"read", s.raw->read_errors}, {"csum", s.raw->csum_errors}, {"verify", s.raw->verify_errors},
           {"super", s.raw->super_errors}};
  } else if (s.errors_found()) {
    for (const auto* k : {"read", "csum", "verify", "super"}) {
      auto it = s.error_details.find(k);
      out[k] = it == s.error_details.end() ? 0 : it->second;
    }
  }
  return out;
}

// While our own `scrub start -B` runs, a status that does not yet describe it is not an end.
// Returns true when `o` was turned into "running".
bool job_still_running(Observation& o, const ScrubStatus& status, const scrub::JobStatus& job) {
  const auto& s = status.total;
  // btrfs-progs says "no stats available" until its first progress update (several seconds in), so
  // the job's liveness decides. Only when btrfs has nothing newer than the job to say: a canceled
  // ("aborted") scrub of this job is reported as such even if the -B process has not exited yet.
  bool status_predates_job = s.state == ScrubState::never || s.state == ScrubState::unknown;
  // btrfs-progs records each device's result as that device finishes. On a multi-device
  // filesystem, once the kernel is done but before our `scrub start -B` has written the last
  // device's record, status says "interrupted" with only the first devices' counts (seen here:
  // raid1, the clean device's record alone, 0 errors). While our job lives that is not an end. With
  // -d the same shows as a device without a final record next to finished ones.
  bool records_pending = s.state == ScrubState::interrupted;
  for (const auto& d : status.devices)
    if (d.state != ScrubState::finished && d.state != ScrubState::aborted) records_pending = true;
  if (!status_predates_job && o.started && job.start > 0 && *o.started < job.start - 2) status_predates_job = true;
  if (!job.alive || !(status_predates_job || records_pending)) return false;
  o.phase = Phase::running;
  // The kernel's scrub of this job has stopped (finished or canceled) and only the records lag.
  o.winding_down = !status_predates_job;
  o.last_outcome = Outcome::none;
  if (!o.started && job.start > 0) o.started = job.start;
  return true;
}

// The kernel's scrub has ended (every device's record is final) but our `scrub start -B` still
// runs. btrfs-progs writes its last records and exits within moments of the kernel's end; one that
// is still there minutes later has hung (seen here: btrfs-progs 6.2 asleep on a futex in its own
// threads for 25 minutes, holding the filesystem). Until kToolExitGrace it may still be writing:
// the scrub shows running. After it, fsaudit stops the job (its process group, SIGTERM, as
// JobDriver::cancel does) and takes the kernel's records as the result; a scrub that ended with no
// byte scrubbed is then a failed run, not a clean one.
constexpr double kToolExitGrace = 300;

// Returns true when `o` was turned into "running" (still within the grace).
bool hung_tool(Observation& o, const TargetState& st, const scrub::JobStatus& job, DriverEnv& env) {
  // Only a finished scrub: a canceled one ends when its job does (job_still_running, the cancel verbs).
  if (!job.alive || o.phase == Phase::running || o.last_outcome != Outcome::finished) return false;
  const double ended = o.last_end.value_or(0);
  if (ended <= 0) return false;  // no end time in the status: taken as the end, as before
  if (env.now - ended < kToolExitGrace) {
    o.phase = Phase::running;
    o.last_outcome = Outcome::none;
    o.detail = "the scrub has ended; waiting for btrfs scrub start -B to exit";
    if (!o.started && job.start > 0) o.started = job.start;
    return true;
  }
  const auto waited = std::to_string(static_cast<long long>(env.now - ended));
  std::string stopped;
  if (st.job_pid > 0) {
    auto r = scrub::run_command(env, {"kill", "-TERM", "--", "-" + std::to_string(st.job_pid)});
    stopped = r.ok() ? "; stopped it (SIGTERM to its process group " + std::to_string(st.job_pid) + ")"
                     : "; could not stop it: " + std::string(trim(r.describe()));
  }
  o.detail = "btrfs scrub start -B still running " + waited + " s after the scrub ended" + stopped;
  if (o.bytes.value_or(0) <= 0) {
    o.last_outcome = Outcome::failed;
    o.detail = "the scrub ended with 0 bytes scrubbed and " + o.detail;
  }
  return false;
}

// Our own `scrub start -B` finished: exit 3 means uncorrectable errors even where counters stay 0.
void apply_job_exit(Observation& o, const scrub::JobStatus& job) {
  if (!job.finished) return;
  if (job.exit_code == 3 && o.errors.uncorrectable.value_or(0) == 0) o.errors.uncorrectable = 1;
  if (job.exit_code != 0 && job.exit_code != 3 && o.last_outcome == Outcome::finished) {
    o.last_outcome = Outcome::failed;
    o.detail = "btrfs scrub exited " + std::to_string(job.exit_code) + ": " + std::string(trim(job.output.substr(0, 200)));
  }
  if (job.end > 0 && !o.last_end) o.last_end = job.end;
}

// Whether a member device of the btrfs filesystem `uuid` is missing (sysfs devinfo/<devid>/missing).
bool any_device_missing(const HostPaths& host, const std::string& uuid) {
  std::error_code ec;
  auto devinfo = host.sys("fs/btrfs/" + uuid + "/devinfo");
  for (auto it = fs::directory_iterator(devinfo, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
  {
    // A `missing` flag that cannot be read counts as missing: the answer decides whether a scrub
    // may start, and one on a filesystem short of a device must not.
    auto m = scrub::read_trimmed(it->path() / "missing");
    if (!m || m->value_or("0") == "1") return true;
  }
  return false;
}

// Between scrubs `btrfs scrub status` says the same thing until btrfs-progs writes its status file
// (/var/lib/btrfs/scrub.status.<uuid>: every `scrub start` or `resume` creates or rewrites it when it
// begins and as it goes). An idle filesystem is asked again only when that file changed (appeared,
// was rewritten or went away), or after kRecheck, not on every poll: 20 btrfs filesystems were 40
// btrfs processes a minute. Kept per process (drivers are made per pass), by host root and mount point.
struct FileStamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};
std::optional<FileStamp> stamp_of(const fs::path& p) {
  struct stat sb {};
  if (::stat(p.c_str(), &sb) != 0) return std::nullopt;
  return FileStamp{sb.st_dev, sb.st_ino, sb.st_size,
                   static_cast<std::int64_t>(sb.st_mtim.tv_sec) * 1'000'000'000 + sb.st_mtim.tv_nsec};
}
struct IdleSeen {
  Observation o;
  std::string uuid;
  std::optional<FileStamp> stamp;  // none: no status file (never scrubbed with btrfs-progs here)
  SteadyTime at;                   // the context's clock
};
constexpr std::chrono::minutes kRecheck{10};
std::mutex g_idle_mu;
std::map<std::string, IdleSeen> g_idle;

fs::path status_file(const HostPaths& host, const std::string& uuid) {
  return host.rootfs / "var/lib/btrfs" / ("scrub.status." + uuid);
}

class BtrfsDriver final : public scrub::Driver {
 public:
  Result<Observation> observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    const std::string idle_key = env.ctx.host.rootfs.string() + "\x1f" + t.mountpoint;
    const bool ours = !st.job_dir.empty() || st.running;  // a run we started or saw running: always ask
    {
      std::unique_lock l(g_idle_mu);
      auto it = g_idle.find(idle_key);
      if (it != g_idle.end() && !ours && env.ctx.clock.now() - it->second.at < kRecheck) {
        IdleSeen seen = it->second;
        l.unlock();
        if (stamp_of(status_file(env.ctx.host, seen.uuid)) == seen.stamp) {
          seen.o.degraded = any_device_missing(env.ctx.host, seen.uuid);
          return seen.o;
        }
      }
    }
    std::string uuid;
    auto o = observe_now(t, st, env, uuid);
    std::lock_guard l(g_idle_mu);
    if (o && o->phase == Phase::idle && !ours && !uuid.empty()) {
      g_idle[idle_key] = IdleSeen{*o, uuid, stamp_of(status_file(env.ctx.host, uuid)), env.ctx.clock.now()};
    } else {
      g_idle.erase(idle_key);
    }
    return o;
  }

  // `uuid`: the filesystem UUID `scrub status` printed ("" if none).
  Result<Observation> observe_now(const ScrubTarget& t, TargetState& st, DriverEnv& env, std::string& uuid) {
    // Our job is read before the status: `scrub start -B` writes every device's record before it
    // exits, so a status read after seeing the job alive or finished is never older than the job.
    // (Read the other way round, the job could exit in between and a pending-record status would
    // pass for the final one.)
    scrub::JobStatus job;
    if (!st.job_dir.empty()) job = scrub::read_job(env.ctx.host, st.job_dir, st.job_pid);
    auto r = scrub::run_command(env, {env.ctx.tool("btrfs"), "scrub", "status", "-d", "-R", t.mountpoint});
    if (!r.ok() && !env.privileged_helper.empty() &&
        (r.err.find("Operation not permitted") != std::string::npos || r.err.find("Permission denied") != std::string::npos)) {
      // An unprivileged fsauditd: the status ioctl needs CAP_SYS_ADMIN, fsaudit-helper has it.
      auto h = helper_call(env.privileged_helper, "btrfs-scrub-status", {{"mountpoint", t.mountpoint}},
                           std::max(std::chrono::milliseconds(100), env.ctx.remaining()));
      if (h) {
        r = CommandResult{};
        r.exited = true;
        r.exit_code = std::atoi((*h)["exit"].c_str());
        r.out = (*h)["out"];
      } else {
        r.err += " (" + h.error() + ")";
      }
    }
    if (!r.ok()) {
      // btrfs-progs missing or failing: the status file btrfs-progs keeps still tells the last scrub.
      if (auto o = from_status_file(t, env)) return *o;
      return err_in("btrfs scrub status -d -R " + t.mountpoint + ": ", r);
    }
    auto parsed = parse_scrub_status(r.out);
    if (!parsed) return err("btrfs scrub status -d -R " + t.mountpoint + ": " + parsed.error());
    const HostPaths& host = env.ctx.host;
    Observation o = observation_from_btrfs(*parsed, [&](const std::string& p) { return block::kernel_name_or_last(host, p); });
    // After our pause (btrfs' cancel) our `scrub start -B` lives on for moments, seconds under load, and
    // whatever status says meanwhile is that job winding down, not a resume: "no stats available" (paused
    // a second in, before its first progress record), "running" (its progress socket still open) or a
    // pending record. A resume by anybody else needs our job gone: btrfs refuses a second scrub.
    const bool pausing = !st.job_dir.empty() && st.paused_by_us && job.alive;
    if (!st.job_dir.empty() && o.phase != Phase::running && job_still_running(o, *parsed, job)) {
      o.winding_down = o.winding_down || pausing;
      return o;
    }
    if (pausing && o.phase == Phase::running) o.winding_down = true;
    if (!st.job_dir.empty() && hung_tool(o, st, job, env)) return o;
    if (!st.job_dir.empty() && o.phase == Phase::idle) apply_job_exit(o, job);
    // Degraded: a member device is missing.
    if (!parsed->uuid.empty()) {
      if (any_device_missing(host, parsed->uuid)) o.degraded = true;
      uuid = parsed->uuid;
    }
    return o;
  }
  Result<void> start(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return scrub::start_detached(env, t, st, scrub_start_argv(env.ctx.tool("btrfs"), t.mountpoint));
  }
  bool can_pause(const TargetState&) const override { return true; }  // cancel keeps the position
  Result<void> pause(const ScrubTarget& t, TargetState& st, DriverEnv& env) override { return cancel(t, st, env); }
  Result<void> resume(const ScrubTarget& t, TargetState& st, DriverEnv& env) override {
    return scrub::start_detached(env, t, st, {env.ctx.tool("btrfs"), "scrub", "resume", "-B", "-R", t.mountpoint});
  }
  Result<void> cancel(const ScrubTarget& t, TargetState&, DriverEnv& env) override {
    auto r = scrub::run_command(env, {env.ctx.tool("btrfs"), "scrub", "cancel", t.mountpoint});
    if (!r.ok() && r.exit_code != 2) return err_in("btrfs scrub cancel " + t.mountpoint + ": ", r);
    return {};
  }

 private:
  std::optional<Observation> from_status_file(const ScrubTarget& t, DriverEnv& env) {
    // The filesystem UUID: /sys/fs/btrfs/<uuid>/devices/<kernel name of the mount source>.
    if (t.source.empty()) return std::nullopt;
    auto dev = block::kernel_name(env.ctx.host, t.source);
    if (!dev) return std::nullopt;
    std::error_code ec;
    for (auto it = fs::directory_iterator(env.ctx.host.sys("fs/btrfs"), ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (!fs::exists(it->path() / "devices" / *dev)) continue;
      std::string uuid = it->path().filename().string();
      auto text = read_file(status_file(env.ctx.host, uuid));
      if (!text) return std::nullopt;
      auto f = parse_scrub_status_file(*text);
      if (!f) return std::nullopt;
      auto o = observation_from_btrfs_file(*f, uuid);
      o.detail = "from /var/lib/btrfs/scrub.status." + uuid + " (btrfs scrub status failed)";
      return o;
    }
    return std::nullopt;
  }
};

}  // namespace

std::vector<std::string> scrub_start_argv(const std::string& btrfs, const std::string& mountpoint) {
  return {btrfs, "scrub", "start", "-B", "-R", mountpoint};
}

Observation observation_from_btrfs(const ScrubStatus& status, const std::function<std::string(const std::string&)>& device_name) {
  const auto& s = status.total;
  Observation o;
  o.detail = std::string(to_string(s.state));
  switch (s.state) {
    case ScrubState::running: o.phase = Phase::running; break;
    case ScrubState::finished: o.last_outcome = Outcome::finished; break;
    case ScrubState::aborted:
    case ScrubState::interrupted: o.last_outcome = Outcome::canceled; break;
    case ScrubState::never:
    case ScrubState::unknown: break;
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
  o.errors = errors_of(s);
  if (s.state != ScrubState::never) o.error_detail.causes = error_causes(s);
  for (const auto& d : status.devices) {
    if (d.state == ScrubState::never || d.device.empty()) continue;
    std::string name = device_name ? device_name(d.device) : d.device;
    o.error_detail.devices[name] = errors_of(d);
  }
  return o;
}

Observation observation_from_btrfs_file(const ScrubFile& f, const std::string& fsid) {
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
  ScrubSection s;
  s.raw = a->counters;
  const auto& c = a->counters;
  o.bytes = static_cast<double>(c.data_bytes_scrubbed + c.tree_bytes_scrubbed);
  o.errors = errors_of(s);
  o.error_detail.causes = error_causes(s);
  return o;
}

std::unique_ptr<scrub::Driver> make_scrub_driver() { return std::make_unique<BtrfsDriver>(); }

}  // namespace fsaudit::btrfs
