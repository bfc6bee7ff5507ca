#include "probes/btrfs/canary_ops.hpp"

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "daemon/probe/targets.hpp"
#include "probes/btrfs/parse.hpp"
#include "probes/btrfs/probe.hpp"
#include "probes/btrfs/scrub_driver.hpp"
#include "probes/btrfs/scrub_status.hpp"
#include "probes/btrfs/stack.hpp"

namespace fsaudit::btrfs {

namespace fs = std::filesystem;

// btrfs-progs 6.2's `scrub start -B` has been seen asleep on a futex for 25 minutes after the
// kernel had finished the scrub and btrfs had written every device's final record; the canary's
// cycle and lock would wait that long. So while it runs, a watcher reads btrfs's records (after
// 5 s, then every 2 s). Once they have said "final" for tool_exit_grace, it stops the command (the
// runner kills its process group) and the records are the result.
CanaryOps::ScrubRun CanaryOps::run_scrub() {
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
      auto st = s.ok() ? parse_scrub_status(s.out) : Result<ScrubStatus>(err(s.describe()));
      // Records of this scrub (whole seconds, local time), not of the one before it.
      bool ours = st && st->total.started_epoch && *st->total.started_epoch >= started - 2;
      if (!ours || !scrub_records_final(*st)) {
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
  ScrubRun out;
  out.start = run(scrub_start_argv(env_.tool("btrfs"), t_.mountpoint), {}, cut.get_token());
  watcher.request_stop();
  watcher.join();
  if (!out.start.exited) out.final_status = std::move(final_status);
  return out;
}

Result<std::vector<std::string>> CanaryOps::members() {
  auto r = run({env_.tool("btrfs"), "filesystem", "show", t_.mountpoint});
  if (!r.ok()) return err("btrfs filesystem show " + t_.mountpoint + ": " + r.describe());
  auto out = parse_filesystem_show_devices(r.out);
  // Resolved as the counters resolve them: zfs-fuse, without -P, prints a loop device as "loop5".
  for (auto& p : out) p = canary::canonical_member(env_.host, p);
  return out;
}

Result<void> CanaryOps::take_offline() {
  return run_until_not_busy({env_.tool("umount"), t_.mountpoint}, "umount " + t_.mountpoint);
}

Result<void> CanaryOps::bring_online() {
  // The kernel assembles a multi-device btrfs only when it knows every member: name them.
  std::string devices;
  for (std::size_t i = 1; i < t_.devices.size(); ++i) devices += (devices.empty() ? "" : ",") + std::string("device=") + t_.devices[i];
  return mount(devices);
}

Result<canary::Counters> CanaryOps::counters() {
  canary::Counters c;
  auto r = run({env_.tool("btrfs"), "device", "stats", t_.mountpoint});
  // btrfs device stats exits 64 when a counter is non-zero with -c only; accept any output.
  auto st = parse_device_stats(r.out);
  if (!st) return err("btrfs device stats " + t_.mountpoint + ": " + r.describe());
  for (const auto& d : *st) {
    c.checksum += d.errors.corruption;
    c.read += d.errors.read;
    c.per_device[canary::canonical_member(env_.host, d.device)] += d.errors.corruption + d.errors.read;
  }
  return c;
}

Result<stack::StackModel> CanaryOps::model() {
  const auto& host = env_.host;
  // sysfs knows a btrfs only while it is mounted; the canary is, at the start of a cycle.
  auto mounts = read_mount_table(host);
  if (!mounts) return err(mounts.error());
  const MountEntry* m = nullptr;
  for (const auto& e : **mounts)
    if (e.mountpoint == t_.mountpoint) m = &e;  // the last one is what the path shows
  if (!m || m->fstype != "btrfs") return err(t_.mountpoint + " is not a mounted btrfs: its health cannot be read");
  auto fsid = find_fsid(host, m->source);
  if (!fsid) return err(fsid.error());
  auto f = read_sysfs(host, *fsid);
  if (!f) return err(f.error());
  auto opts = "," + m->mount_options + "," + m->super_options + ",";
  bool sums = opts.find(",nodatasum,") == std::string::npos && opts.find(",nodatacow,") == std::string::npos;
  return stack_model(*f, sums);
}

canary::ScrubOutcome CanaryOps::scrub() {
  canary::ScrubOutcome o;
  auto t0 = std::chrono::steady_clock::now();
  o.supported = true;
  auto [r, final_status] = run_scrub();
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool stopped = !final_status.empty();
  auto st = parse_scrub_status(stopped ? final_status : r.out + "\n" + r.err);
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
    o.ok = r.exited && (t.state == ScrubState::finished || r.exit_code == 0 || r.exit_code == 3);
    if (!o.ok) o.error = "btrfs scrub start -B: " + r.describe();
  }
  o.summary = "btrfs scrub: " + std::to_string(o.errors_found) + " errors, " + std::to_string(o.errors_repaired) +
              " corrected, " + std::to_string(o.uncorrectable) + " uncorrectable" + note;
  return o;
}

Result<void> CanaryOps::clear_counters() {
  auto r = run({env_.tool("btrfs"), "device", "stats", "-z", t_.mountpoint});
  if (!r.ok()) return err("btrfs device stats -z " + t_.mountpoint + ": " + r.describe());
  return {};
}

Result<void> CanaryOps::build_lab(canary::LabHost& lab, const canary::LabSpec& spec) {
  if (find_tool("mkfs.btrfs").empty()) return err("mkfs.btrfs not installed (btrfs-progs)", ErrorKind::not_installed);
  // Data and metadata both dup on one device: mkfs.btrfs refuses anything below 256 MiB.
  const std::uint64_t size = spec.profile == "dup" ? std::max<std::uint64_t>(spec.image_size, 256ull << 20) : spec.image_size;
  t_.devices.clear();
  for (int i = 0; i < spec.members; ++i) {
    auto d = lab.loop_device(spec.name + "-" + std::to_string(i) + ".img", size);
    if (!d) return err(d.error());
    t_.devices.push_back(*d);
  }
  // Metadata keeps at least two copies (dup on one device), so that a data block the cycle
  // corrupts is what the filesystem reports.
  const std::string meta = spec.profile == "single" ? "dup" : spec.profile;
  std::vector<std::string> argv = {"mkfs.btrfs", "-f", "-q", "-L", "fsaudit-lab-" + spec.name, "-d", spec.profile, "-m", meta};
  argv.insert(argv.end(), t_.devices.begin(), t_.devices.end());
  if (auto r = lab.run(argv); !r.ok()) return err("mkfs.btrfs: " + r.describe());
  std::vector<std::string> opts = {"-t", "btrfs"};
  // The kernel assembles a multi-device btrfs only when it knows every member (as bring_online).
  std::string others;
  for (std::size_t i = 1; i < t_.devices.size(); ++i) others += (others.empty() ? "device=" : ",device=") + t_.devices[i];
  if (!others.empty()) opts.insert(opts.end(), {"-o", others});
  return lab.mount(t_.devices[0], t_.mountpoint, opts);
}

}  // namespace fsaudit::btrfs
