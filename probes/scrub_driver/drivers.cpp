#include "probes/scrub_driver/drivers.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "daemon/core/files.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/core/trust.hpp"

namespace fsaudit::scrub {
namespace fs = std::filesystem;

namespace {

std::chrono::milliseconds cmd_timeout(DriverEnv& env, std::chrono::milliseconds cap) {
  auto r = env.ctx.remaining();
  if (r < std::chrono::milliseconds(500)) r = std::chrono::milliseconds(500);
  return std::min(r, cap);
}

std::string cmdline(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

CommandResult run_command(DriverEnv& env, std::vector<std::string> argv, std::chrono::milliseconds cap) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = cmd_timeout(env, cap);
  spec.max_output = 1 << 20;
  return env.ctx.runner.run(spec, env.ctx.stop);
}

Result<std::optional<std::string>> read_trimmed(const fs::path& p) {
  auto r = read_attribute(p).optional_text();
  if (!r) return err(r.error());
  if (!*r) return std::optional<std::string>();
  return std::optional<std::string>(std::string(trim(**r)));
}

Result<Observation> JobDriver::observe(const ScrubTarget& t, TargetState& st, DriverEnv& env) {
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
  if (process_running(env, exe(), t.mountpoint, also_arg())) {
    o.phase = Phase::running;  // somebody else's run
    o.detail = exe() + " started by someone else is running";
  }
  return o;
}

Result<void> JobDriver::start_job(const ScrubTarget& t, TargetState& st, DriverEnv& env,
                                  const std::vector<std::string>& argv) {
  if (process_running(env.ctx.host, exe(), t.mountpoint, also_arg()))
    return err(exe() + " started by someone else is already running on " + t.mountpoint);
  return start_detached(env, t, st, argv);
}

// Kills the detached job's process group (the watcher survives and records the signal).
Result<void> JobDriver::cancel(const ScrubTarget&, TargetState& st, DriverEnv& env) {
  if (st.job_pid <= 0) return err("no scrub process recorded to stop");
  auto r = run_command(env, {"kill", "-TERM", "--", "-" + std::to_string(st.job_pid)});
  if (!r.ok()) return err_in("kill -TERM -" + std::to_string(st.job_pid) + ": ", r);
  return {};
}

Result<void> Driver::pause(const ScrubTarget&, TargetState&, DriverEnv&) { return err("pause is not supported"); }

std::string ScrubTarget::key() const {
  std::string k = fs + "_";
  for (char c : name) k += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  if (name == "/") k += "root";
  return k;
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
  // Alive while the watcher holds DIR/lock; a job without one (an older watcher) by its /proc
  // entry, which must still be our helper (pids get reused).
  int lock = ::open((dir / "lock").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (lock >= 0) {
    j.alive = ::flock(lock, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(lock);
  } else if (pid > 0) {
    auto cmd = read_file(host.proc(std::to_string(pid) + "/cmdline"));
    j.alive = cmd && cmd->find("fsaudit-scrub-detach") != std::string::npos;
  }
  struct stat sb;
  if (::stat((dir / "pid").c_str(), &sb) == 0) j.start = static_cast<double>(sb.st_mtim.tv_sec);
  return j;
}

Result<void> start_detached(DriverEnv& env, const ScrubTarget& t, TargetState& st, const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) return err("scrub tool not found", ErrorKind::not_installed);
  // Our own helper missing is a broken fsaudit installation, not a host without the tool: failed.
  if (env.detach_helper.empty() || ::access(env.detach_helper.c_str(), X_OK) != 0)
    return err("fsaudit-scrub-detach helper not found (set tools.fsaudit-scrub-detach)");
  // The runner checks fsaudit-scrub-detach; the scrub tool it starts must pass the same check.
  if (auto exe = find_tool(argv[0]); ::geteuid() == 0 && !exe.empty())
    if (auto trusted = check_trusted_executable(exe, 0); !trusted)
      return err_in("refusing to run " + exe + " as root: ", trusted);
  fs::path dir = env.jobs_dir / t.key();
  std::error_code ec;
  fs::create_directories(env.jobs_dir, ec);
  fs::remove_all(dir, ec);
  std::vector<std::string> full = {env.detach_helper};
  if (env.job_group) full.insert(full.end(), {"--group", std::to_string(*env.job_group)});
  full.insert(full.end(), {dir.string(), "--"});
  full.insert(full.end(), argv.begin(), argv.end());
  CommandSpec spec;
  spec.argv = full;
  spec.timeout = cmd_timeout(env, std::chrono::seconds(10));
  auto r = env.ctx.runner.run(spec, env.ctx.stop);
  // What the runner ran is fsaudit-scrub-detach: a program missing there is fsaudit's, not the host's tool.
  if (!r.ok()) return err(cmdline(argv) + ": " + r.describe());
  auto out = trim(r.out);
  if (out.rfind("pid=", 0) != 0) return err("fsaudit-scrub-detach printed no pid: " + std::string(out));
  auto pid = parse_i64(out.substr(4));
  if (!pid || *pid <= 0) return err("fsaudit-scrub-detach printed a bad pid: " + std::string(out));
  st.job_pid = static_cast<int>(*pid);
  st.job_dir = dir.string();
  return {};
}

namespace {

// /proc/<pid>/exe first: one readlink per process, where reading every cmdline was an open, a read and
// a close per process every pass (a host with 800 loop devices has 800 kernel threads, one per loop
// device's workqueue). A kernel thread has no exe (ENOENT) and is skipped; an exe we may not read
// (EACCES: an unprivileged fsauditd and another user's process) falls back to argv[0].
std::vector<ProcessEntry> read_processes(const HostPaths& host, KernelThreadMemo* memo = nullptr,
                                         SteadyTime now = SteadyTime{}) {
  std::vector<ProcessEntry> out;
  std::error_code ec;
  bool full = !memo || memo->full_at == SteadyTime{} || now - memo->full_at >= KernelThreadMemo::kRecheck;
  std::unordered_set<std::string> kernel_threads;
  for (auto it = fs::directory_iterator(host.procfs, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto& dir = it->path();
    auto name = dir.filename().native();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    if (memo && !full && memo->pids.count(name)) {
      kernel_threads.insert(name);
      ++memo->skipped;
      continue;
    }
    char link[4096];
    ssize_t n = ::readlink((dir / "exe").c_str(), link, sizeof link - 1);
    ProcessEntry e{dir, std::nullopt, std::nullopt};
    if (n >= 0) {
      std::string_view target(link, static_cast<std::size_t>(n));
      constexpr std::string_view kDeleted = " (deleted)";  // the binary was replaced (a package upgrade)
      if (target.ends_with(kDeleted)) target.remove_suffix(kDeleted.size());
      auto slash = target.rfind('/');
      e.exe = std::string(slash == std::string_view::npos ? target : target.substr(slash + 1));
    } else if (errno != EACCES && errno != EPERM) {
      if (errno == ENOENT) kernel_threads.insert(name);  // a kernel thread (or a zombie: looked at again when it is gone)
      continue;
    }
    out.push_back(std::move(e));
  }
  if (memo && !ec) {
    memo->pids = std::move(kernel_threads);  // only what this listing showed: the exited are forgotten
    if (full) memo->full_at = now;
  }
  return out;
}

bool any_matches(std::vector<ProcessEntry>& procs, const std::string& exe, const std::string& arg,
                 const std::string& also_arg) {
  for (auto& p : procs) {
    if (p.exe && *p.exe != exe) continue;
    if (!p.argv) {
      p.argv.emplace();
      if (auto cmd = read_file(p.dir / "cmdline", 64 << 10))
        for (auto a : split(*cmd, '\0')) p.argv->emplace_back(a);
    }
    const auto& args = *p.argv;
    if (args.empty()) continue;
    if (!p.exe && fs::path(args[0]).filename() != exe) continue;
    bool has_arg = false, has_also = also_arg.empty();
    for (size_t i = 1; i < args.size(); ++i) {
      has_arg = has_arg || args[i] == arg;
      has_also = has_also || args[i] == also_arg;
    }
    if (has_arg && has_also) return true;
  }
  return false;
}

}  // namespace

bool process_running(const HostPaths& host, const std::string& exe, const std::string& arg, const std::string& also_arg) {
  auto procs = read_processes(host);
  return any_matches(procs, exe, arg, also_arg);
}

bool process_running(DriverEnv& env, const std::string& exe, const std::string& arg, const std::string& also_arg) {
  if (!env.processes) env.processes = read_processes(env.ctx.host, env.kernel_threads, env.ctx.clock.now());
  return any_matches(*env.processes, exe, arg, also_arg);
}

}  // namespace fsaudit::scrub
