#include "probes/canary/stack.hpp"

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"
#include "daemon/probe/targets.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/scrub_driver.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/btrfs/stack.hpp"
#include "probes/zfs/scrub_driver.hpp"
#include "probes/zfs/stack.hpp"
#include "probes/zfs/status.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;

Result<std::vector<BtrfsDevStats>> parse_btrfs_device_stats(std::string_view text) {
  // One parser for this output in the project: the btrfs health probe's.
  auto parsed = btrfs::parse_device_stats(text);
  if (!parsed) return err(parsed.error());
  std::vector<BtrfsDevStats> out;
  for (const auto& e : *parsed) {
    BtrfsDevStats d{e.device};
    d.read_io_errs = e.errors.read;
    d.write_io_errs = e.errors.write;
    d.flush_io_errs = e.errors.flush;
    d.corruption_errs = e.errors.corruption;
    d.generation_errs = e.errors.generation;
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> parse_btrfs_show_devices(std::string_view text) {
  std::vector<std::string> out;
  for (auto l : lines(text)) {
    auto f = split_ws(l);
    if (f.empty() || f[0] != "devid") continue;
    for (std::size_t i = 0; i + 1 < f.size(); ++i)
      if (f[i] == "path") out.emplace_back(f[i + 1]);
  }
  return out;
}

namespace {
std::string canon_device(const std::string& name) {
  std::error_code ec;
  if (!name.empty() && name[0] == '/') {
    auto c = fs::canonical(name, ec);
    return ec ? name : c.string();
  }
  auto c = fs::canonical("/dev/" + name, ec);  // zpool status prints leaf names without /dev/
  return ec ? name : c.string();
}
}  // namespace

std::vector<std::string> devices_with_new_errors(const Counters& before, const Counters& after) {
  std::vector<std::string> out;
  for (const auto& [d, n] : after.per_device) {
    auto it = before.per_device.find(d);
    if (n > (it == before.per_device.end() ? 0 : it->second)) out.push_back(d);
  }
  return out;
}

bool expectation_met(const std::string& expect, const std::string& verdict) {
  if (expect == "repaired") return verdict == "repaired";
  if (expect == "detected") return verdict == "detected" || verdict == "repaired";
  // A known-blind stack: any completed injection meets it (silent is the standing warning).
  return verdict == "silent" || verdict == "detected" || verdict == "repaired" || verdict == "unverified";
}

CommandResult StackOps::run(std::vector<std::string> argv, std::chrono::milliseconds timeout, std::stop_token stop) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = timeout.count() > 0 ? timeout : env_.timeout;
  return env_.runner.run(spec, stop.stop_possible() ? stop : env_.stop);
}

// btrfs-progs 6.2's `scrub start -B` has been seen asleep on a futex for 25 minutes after the
// kernel had finished the scrub and btrfs had written every device's final record; the canary's
// cycle and lock would wait that long. So while it runs, a watcher reads btrfs's records (after
// 5 s, then every 2 s). Once they have said "final" for tool_exit_grace, it stops the command (the
// runner kills its process group) and the records are the result.
StackOps::BtrfsScrubRun StackOps::btrfs_scrub() {
  using namespace std::chrono;
  const auto grace = env_.tool_exit_grace;
  const auto started = system_clock::to_time_t(system_clock::now());
  std::stop_source cut;
  std::stop_callback forward(env_.stop, [&] { cut.request_stop(); });
  std::string final_status;  // written by the watcher only, read after its join
  std::jthread watcher([&](std::stop_token done) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lk(m);
    const auto unseen = steady_clock::time_point::max();
    auto final_since = unseen;  // since when the records say final
    for (auto wait = std::min<milliseconds>(seconds(5), grace);; wait = std::min<milliseconds>(seconds(2), grace)) {
      cv.wait_for(lk, done, wait, [] { return false; });
      if (done.stop_requested()) return;
      auto s = run({env_.tool("btrfs"), "scrub", "status", "-d", "-R", t_.mountpoint}, seconds(30), done);
      auto st = s.ok() ? btrfs::parse_scrub_status(s.out) : Result<btrfs::ScrubStatus>(err(s.describe()));
      // Records of this scrub (whole seconds, local time), not of the one before it.
      bool ours = st && st->total.started_epoch && *st->total.started_epoch >= started - 2;
      if (!ours || !btrfs::scrub_records_final(*st)) {
        final_since = unseen;
        continue;
      }
      if (final_since == unseen) final_since = steady_clock::now();
      if (steady_clock::now() - final_since >= grace) {
        final_status = s.out;
        cut.request_stop();
        return;
      }
    }
  });
  BtrfsScrubRun out;
  out.start = run(btrfs::scrub_start_argv(env_.tool("btrfs"), t_.mountpoint), {}, cut.get_token());
  watcher.request_stop();
  watcher.join();
  if (!out.start.exited) out.final_status = std::move(final_status);
  return out;
}

Result<std::vector<std::string>> StackOps::members() {
  std::vector<std::string> out;
  if (t_.fs == "btrfs") {
    auto r = run({env_.tool("btrfs"), "filesystem", "show", t_.mountpoint});
    if (!r.ok()) return err("btrfs filesystem show " + t_.mountpoint + ": " + r.describe());
    out = parse_btrfs_show_devices(r.out);
  } else if (t_.fs == "zfs") {
    auto r = run({env_.tool("zpool"), "status", "-P", t_.pool});
    if (!r.ok()) r = run({env_.tool("zpool"), "status", t_.pool});  // zfs-fuse has no -P
    if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
    auto rep = zfs::parse_zpool_status(r.out);
    if (!rep || rep->pools.empty()) return err("cannot parse zpool status of " + t_.pool);
    for (const auto& v : rep->pools[0].vdevs)
      if (v.leaf && v.role == "data") out.push_back(v.name);
  } else {
    return err("members() is only for multi-device stacks");
  }
  for (auto& p : out) {
    std::error_code ec;
    auto c = fs::canonical(p, ec);
    if (!ec) p = c.string();
  }
  return out;
}

Result<void> StackOps::take_offline() {
  // A short-lived reader (an indexer, a backup's stat walk) makes umount and zpool export answer
  // "busy" for a moment: try for up to 5 s before giving up.
  std::vector<std::string> argv = t_.fs == "zfs" ? std::vector<std::string>{env_.tool("zpool"), "export", t_.pool}
                                                 : std::vector<std::string>{env_.tool("umount"), t_.mountpoint};
  CommandResult r;
  for (int i = 0; i < 20; ++i) {
    r = run(argv);
    if (r.ok()) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return err((t_.fs == "zfs" ? "zpool export " + t_.pool : "umount " + t_.mountpoint) + ": " + r.describe());
}

Result<void> StackOps::bring_online() {
  if (t_.fs == "zfs") {
    std::vector<std::string> argv = {env_.tool("zpool"), "import"};
    std::set<std::string> dirs;
    for (const auto& d : t_.devices) dirs.insert(fs::path(d).parent_path().string());
    for (const auto& d : dirs) argv.insert(argv.end(), {"-d", d});
    argv.push_back(t_.pool);
    auto r = run(argv);
    if (!r.ok()) return err("zpool import " + t_.pool + ": " + r.describe());
    return {};
  }
  std::vector<std::string> argv = {env_.tool("mount"), "-t", t_.fs};
  std::string opts = t_.mount_options;
  if (t_.fs == "btrfs")
    for (std::size_t i = 1; i < t_.devices.size(); ++i) opts += (opts.empty() ? "" : ",") + std::string("device=") + t_.devices[i];
  if (!opts.empty()) argv.insert(argv.end(), {"-o", opts});
  argv.push_back(t_.devices.at(0));
  argv.push_back(t_.mountpoint);
  auto r = run(argv);
  if (!r.ok()) return err("mount " + t_.devices.at(0) + " " + t_.mountpoint + ": " + r.describe());
  return {};
}

Result<Counters> StackOps::counters() {
  Counters c;
  if (t_.fs == "btrfs") {
    auto r = run({env_.tool("btrfs"), "device", "stats", t_.mountpoint});
    // btrfs device stats exits 64 when a counter is non-zero with -c only; accept any output.
    auto st = parse_btrfs_device_stats(r.out);
    if (!st) return err("btrfs device stats " + t_.mountpoint + ": " + r.describe());
    for (const auto& d : *st) {
      c.checksum += d.corruption_errs;
      c.read += d.read_io_errs;
      c.per_device[canon_device(d.device)] += d.corruption_errs + d.read_io_errs;
    }
    return c;
  }
  if (t_.fs == "zfs") {
    auto r = run({env_.tool("zpool"), "status", t_.pool});
    if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
    auto rep = zfs::parse_zpool_status(r.out);
    if (!rep || rep->pools.empty()) return err("cannot parse zpool status of " + t_.pool);
    // Leaf vdevs by tree structure, whatever their names look like.
    for (const auto& v : rep->pools[0].vdevs) {
      if (!v.leaf) continue;
      c.checksum += v.checksum_errors.value_or(0);
      c.read += v.read_errors.value_or(0);
      c.per_device[canon_device(v.name)] += v.checksum_errors.value_or(0) + v.read_errors.value_or(0);
    }
    return c;
  }
  return c;  // xfs/ext4: no data error counters
}

Result<stack::StackModel> StackOps::model(const HostPaths& host) {
  if (t_.fs == "zfs") {
    auto r = run({env_.tool("zpool"), "status", t_.pool});
    if (!r.ok()) return err("zpool status " + t_.pool + ": " + r.describe());
    auto rep = zfs::parse_zpool_status(r.out);
    if (!rep) return err("zpool status " + t_.pool + ": " + rep.error());
    auto pool = std::find_if(rep->pools.begin(), rep->pools.end(), [&](const auto& p) { return p.name == t_.pool; });
    if (pool == rep->pools.end()) return err("zpool status " + t_.pool + " printed no pool " + t_.pool);
    // A pool that is not whole is refused whatever its dataset says: zfs get may not answer for it.
    auto ds = [&]() -> Result<zfs::DatasetShape> {
      auto g = run({env_.tool("zfs"), "get", "-Hp", zfs::kDatasetShapeProps, t_.pool});
      if (!g.ok()) return err("zfs get " + std::string(zfs::kDatasetShapeProps) + " " + t_.pool + ": " + g.describe());
      auto props = zfs::parse_property_table(g.out);
      if (!props) return err("zfs get " + t_.pool + ": " + props.error());
      return zfs::dataset_shape(*props, t_.pool);
    }();
    if (!ds) {
      auto whole = zfs::stack_model(*pool);
      if (!whole.healthy()) return whole;
      return err(ds.error());
    }
    return zfs::stack_model(*pool, *ds);
  }
  if (t_.fs == "btrfs") {
    // sysfs knows a btrfs only while it is mounted; the canary is, at the start of a cycle.
    auto mounts = read_mount_table(host);
    if (!mounts) return err(mounts.error());
    const MountEntry* m = nullptr;
    for (const auto& e : **mounts)
      if (e.mountpoint == t_.mountpoint) m = &e;  // the last one is what the path shows
    if (!m || m->fstype != "btrfs") return err(t_.mountpoint + " is not a mounted btrfs: its health cannot be read");
    auto fsid = btrfs::find_fsid(host, m->source);
    if (!fsid) return err(fsid.error());
    auto f = btrfs::read_sysfs(host, *fsid);
    if (!f) return err(f.error());
    auto opts = "," + m->mount_options + "," + m->super_options + ",";
    bool sums = opts.find(",nodatasum,") == std::string::npos && opts.find(",nodatacow,") == std::string::npos;
    return btrfs::stack_model(*f, sums);
  }
  return stack::plain_model(t_.fs, t_.name);
}

ScrubOutcome StackOps::scrub() {
  ScrubOutcome o;
  auto t0 = std::chrono::steady_clock::now();
  auto secs = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (t_.fs == "btrfs") {
    o.supported = true;
    auto [r, final_status] = btrfs_scrub();
    o.seconds = secs();
    const bool stopped = !final_status.empty();
    auto st = btrfs::parse_scrub_status(stopped ? final_status : r.out + "\n" + r.err);
    if (!st) {
      o.error = "btrfs scrub: " + r.describe();
      return o;
    }
    const auto& t = st->total;
    o.errors_found = t.errors_found().value_or(0);
    o.errors_repaired = t.corrected_errors().value_or(0);
    o.uncorrectable = t.uncorrectable_errors().value_or(0);
    std::string note;
    if (stopped) {
      note = "; btrfs scrub start -B still ran " + std::to_string(env_.tool_exit_grace.count() / 1000) +
             " s after the scrub's final records and was stopped";
      o.ok = t.scrubbed_bytes.value_or(0) > 0;  // a scrub that read nothing checked nothing
      if (!o.ok) o.error = "the scrub ended with 0 bytes scrubbed" + note;
    } else {
      o.ok = r.exited && (t.state == btrfs::ScrubState::finished || r.exit_code == 0 || r.exit_code == 3);
      if (!o.ok) o.error = "btrfs scrub start -B: " + r.describe();
    }
    o.summary = "btrfs scrub: " + std::to_string(o.errors_found) + " errors, " + std::to_string(o.errors_repaired) +
                " corrected, " + std::to_string(o.uncorrectable) + " uncorrectable" + note;
    return o;
  }
  if (t_.fs == "zfs") {
    o.supported = true;
    auto before = counters();
    auto r = run(zfs::scrub_start_argv(env_.tool("zpool"), t_.pool));  // the scrub driver's start
    if (!r.ok()) {
      o.error = "zpool scrub " + t_.pool + ": " + r.describe();
      return o;
    }
    zfs::ZfsScan scan;
    for (int i = 0; i < 6000; ++i) {
      if (env_.stop.stop_requested()) {
        o.error = "cancelled while waiting for the scrub";
        return o;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(i < 20 ? 100 : 500));
      auto s = run({env_.tool("zpool"), "status", t_.pool});
      auto rep = zfs::parse_zpool_status(s.out);
      if (!rep || rep->pools.empty()) continue;
      scan = rep->pools[0].scan;
      if (scan.function == zfs::ScanFunction::scrub && scan.state != zfs::ScanState::in_progress &&
          scan.state != zfs::ScanState::none)
        break;
    }
    o.seconds = secs();
    if (scan.state != zfs::ScanState::finished) {
      o.error = "zpool scrub did not finish: " + scan.text;
      return o;
    }
    o.ok = true;
    auto after = counters();
    std::uint64_t delta = (before && after && after->total() >= before->total()) ? after->total() - before->total() : 0;
    o.errors_found = delta;
    o.uncorrectable = scan.errors.value_or(0);
    o.errors_repaired = delta >= o.uncorrectable ? delta - o.uncorrectable : 0;
    if (scan.repaired_bytes && *scan.repaired_bytes > 0 && o.errors_repaired == 0) o.errors_repaired = 1;
    o.summary = "zpool scrub: " + scan.text;
    return o;
  }
  o.supported = false;
  o.summary = t_.fs + " has no data scrub (unsupported)";
  return o;
}

Result<void> StackOps::clear_counters() {
  if (t_.fs == "btrfs") {
    auto r = run({env_.tool("btrfs"), "device", "stats", "-z", t_.mountpoint});
    if (!r.ok()) return err("btrfs device stats -z " + t_.mountpoint + ": " + r.describe());
  } else if (t_.fs == "zfs") {
    auto r = run({env_.tool("zpool"), "clear", t_.pool});
    if (!r.ok()) return err("zpool clear " + t_.pool + ": " + r.describe());
  }
  return {};
}

}  // namespace fsaudit::canary
