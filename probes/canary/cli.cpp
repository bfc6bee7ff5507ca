#include "probes/canary/cli.hpp"

#include <sys/statvfs.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include <iostream>
#include <vector>

#include "daemon/core/clock.hpp"
#include "daemon/core/files.hpp"
#include "daemon/core/trust.hpp"
#include "daemon/core/units.hpp"
#include "probes/canary/cycle.hpp"
#include "probes/canary/helper_protocol.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/journal.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/stack.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;

Result<void> init_blocker(const fs::path& mountpoint, std::uint64_t size_cap) {
  struct statvfs sv {};
  if (::statvfs(mountpoint.c_str(), &sv) != 0) return err("cannot statvfs " + mountpoint.string(), ErrorKind::refused);
  std::error_code ec;
  for (fs::directory_iterator it(mountpoint, ec), end; !ec && it != end; it.increment(ec)) {
    auto n = it->path().filename().string();
    if (n == "lost+found" || n == kSignatureFile || n == kCanaryFile) continue;
    return err(mountpoint.string() + " is not empty (it holds \"" + n + "\"): a canary is corrupted on purpose, so it must hold no data", ErrorKind::refused);
  }
  if (ec) return err("cannot list " + mountpoint.string() + ": " + ec.message(), ErrorKind::refused);
  std::uint64_t size = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
  if (size > size_cap)
    return err(mountpoint.string() + " holds " + std::to_string(size >> 20) + " MiB, more than a canary needs (cap " +
           std::to_string(size_cap >> 20) + " MiB)", ErrorKind::refused);
  return {};
}

Result<void> init_canary(const config::Config& cfg, const std::string& name, CommandRunner& runner,
                         const InitOptions& opts) {
  const auto* t = cfg.canary.find(name);
  if (!t) return err("\"" + name + "\" is not a canary in " + cfg.source + "; add it under canary.canaries first");
  auto ops = make_canary_ops(*t, StackEnv{runner, cfg.tools, {}, std::chrono::minutes(2)}, cfg.host);
  if (!ops) return err("refused: " + ops.error());
  auto ids = verify_for_init(*t, cfg.host, **ops);
  if (!ids) return err("refused: " + ids.error());
  if (auto blocked = init_blocker(t->mountpoint); !blocked) {
    if (!opts.force)
      return err("refused: " + blocked.error() + "; use --force REASON if this really is a dedicated canary");
    if (opts.reason.empty()) return err("refused: --force needs a reason");
    sd_journal_send("MESSAGE=canary %s: init forced on %s (%s): %s", name.c_str(), t->mountpoint.c_str(), blocked.error().c_str(),
                    opts.reason.c_str(), "PRIORITY=4", "SYSLOG_IDENTIFIER=fsauditd", "FSAUDIT_CANARY=%s", name.c_str(),
                    "FSAUDIT_FORCE_REASON=%s", opts.reason.c_str(), nullptr);
  }
  CanaryRecord rec;
  rec.name = name;
  for (int i = 0; i < 2; ++i) {
    std::uint64_t v = random_u64();
    rec.signature_id += to_hex(reinterpret_cast<const unsigned char*>(&v), sizeof v);
  }
  rec.pattern_key = random_u64();
  rec.created = SystemClock::instance().wall_seconds();
  rec.devices = *ids;
  if (auto w = write_file_atomic(fs::path(t->mountpoint) / kSignatureFile, signature_text(name, rec.signature_id), 0644); !w)
    return err("cannot write the signature on " + t->mountpoint + ": " + w.error());
  ::sync();
  if (auto s = save_record(cfg.state_dir, rec); !s) return err(s.error());
  return {};
}

namespace {

int usage(std::ostream& o, int code) {
  o << "usage: fsauditd canary init NAME --config FILE [--state-dir DIR] [--force REASON]\n"
       "       fsauditd canary run NAME --config FILE\n"
       "       fsauditd canary status NAME --config FILE\n"
       "       fsauditd canary scan-bench DEVICE [--queue-depth N] [--chunk SIZE] [--limit SIZE]\n"
       "       fsauditd canary suggest TARGET [--config FILE]   (the canary config that would cover TARGET's stack)\n";
  return code;
}

}  // namespace

int canary_cli(int argc, char** argv, const SuggestCommand& suggest) {
  std::vector<std::string> a(argv, argv + argc);
  if (!a.empty() && a[0] == "canary") a.erase(a.begin());
  if (a.empty() || a[0] == "--help" || a[0] == "-h") return usage(a.empty() ? std::cerr : std::cout, a.empty() ? 2 : 0);
  std::string cmd = a[0];
  std::string config_path, positional;
  InitOptions init_opts;
  std::string state_dir_override;
  unsigned qd = 32;
  std::uint64_t chunk = 1 << 20, limit = 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    auto val = [&]() -> std::string {
      if (i + 1 >= a.size()) {
        std::cerr << "fsauditd canary: " << a[i] << " needs a value\n";
        std::exit(2);
      }
      return a[++i];
    };
    if (a[i] == "--config" || a[i] == "-c") config_path = val();
    else if (a[i] == "--state-dir") state_dir_override = val();
    else if (a[i] == "--force") {
      init_opts.force = true;
      init_opts.reason = val();
    }
    else if (a[i] == "--queue-depth") {
      auto v = val();
      auto n = parse_size(v);
      if (!n || *n == 0 || *n > 4096) {
        std::cerr << "fsauditd canary: --queue-depth wants a number from 1 to 4096, got '" << v << "'\n";
        return 2;
      }
      qd = static_cast<unsigned>(*n);
    }
    else if (a[i] == "--chunk") chunk = parse_size(val()).value_or(0);
    else if (a[i] == "--limit") limit = parse_size(val()).value_or(0);
    else if (positional.empty() && !a[i].starts_with("-")) positional = a[i];
    else {
      std::cerr << "fsauditd canary: unexpected argument '" << a[i] << "'\n";
      return usage(std::cerr, 2);
    }
  }
  if (positional.empty()) return usage(std::cerr, 2);
  try {
    if (cmd == "scan-bench") {
      ScanOptions o;
      o.queue_depth = qd;
      o.chunk_bytes = chunk;
      o.limit_bytes = limit;
      auto r = scan_device(positional, random_u64(), o);
      if (!r) {
        std::cerr << "fsauditd canary scan-bench: " << r.error() << "\n";
        return 1;
      }
      std::cout << "device=" << positional << " bytes=" << r->bytes << " seconds=" << r->seconds
                << " bytes_per_second=" << static_cast<std::uint64_t>(r->bytes_per_second())
                << " MiB_per_second=" << r->bytes_per_second() / (1 << 20) << " queue_depth=" << qd
                << " chunk=" << chunk << " hits=" << r->hits.size() << "\n";
      return 0;
    }
    if (cmd == "suggest") {
      if (!suggest) {
        std::cerr << "fsauditd canary suggest: not available in this binary; run it as fsauditd canary suggest\n";
        return 2;
      }
      ProcessRunner runner;
      auto cfg = config_path.empty() ? config::default_config() : config::load_config_file(config_path);
      return suggest(cfg, positional, runner);
    }
    if (config_path.empty()) {
      std::cerr << "fsauditd canary " << cmd << ": --config FILE is required\n";
      return 2;
    }
    // Run as root, the config names the tools this command runs (tools:) and the devices it writes.
    if (::geteuid() == 0 && (cmd == "init" || cmd == "run")) {
      if (auto trusted = check_trusted_file(config_path); !trusted) {
        std::cerr << "fsauditd canary " << cmd << ": refusing an untrusted config: " << trusted.error() << "\n";
        return 2;
      }
    }
    auto cfg = config::load_config_file(config_path);
    if (!state_dir_override.empty()) cfg.state_dir = state_dir_override;  // e.g. fsaudit-helper's
    // Root acts on what the state says (an in-flight marker names a device, an offset and the bytes to
    // put back): it reads no state that another user, the unprivileged daemon included, can write.
    if (::geteuid() == 0) {
      if (auto trusted = check_trusted_directory(cfg.state_dir, 0); !trusted) {
        std::cerr << "fsauditd canary " << cmd << ": refusing state directory " << cfg.state_dir
                  << " that another user can write (" << trusted.error()
                  << "); as root use a root-only one, e.g. --state-dir /var/lib/fsaudit-helper (fsaudit-helper's)\n";
        return 2;
      }
    }
    ProcessRunner runner;
    if (cmd == "init") {
      auto r = init_canary(cfg, positional, runner, init_opts);
      if (!r) {
        std::cerr << "fsauditd canary init " << positional << ": " << r.error() << "\n";
        return 1;
      }
      std::cout << "canary " << positional << " initialised: signature written to "
                << cfg.canary.find(positional)->mountpoint << "/" << kSignatureFile << ", identities recorded in "
                << (canary_state_dir(cfg.state_dir, positional) / "identity.json").string() << "\n";
      return 0;
    }
    if (cmd == "run") {
      CycleEnv env(cfg.host, runner, cfg.tools, SystemClock::instance(), cfg.state_dir);
      auto rep = run_cycle(cfg.canary, positional, env);
      if (rep.busy) {
        std::cerr << "fsauditd canary run " << positional << ": refused: " << rep.reason << "\n";
        return 2;
      }
      record_cycle(cfg.state_dir, rep);
      journal_cycle(rep);
      std::cout << rep.to_json() << "\n";
      if (rep.verdict == Verdict::refused || rep.verdict == Verdict::error) return 2;
      return rep.expectation_met ? 0 : 1;
    }
    if (cmd == "status") {
      auto t = read_file(canary_state_dir(cfg.state_dir, positional) / "state.json");
      if (!t) {
        std::cerr << "no state for canary " << positional << " yet\n";
        return 1;
      }
      std::cout << *t;
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "fsauditd canary " << cmd << ": " << e.what() << "\n";
    return 1;
  }
  std::cerr << "fsauditd canary: unknown command '" << cmd << "'\n";
  return usage(std::cerr, 2);
}

}  // namespace fsaudit::canary
