#include "probes/canary/cycle.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/core/files.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/raw_writer.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/stack.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& verdicts() {
  static const std::vector<std::string> v = {"repaired", "detected",       "silent", "unverified",
                                             "not_injectable", "refused", "error"};
  return v;
}

fs::path inflight_path(const fs::path& state_dir, const std::string& name) {
  return canary_state_dir(state_dir, name) / "inflight.json";
}

// ---------------------------------------------------------------- report (de)serialisation
namespace {
json inj_json(const Injection& i) {
  return json{{"device", i.device},         {"offset", i.offset},           {"before", i.before_hex},
              {"after", i.after_hex},       {"block_index", i.block_index}, {"block_offset", i.block_offset},
              {"block_size", i.block_size}};
}
Injection inj_from(const json& j) {
  Injection i;
  i.device = j.value("device", "");
  i.offset = j.value("offset", std::uint64_t{0});
  i.before_hex = j.value("before", "");
  i.after_hex = j.value("after", "");
  i.block_index = j.value("block_index", std::uint64_t{0});
  i.block_offset = j.value("block_offset", std::uint64_t{0});
  i.block_size = j.value("block_size", std::uint64_t{0});
  return i;
}
}  // namespace

std::string CycleReport::to_json() const {
  json j{{"canary", canary},
         {"fs", fs},
         {"layout", layout},
         {"expect", expect},
         {"verdict", verdict},
         {"reason", reason},
         {"expectation_met", expectation_met},
         {"started", started},
         {"finished", finished},
         {"duration_seconds", duration_seconds},
         {"read_result", read_result},
         {"detected_by", detected_by},
         {"block_size", block_size},
         {"file_blocks", file_blocks},
         {"copies_found", copies_found},
         {"copies", copies},
         {"time_to_detect_seconds", time_to_detect_seconds},
         {"errors_counted_on_read", errors_counted_on_read},
         {"scrub_supported", scrub_supported},
         {"scrub_ran", scrub_ran},
         {"scrub_ok", scrub_ok},
         {"scrub_seconds", scrub_seconds},
         {"scrub_found", scrub_found},
         {"scrub_repaired", scrub_repaired},
         {"scrub_uncorrectable", scrub_uncorrectable},
         {"scrub_summary", scrub_summary},
         {"repair_verified", repair_verified},
         {"scan_bytes", scan_bytes},
         {"scan_seconds", scan_seconds},
         {"caused_errors_cleared", caused_errors_cleared},
         {"preexisting_errors", preexisting_errors},
         {"recovery", recovery},
         {"cleanup_errors", cleanup_errors}};
  if (injection) j["injection"] = inj_json(*injection);
  return j.dump(2);
}

std::optional<CycleReport> CycleReport::from_json(const std::string& text) {
  try {
    json j = json::parse(text);
    CycleReport r;
    r.canary = j.value("canary", "");
    r.fs = j.value("fs", "");
    r.layout = j.value("layout", "");
    r.expect = j.value("expect", "");
    r.verdict = j.value("verdict", "error");
    r.reason = j.value("reason", "");
    r.expectation_met = j.value("expectation_met", false);
    r.started = j.value("started", 0.0);
    r.finished = j.value("finished", 0.0);
    r.duration_seconds = j.value("duration_seconds", 0.0);
    r.read_result = j.value("read_result", "");
    r.detected_by = j.value("detected_by", "");
    r.block_size = j.value("block_size", std::uint64_t{0});
    r.file_blocks = j.value("file_blocks", std::uint64_t{0});
    r.copies_found = j.value("copies_found", std::uint64_t{0});
    r.copies = j.value("copies", std::vector<std::string>{});
    r.time_to_detect_seconds = j.value("time_to_detect_seconds", -1.0);
    r.errors_counted_on_read = j.value("errors_counted_on_read", std::uint64_t{0});
    r.scrub_supported = j.value("scrub_supported", false);
    r.scrub_ran = j.value("scrub_ran", false);
    r.scrub_ok = j.value("scrub_ok", false);
    r.scrub_seconds = j.value("scrub_seconds", 0.0);
    r.scrub_found = j.value("scrub_found", std::uint64_t{0});
    r.scrub_repaired = j.value("scrub_repaired", std::uint64_t{0});
    r.scrub_uncorrectable = j.value("scrub_uncorrectable", std::uint64_t{0});
    r.scrub_summary = j.value("scrub_summary", "");
    r.repair_verified = j.value("repair_verified", -1);
    r.scan_bytes = j.value("scan_bytes", std::uint64_t{0});
    r.scan_seconds = j.value("scan_seconds", 0.0);
    r.caused_errors_cleared = j.value("caused_errors_cleared", std::uint64_t{0});
    r.preexisting_errors = j.value("preexisting_errors", std::uint64_t{0});
    r.recovery = j.value("recovery", "");
    r.cleanup_errors = j.value("cleanup_errors", std::vector<std::string>{});
    if (j.contains("injection")) r.injection = inj_from(j["injection"]);
    return r;
  } catch (...) {
    return std::nullopt;
  }
}

// ---------------------------------------------------------------- persistent state
CanaryState load_state(const fs::path& state_dir, const std::string& name) {
  CanaryState s;
  auto t = read_file(canary_state_dir(state_dir, name) / "state.json");
  if (!t) return s;
  try {
    json j = json::parse(*t);
    s.runs = j.value("runs", std::map<std::string, std::uint64_t>{});
    s.cycles = j.value("cycles", std::uint64_t{0});
    s.recoveries = j.value("recoveries", std::uint64_t{0});
    s.caused_errors_cleared = j.value("caused_errors_cleared", std::uint64_t{0});
    s.last_run = j.value("last_run", 0.0);
    if (j.contains("last")) s.last = CycleReport::from_json(j["last"].dump());
  } catch (...) {
  }
  return s;
}

Result<void> save_state(const fs::path& state_dir, const std::string& name, const CanaryState& s) {
  json j{{"runs", s.runs},
         {"cycles", s.cycles},
         {"recoveries", s.recoveries},
         {"caused_errors_cleared", s.caused_errors_cleared},
         {"last_run", s.last_run}};
  if (s.last) j["last"] = json::parse(s.last->to_json());
  auto dir = canary_state_dir(state_dir, name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  return write_file_atomic(dir / "state.json", j.dump(2) + "\n", 0600);
}

CanaryState record_cycle(const fs::path& state_dir, const CycleReport& r) {
  auto s = load_state(state_dir, r.canary);
  s.runs[r.verdict]++;
  s.cycles++;
  if (!r.recovery.empty()) s.recoveries++;
  s.caused_errors_cleared += r.caused_errors_cleared;
  s.last_run = r.finished;
  s.last = r;
  (void)save_state(state_dir, r.canary, s);
  return s;
}

// ---------------------------------------------------------------- the cycle
namespace {

struct Marker {
  std::string phase;
  double started = 0;
  std::uint64_t nonce = 0;
  std::uint64_t counters_before = 0;
  std::optional<Injection> injection;
};

Result<void> write_marker(const fs::path& state_dir, const std::string& name, const Marker& m) {
  json j{{"phase", m.phase}, {"started", m.started}, {"nonce", m.nonce}, {"counters_before", m.counters_before}};
  if (m.injection) j["injection"] = inj_json(*m.injection);
  std::error_code ec;
  fs::create_directories(canary_state_dir(state_dir, name), ec);
  return write_file_atomic(inflight_path(state_dir, name), j.dump(2) + "\n", 0600);
}

std::optional<Marker> read_marker(const fs::path& state_dir, const std::string& name) {
  auto t = read_file(inflight_path(state_dir, name));
  if (!t) return std::nullopt;
  Marker m;
  try {
    json j = json::parse(*t);
    m.phase = j.value("phase", "");
    m.started = j.value("started", 0.0);
    m.nonce = j.value("nonce", std::uint64_t{0});
    m.counters_before = j.value("counters_before", std::uint64_t{0});
    if (j.contains("injection")) m.injection = inj_from(j["injection"]);
  } catch (...) {
    m.phase = "unreadable";
  }
  return m;
}

void remove_marker(const fs::path& state_dir, const std::string& name) {
  std::error_code ec;
  fs::remove(inflight_path(state_dir, name), ec);
  int dfd = ::open(canary_state_dir(state_dir, name).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

bool is_online(const config::CanaryTarget& t, const HostPaths& host) {
  auto mounts = read_mounts(host);
  if (!mounts) return false;
  for (const auto& e : *mounts)
    if (e.mountpoint == t.mountpoint) return true;
  return false;
}

bool wait_online(const config::CanaryTarget& t, const HostPaths& host, int tenths = 100) {
  for (int i = 0; i < tenths; ++i) {
    if (is_online(t, host)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void fsync_dir(const fs::path& d) {
  int dfd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Result<void> write_canary_file(const fs::path& path, const PatternKey& key, std::uint64_t blocks, std::size_t bs,
                               bool do_fsync) {
  std::error_code ec;
  fs::remove(path, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return err("cannot create " + path.string() + ": " + std::strerror(errno));
  std::vector<unsigned char> buf(bs);
  for (std::uint64_t i = 0; i < blocks; ++i) {
    make_block(key, i, bs, buf.data());
    std::size_t done = 0;
    while (done < bs) {
      ssize_t w = ::write(fd, buf.data() + done, bs - done);
      if (w < 0) {
        int e = errno;
        ::close(fd);
        return err("write to " + path.string() + ": " + std::strerror(e));
      }
      done += static_cast<std::size_t>(w);
    }
  }
  if (do_fsync && ::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    return err("fsync " + path.string() + ": " + std::strerror(e));
  }
  ::close(fd);
  if (do_fsync) fsync_dir(path.parent_path());
  return {};
}

// "ok", "eio", "mismatch", or "error: ..."
std::string read_back(const fs::path& path, const PatternKey& key, std::uint64_t blocks, std::size_t bs) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == EIO ? "eio" : std::string("error: open: ") + std::strerror(errno);
  std::vector<unsigned char> got(bs), want(bs);
  std::string result = "ok";
  for (std::uint64_t i = 0; i < blocks; ++i) {
    std::size_t done = 0;
    while (done < bs) {
      ssize_t r = ::pread(fd, got.data() + done, bs - done, static_cast<off_t>(i * bs + done));
      if (r < 0) {
        int e = errno;
        ::close(fd);
        return e == EIO ? "eio" : std::string("error: read: ") + std::strerror(e);
      }
      if (r == 0) {
        ::close(fd);
        return "error: file shorter than written";
      }
      done += static_cast<std::size_t>(r);
    }
    make_block(key, i, bs, want.data());
    if (got != want) result = "mismatch";
  }
  ::close(fd);
  return result;
}

struct Copy {
  std::string device;
  std::uint64_t offset;
};

double now_s(const Clock& c) { return c.wall_seconds(); }

}  // namespace

std::string recover_pending(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env) {
  auto m = read_marker(env.state_dir, name);
  if (!m) return "";
  std::string story = "found a pending cycle (phase " + m->phase + ")";
  const auto* t = cfg.find(name);
  if (!t) return story + " for a canary no longer in the config; left untouched";
  StackEnv senv{env.runner, env.tools, {}, env.command_timeout};
  StackOps ops(*t, senv);
  if (!is_online(*t, env.host)) {
    auto on = ops.bring_online();
    story += on ? "; brought the canary back online" : "; could not bring it online: " + on.error();
    if (!on) return story;  // keep the marker: try again next run
    wait_online(*t, env.host);
  }
  if (m->injection && m->phase != "cleaning") {
    const auto& inj = *m->injection;
    auto before = from_hex(inj.before_hex), after = from_hex(inj.after_hex);
    auto v = verify_canary(cfg, name, env.host, env.state_dir, &ops, true);
    if (!v) {
      story += "; could not re-verify the canary (" + v.error() + "), bytes not restored";
    } else if (before && after) {
      auto cur = read_direct(inj.device, inj.offset, after->size());
      if (!cur) {
        story += "; cannot read " + inj.device + ": " + cur.error();
      } else if (*cur == *after) {
        RawWriteRequest req{inj.device, inj.offset, *before, *after};
        auto w = raw_write(req, {{inj.device, inj.block_offset, inj.block_offset + inj.block_size}});
        story += w ? "; restored " + std::to_string(before->size()) + " bytes at " + inj.device + "@" +
                         std::to_string(inj.offset)
                   : "; restore failed: " + w.error();
      } else if (*cur == *before) {
        story += "; injected bytes at " + inj.device + "@" + std::to_string(inj.offset) +
                 " were already repaired or never written";
      } else {
        story += "; bytes at " + inj.device + "@" + std::to_string(inj.offset) + " changed since; left alone";
      }
    }
  }
  std::error_code ec;
  fs::remove(fs::path(t->mountpoint) / kCanaryFile, ec);
  fsync_dir(t->mountpoint);
  story += "; removed the canary file";
  if (m->counters_before == 0) {
    auto c = ops.counters();
    if (c && c->total() > 0) {
      auto cl = ops.clear_counters();
      story += cl ? "; cleared " + std::to_string(c->total()) + " error counts it had caused" : "; " + cl.error();
    }
  }
  remove_marker(env.state_dir, name);
  return story;
}

CycleReport run_cycle(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env) {
  CycleReport r;
  r.canary = name;
  r.started = now_s(env.clock);
  auto t_start = std::chrono::steady_clock::now();
  auto finish = [&](const std::string& verdict, const std::string& reason) {
    r.verdict = verdict;
    if (!reason.empty()) r.reason = reason;
    r.finished = now_s(env.clock);
    r.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    r.expectation_met = expectation_met(r.expect, r.verdict);
    return r;
  };
  try {
    r.recovery = recover_pending(cfg, name, env);
    if (fs::exists(inflight_path(env.state_dir, name)))
      return finish("error", "a pending cycle could not be cleaned up: " + r.recovery);
    const auto* t = cfg.find(name);
    if (!t) return finish("refused", "\"" + name + "\" is not a canary in the config; only configured canaries may be corrupted");
    r.fs = t->fs;
    r.layout = t->layout;
    r.expect = t->expect.empty() ? default_expectation(t->fs, t->layout) : t->expect;
    r.file_blocks = t->file_blocks;
    StackOps ops(*t, StackEnv{env.runner, env.tools, env.stop, env.command_timeout});
    // Cleanup must finish even after a stop request: its commands do not take the stop token.
    StackOps ops_nostop(*t, StackEnv{env.runner, env.tools, {}, env.command_timeout});

    auto v = verify_canary(cfg, name, env.host, env.state_dir, &ops, true);
    if (!v) return finish("refused", v.error());
    auto before_counters = ops.counters();
    if (!before_counters) return finish("error", before_counters.error());
    r.preexisting_errors = before_counters->total();

    struct statvfs sv {};
    if (::statvfs(t->mountpoint.c_str(), &sv) != 0) return finish("error", "statvfs " + t->mountpoint + " failed");
    std::size_t bs = static_cast<std::size_t>(sv.f_bsize);
    if (bs < 512 || bs > 65536 || bs % 512) bs = 4096;
    r.block_size = bs;
    PatternKey key{v->record.pattern_key, random_u64()};
    fs::path file = fs::path(t->mountpoint) / kCanaryFile;

    Marker mk;
    mk.phase = "started";
    mk.started = r.started;
    mk.nonce = key.nonce;
    mk.counters_before = before_counters->total();
    if (auto w = write_marker(env.state_dir, name, mk); !w) return finish("error", "cannot write in-flight marker: " + w.error());

    bool online = true;
    std::optional<Injection> inj;
    std::vector<unsigned char> inj_before, inj_after;
    // Any failure after this point goes through here: back online, undo the injection, delete the file.
    auto abort_cycle = [&](const std::string& verdict, const std::string& reason) {
      if (!online) {
        if (inj) {
          auto vv = verify_canary(cfg, name, env.host, env.state_dir, nullptr, false);
          if (vv) {
            RawWriteRequest req{inj->device, inj->offset, inj_before, inj_after};
            auto w = raw_write(req, {{inj->device, inj->block_offset, inj->block_offset + inj->block_size}});
            if (!w) r.cleanup_errors.push_back("restore: " + w.error());
          } else {
            r.cleanup_errors.push_back("restore skipped: " + vv.error());
          }
        }
        auto on = ops_nostop.bring_online();
        if (!on) {
          r.cleanup_errors.push_back(on.error());
          return finish(verdict, reason + " (and the canary could not be brought back online; the marker stays for the next run)");
        }
        wait_online(*t, env.host);
        online = true;
      }
      std::error_code ec;
      fs::remove(file, ec);
      fsync_dir(t->mountpoint);
      remove_marker(env.state_dir, name);
      return finish(verdict, reason);
    };

    // 1. write the canary file
    if (auto w = write_canary_file(file, key, t->file_blocks, bs, t->fs != "zfs"); !w) return abort_cycle("error", w.error());
    mk.phase = "written";
    (void)write_marker(env.state_dir, name, mk);
    if (env.stop.stop_requested()) return abort_cycle("error", "cancelled");

    // 3 (before 2, so that every copy is final on disk). Drop the caches: unmount / export.
    if (auto off = ops.take_offline(); !off) return abort_cycle("error", off.error());
    online = false;
    mk.phase = "offline";
    (void)write_marker(env.state_dir, name, mk);

    // 2. locate every physical copy of the chosen block
    std::uint64_t chosen = t->file_blocks / 2;
    auto want = make_block(key, chosen, bs);
    std::vector<Copy> copies;
    std::uint64_t other_blocks = 0;
    ScanOptions so;
    so.queue_depth = env.scan_queue_depth;
    so.stop = env.stop;
    for (const auto& m : v->members) {
      auto sr = scan_device(m.resolved, key.nonce, so);
      if (!sr) return abort_cycle("error", "scan of " + m.resolved + ": " + sr.error());
      r.scan_bytes += sr->bytes;
      r.scan_seconds += sr->seconds;
      for (const auto& h : sr->hits) {
        if (h.index != chosen) {
          ++other_blocks;
          continue;
        }
        auto blk = read_direct(m.resolved, h.offset, bs);
        if (blk && *blk == want) copies.push_back({m.resolved, h.offset});
      }
    }
    r.copies_found = copies.size();
    for (const auto& c : copies) r.copies.push_back(c.device + "@" + std::to_string(c.offset));
    if (copies.empty())
      return abort_cycle("not_injectable", "block " + std::to_string(chosen) + " of the canary file was not found on any member device (" +
                                               std::to_string(other_blocks) +
                                               " other canary blocks seen): compression, encryption or inline data?");
    if (env.stop.stop_requested()) return abort_cycle("error", "cancelled");

    // 4. corrupt a few bytes of ONE copy, through the gate and the raw writer
    auto vv = verify_canary(cfg, name, env.host, env.state_dir, nullptr, false);
    if (!vv) return abort_cycle("refused", vv.error());
    auto st = load_state(env.state_dir, name);
    const Copy& victim = copies[st.cycles % copies.size()];
    std::uint64_t within = std::min<std::uint64_t>(512, bs / 2);
    std::size_t nbytes = static_cast<std::size_t>(std::min<std::uint64_t>(t->corrupt_bytes, bs - within));
    auto cur = read_direct(victim.device, victim.offset + within, nbytes);
    if (!cur) return abort_cycle("error", cur.error());
    inj_before = *cur;
    inj_after = inj_before;
    for (auto& b : inj_after) b ^= 0xA5;
    Injection I;
    I.device = victim.device;
    I.offset = victim.offset + within;
    I.before_hex = to_hex(inj_before);
    I.after_hex = to_hex(inj_after);
    I.block_index = chosen;
    I.block_offset = victim.offset;
    I.block_size = bs;
    mk.phase = "injecting";
    mk.injection = I;
    if (auto w = write_marker(env.state_dir, name, mk); !w) return abort_cycle("error", "cannot write in-flight marker: " + w.error());
    inj = I;  // from here on, abort_cycle restores the bytes
    auto wr = raw_write(RawWriteRequest{I.device, I.offset, inj_after, inj_before},
                        {{I.device, I.block_offset, I.block_offset + bs}});
    if (!wr) {
      inj.reset();
      return abort_cycle(wr.error().rfind("refused", 0) == 0 ? "refused" : "error", wr.error());
    }
    r.injection = I;
    auto t_injected = std::chrono::steady_clock::now();
    mk.phase = "injected";
    (void)write_marker(env.state_dir, name, mk);
    if (env.crash_after_phase == "injected") return finish("error", "test: simulated crash after injection");
    if (const char* c = std::getenv("FSAUDIT_CANARY_CRASH_AFTER"); c && std::string(c) == "injected") ::raise(SIGKILL);

    // back online (mount / import) with cold caches
    if (auto on = ops_nostop.bring_online(); !on) return abort_cycle("error", on.error());
    online = true;
    if (!wait_online(*t, env.host)) return abort_cycle("error", "canary did not come back online at " + t->mountpoint);
    mk.phase = "online";
    (void)write_marker(env.state_dir, name, mk);
    auto raw_fixed = [&]() -> int {
      for (int i = 0; i < 20; ++i) {
        auto b = read_direct(I.device, I.offset, inj_before.size());
        if (!b) return -1;
        if (*b == inj_before) return 1;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      return 0;
    };

    // 5. read back through the filesystem
    auto c0 = ops_nostop.counters();
    r.read_result = read_back(file, key, t->file_blocks, bs);
    auto t_read = std::chrono::steady_clock::now();
    auto c1 = ops_nostop.counters();
    std::uint64_t read_delta = (c0 && c1 && c1->total() > c0->total()) ? c1->total() - c0->total() : 0;
    r.errors_counted_on_read = read_delta;
    std::string verdict;
    if (r.read_result == "eio") {
      verdict = "detected";
      r.detected_by = "read";
    } else if (r.read_result == "mismatch") {
      verdict = "silent";
    } else if (r.read_result == "ok") {
      verdict = read_delta > 0 ? "repaired" : "unverified";
      if (read_delta > 0) r.detected_by = "read";
    } else {
      return abort_cycle("error", "reading the canary back: " + r.read_result);
    }
    if (!r.detected_by.empty())
      r.time_to_detect_seconds = std::chrono::duration<double>(t_read - t_injected).count();
    if (verdict == "repaired") r.repair_verified = raw_fixed();

    // 6. scrub when the read did not settle it (or the read-repair is not on disk yet)
    bool want_scrub = verdict == "unverified" || verdict == "silent" || (verdict == "repaired" && r.repair_verified != 1);
    r.scrub_supported = ops.checksumming();
    if (want_scrub && r.scrub_supported && !env.stop.stop_requested()) {
      auto cs0 = ops_nostop.counters();
      auto so2 = ops.scrub();
      auto cs1 = ops_nostop.counters();
      r.scrub_ran = true;
      r.scrub_ok = so2.ok;
      r.scrub_seconds = so2.seconds;
      r.scrub_found = so2.errors_found;
      if (cs0 && cs1 && cs1->total() > cs0->total()) r.scrub_found = std::max(r.scrub_found, cs1->total() - cs0->total());
      r.scrub_repaired = so2.errors_repaired;
      r.scrub_uncorrectable = so2.uncorrectable;
      r.scrub_summary = so2.ok ? so2.summary : so2.error;
      r.repair_verified = raw_fixed();
      if (verdict == "unverified" && r.scrub_found > 0) {
        r.detected_by = "scrub";
        r.time_to_detect_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_injected).count();
        verdict = r.repair_verified == 1 ? "repaired" : "detected";
      }
    } else if (!r.scrub_supported) {
      r.scrub_summary = t->fs + " has no data scrub (unsupported)";
    }
    if (r.repair_verified == -1 && verdict != "repaired") r.repair_verified = raw_fixed();
    mk.phase = "cleaning";
    (void)write_marker(env.state_dir, name, mk);

    // 7. clean up: delete the file, clear only the counters this cycle caused
    std::error_code ec;
    fs::remove(file, ec);
    if (ec) r.cleanup_errors.push_back("remove " + file.string() + ": " + ec.message());
    fsync_dir(t->mountpoint);
    ::sync();
    auto cend = ops_nostop.counters();
    if (cend && r.preexisting_errors == 0 && cend->total() > 0) {
      if (auto cl = ops_nostop.clear_counters(); cl) r.caused_errors_cleared = cend->total();
      else r.cleanup_errors.push_back(cl.error());
    }
    remove_marker(env.state_dir, name);
    std::string why;
    if (verdict == "silent") why = "wrong data returned with success";
    if (verdict == "unverified") why = "correct data, but no error was seen" + std::string(r.scrub_ran ? " even after a scrub" : "");
    return finish(verdict, why);
  } catch (const std::exception& e) {
    return finish("error", std::string("internal error: ") + e.what());
  }
}

}  // namespace fsaudit::canary
