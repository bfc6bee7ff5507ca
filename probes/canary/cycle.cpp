#include "probes/canary/cycle.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon/core/files.hpp"
#include "probes/canary/identity.hpp"
#include "probes/canary/lock.hpp"
#include "probes/canary/marker.hpp"
#include "probes/canary/pattern.hpp"
#include "probes/canary/raw_writer.hpp"
#include "probes/canary/safety.hpp"
#include "probes/canary/scanner.hpp"
#include "probes/canary/stack.hpp"
#include "probes/canary/state_json.hpp"

namespace fsaudit::canary {

namespace fs = std::filesystem;
using nlohmann::json;

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::repaired: return "repaired";
    case Verdict::detected: return "detected";
    case Verdict::silent: return "silent";
    case Verdict::unverified: return "unverified";
    case Verdict::not_injectable: return "not_injectable";
    case Verdict::refused: return "refused";
    case Verdict::error: return "error";
  }
  return "error";
}

std::optional<Verdict> verdict_from(std::string_view s) {
  for (auto v : verdicts())
    if (s == to_string(v)) return v;
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& o, Verdict v) { return o << to_string(v); }

const std::vector<Verdict>& verdicts() {
  static const std::vector<Verdict> v = {Verdict::repaired, Verdict::detected,       Verdict::silent, Verdict::unverified,
                                         Verdict::not_injectable, Verdict::refused, Verdict::error};
  return v;
}

fs::path inflight_path(const fs::path& state_dir, const std::string& name) {
  return canary_state_dir(state_dir, name) / "inflight.json";
}

// ---------------------------------------------------------------- report (de)serialisation
std::string CycleReport::to_json() const {
  json j{{"canary", canary},
         {"fs", fs},
         {"layout", layout},
         {"expect", expect},
         {"verdict", to_string(verdict)},
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
         {"expected_copies", expected_copies},
         {"preexisting_errors", preexisting_errors},
         {"recovery", recovery},
         {"cleanup_errors", cleanup_errors}};
  if (injection) j["injection"] = injection_json(*injection);
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
    r.verdict = verdict_from(j.value("verdict", "error")).value_or(Verdict::error);
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
    r.expected_copies = j.value("expected_copies", std::uint64_t{0});
    r.preexisting_errors = j.value("preexisting_errors", std::uint64_t{0});
    r.recovery = j.value("recovery", "");
    r.cleanup_errors = j.value("cleanup_errors", std::vector<std::string>{});
    if (j.contains("injection"))
      if (auto i = parse_injection(j["injection"])) r.injection = *i;
    return r;
  } catch (...) {
    return std::nullopt;
  }
}

// ---------------------------------------------------------------- persistent state
CanaryState load_state(const fs::path& state_dir, const std::string& name) {
  CanaryState s;
  // Root answers canary-status from it: never through a symlink, never more than a state file's size.
  auto t = state_json::read_state_file(canary_state_dir(state_dir, name) / "state.json");
  if (!t || !*t) return s;
  try {
    json j = json::parse(**t);
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
  s.runs[std::string(to_string(r.verdict))]++;
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

Result<void> write_marker(const fs::path& state_dir, const std::string& name, const Marker& m) {
  std::error_code ec;
  fs::create_directories(canary_state_dir(state_dir, name), ec);
  return write_file_atomic(inflight_path(state_dir, name), marker_text(m), 0600);
}

// nullopt: no marker. A marker that cannot be read or parsed comes back with phase "unreadable" and
// the reason (it may hide an injection that needs restoring).
std::optional<Marker> read_marker(const fs::path& state_dir, const std::string& name) {
  auto path = inflight_path(state_dir, name);
  auto t = state_json::read_state_file(path);
  if (t && !*t) return std::nullopt;
  auto parsed = t ? parse_marker(**t) : Result<Marker>(err(t.error()));
  if (parsed) return *parsed;
  Marker m;
  m.phase = "unreadable";
  m.unreadable = parsed.error();
  return m;
}

void fsync_dir(const fs::path& d) {
  int dfd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void remove_marker(const fs::path& state_dir, const std::string& name) {
  std::error_code ec;
  fs::remove(inflight_path(state_dir, name), ec);
  fsync_dir(canary_state_dir(state_dir, name));
}

bool is_online(const config::CanaryTarget& t, const HostPaths& host) {
  auto m = mounted_at(host, t.mountpoint);
  return m && *m;
}

bool wait_online(const config::CanaryTarget& t, const HostPaths& host, int tenths = 100) {
  for (int i = 0; i < tenths; ++i) {
    if (is_online(t, host)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// The canary file is created fresh (O_EXCL) and never through a symlink.
Result<void> write_canary_file(const fs::path& path, const PatternKey& key, std::uint64_t blocks, std::size_t bs,
                               bool do_fsync) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return err("cannot remove an old " + path.string() + ": " + std::strerror(errno));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
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

void remove_canary_file(const config::CanaryTarget& t, std::vector<std::string>* errors) {
  fs::path file = fs::path(t.mountpoint) / kCanaryFile;
  if (::unlink(file.c_str()) != 0 && errno != ENOENT && errors)
    errors->push_back("remove " + file.string() + ": " + std::strerror(errno));
  fsync_dir(t.mountpoint);
}

struct Copy {
  std::string device;
  std::uint64_t offset;
};

double now_s(const Clock& c) { return c.wall_seconds(); }

void phase(CycleEnv& env, const std::string& p) {
  if (env.on_phase) env.on_phase(p);
}

const DeviceIdentity* find_member(const Verified& v, const std::string& device) {
  for (const auto& m : v.members)
    if (m.resolved == device) return &m;
  return nullptr;
}

// The located canary block as it must look with the injected bytes in place. Only an injection as a
// cycle makes one qualifies: a filesystem block size, the bytes outside the block's header and at most
// half the block, so the check against the device compares the header and most of the block with
// what the root-owned pattern key says, never only bytes the record chose.
bool injection_as_a_cycle_makes(const Injection& inj, std::size_t bytes) {
  return valid_block_size(inj.block_size) && bytes > 0 && bytes <= inj.block_size / 2 &&
         inj.offset >= inj.block_offset + kHeaderBytes && inj.offset - inj.block_offset <= inj.block_size - bytes;
}

std::optional<std::vector<unsigned char>> injected_block(const PatternKey& key, const Injection& inj,
                                                         const std::vector<unsigned char>& after) {
  if (!injection_as_a_cycle_makes(inj, after.size())) return std::nullopt;
  auto blk = make_block(key, inj.block_index, static_cast<std::size_t>(inj.block_size));
  std::copy(after.begin(), after.end(), blk.begin() + static_cast<std::ptrdiff_t>(inj.offset - inj.block_offset));
  return blk;
}

// Puts `before` back at the injection, through a grant for the verified member (offline: O_EXCL).
// `block` (when known) is what the whole located block must hold first.
Result<void> restore_bytes(const Verified& v, const Injection& inj, const std::vector<unsigned char>& before,
                           std::optional<std::vector<unsigned char>> block, CycleEnv& env) {
  const auto* member = find_member(v, inj.device);
  if (!member) return err(inj.device + " is not a verified member of the canary; not writing to it");
  auto g = grant_for(*member, inj.block_offset, inj.block_offset + inj.block_size);
  if (!g) return err(g.error());
  g->exclusive = true;
  g->block = std::move(block);
  phase(env, "restoring");
  auto w = raw_write(RawWriteRequest{inj.device, inj.offset, before, std::nullopt}, {*g});
  if (!w) return err(w.error());
  return {};
}

// True when every counter that rose since `before` belongs to the injected device.
bool only_injected_device_counted(const Counters& before, const Counters& after, const std::string& device,
                                  std::string* others) {
  bool ok = true;
  for (const auto& d : devices_with_new_errors(before, after))
    if (d != device) {
      ok = false;
      if (others) *others += (others->empty() ? "" : ", ") + d;
    }
  return ok;
}

}  // namespace

std::string recover_pending(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env) {
  auto m = read_marker(env.state_dir, name);
  if (!m) return "";
  std::string story = "found a pending cycle (phase " + m->phase;
  if (m->pid > 0)
    story += ", pid " + std::to_string(m->pid) +
             (m->boot_id.empty() || m->boot_id != boot_id(env.host) ? " on an earlier boot" : " on this boot");
  story += ")";
  const auto* t = cfg.find(name);
  if (!t) return story + " for a canary no longer in the config; left untouched";
  auto made = make_canary_ops(*t, StackEnv{env.runner, env.tools, {}, env.command_timeout}, env.host);
  if (!made) return story + "; " + made.error() + "; left untouched";
  CanaryOps& ops = **made;
  // Until the canary is verified, nothing is written, removed or cleared: a mount point that is
  // not the canary belongs to some other filesystem.
  auto keep = [&](const std::string& why) {
    return story + "; " + why + "; nothing removed or cleared, the marker stays for the next run";
  };
  phase(env, "recovering");
  // An unreadable marker may hide an injection that needs restoring: a person decides.
  if (m->phase == "unreadable")
    return keep("the marker " + inflight_path(env.state_dir, name).string() + " is unreadable (" + m->unreadable +
                "); inspect it, then remove it");
  bool online = is_online(*t, env.host);
  auto v = verify_canary(cfg, name, env.host, env.state_dir, ops, online);
  if (!v) return keep(std::string("cannot verify the canary ") + (online ? "online" : "offline") + ": " + v.error());

  if (m->injection && m->phase != "cleaning") {
    const auto& inj = *m->injection;
    auto before = from_hex(inj.before_hex), after = from_hex(inj.after_hex);
    if (!before || !after || before->size() != after->size() || before->empty())
      return keep("the marker's injection record is unreadable");
    // Before anything is taken offline or read: a record no cycle could have written is not acted on.
    if (!injection_as_a_cycle_makes(inj, after->size()))
      return keep("the marker's injection is not one a cycle makes (a filesystem block size, bytes outside the block header, at most half the block)");
    if (online) {
      // The restore goes to a device nothing holds: take the canary offline first.
      if (auto off = ops.take_offline(); !off) return keep("cannot take the canary offline to restore it: " + off.error());
      online = false;
      v = verify_canary(cfg, name, env.host, env.state_dir, ops, false);
      if (!v) return keep("cannot verify the canary offline: " + v.error());
    }
    if (!find_member(*v, inj.device)) return keep("the marker names " + inj.device + ", which is not a verified member of the canary");
    auto cur = read_direct(inj.device, inj.offset, after->size());
    if (!cur) return keep("cannot read " + inj.device + ": " + cur.error());
    if (*cur == *after) {
      auto blk = injected_block(PatternKey{v->record.pattern_key, m->nonce}, inj, *after);
      if (!blk) return keep("the marker's injection is not one a cycle makes (a filesystem block size, bytes outside the block header, at most half the block)");
      auto w = restore_bytes(*v, inj, *before, blk, env);
      if (!w) return keep("restore failed: " + w.error());
      story += "; restored " + std::to_string(before->size()) + " bytes at " + inj.device + "@" + std::to_string(inj.offset);
    } else if (*cur == *before) {
      story += "; injected bytes at " + inj.device + "@" + std::to_string(inj.offset) + " were already repaired or never written";
    } else {
      story += "; bytes at " + inj.device + "@" + std::to_string(inj.offset) + " changed since; left alone";
    }
  }
  if (!online) {
    if (auto on = ops.bring_online(); !on) return keep("could not bring it online: " + on.error());
    if (!wait_online(*t, env.host)) return keep("it did not appear at " + t->mountpoint + " after mounting");
    story += "; brought the canary back online";
  }
  auto vo = verify_canary(cfg, name, env.host, env.state_dir, ops, true);
  if (!vo) return keep("the canary is not verified online: " + vo.error());
  remove_canary_file(*t, nullptr);
  story += "; removed the canary file";
  if (m->injection && m->counters_before == 0) {
    auto c = ops.counters();
    if (c && c->total() > 0) {
      Counters b;
      b.per_device = m->counters_before_devices;
      std::string others;
      if (!only_injected_device_counted(b, *c, m->injection->device, &others)) {
        story += "; error counts rose on " + others + ", which the canary did not corrupt: not cleared";
      } else {
        auto cl = ops.clear_counters();
        story += cl ? "; cleared " + std::to_string(c->total()) + " error counts it had caused" : "; " + cl.error();
      }
    }
  }
  remove_marker(env.state_dir, name);
  return story;
}

namespace {

// Every physical copy of block `chosen` on the verified members: the scanner finds the blocks of
// this cycle's file by nonce, and a copy counts only when it is byte-for-byte the block written.
// Adds the scan's bytes and time to `r`; `other_blocks` counts the file's other blocks seen.
Result<std::vector<Copy>> locate_copies(const Verified& vv, const PatternKey& key, std::uint64_t chosen,
                                        const std::vector<unsigned char>& want, CycleEnv& env, CycleReport& r,
                                        std::uint64_t& other_blocks) {
  std::vector<Copy> copies;
  ScanOptions so;
  so.queue_depth = env.scan_queue_depth;
  so.stop = env.stop;
  for (const auto& m : vv.members) {
    auto sr = scan_device(m.resolved, key.nonce, so);
    if (!sr) return err("scan of " + m.resolved + ": " + sr.error());
    r.scan_bytes += sr->bytes;
    r.scan_seconds += sr->seconds;
    for (const auto& h : sr->hits) {
      if (h.index != chosen) {
        ++other_blocks;
        continue;
      }
      auto blk = read_direct(m.resolved, h.offset, want.size());
      if (blk && *blk == want) copies.push_back({m.resolved, h.offset});
    }
  }
  return copies;
}

// Which bytes of the located copy to flip: up to `corrupt_bytes` from 512 bytes into the block
// (half a small block), each XORed with 0xA5. `before`/`after` get the original and corrupt bytes.
Injection plan_injection(const Copy& victim, const std::vector<unsigned char>& block, std::uint64_t index,
                         std::uint64_t corrupt_bytes, std::vector<unsigned char>& before,
                         std::vector<unsigned char>& after) {
  std::uint64_t bs = block.size();
  std::uint64_t within = std::min<std::uint64_t>(512, bs / 2);
  std::size_t nbytes = static_cast<std::size_t>(std::min<std::uint64_t>(corrupt_bytes, bs - within));
  before.assign(block.begin() + static_cast<std::ptrdiff_t>(within),
                block.begin() + static_cast<std::ptrdiff_t>(within + nbytes));
  after = before;
  for (auto& b : after) b ^= 0xA5;
  Injection I;
  I.device = victim.device;
  I.offset = victim.offset + within;
  I.before_hex = to_hex(before);
  I.after_hex = to_hex(after);
  I.block_index = index;
  I.block_offset = victim.offset;
  I.block_size = bs;
  return I;
}

// What reading the file back says on its own: EIO is detected, wrong bytes are silent, right bytes
// are repaired when the error counters rose meanwhile and unverified when not. nullopt when the
// read itself failed.
std::optional<Verdict> verdict_of_read(const std::string& read_result, std::uint64_t counted_errors) {
  if (read_result == "eio") return Verdict::detected;
  if (read_result == "mismatch") return Verdict::silent;
  if (read_result == "ok") return counted_errors > 0 ? Verdict::repaired : Verdict::unverified;
  return std::nullopt;
}

// Clears the error counters this cycle caused, and only those: when a device other than the
// injected one counted errors too, that is a real error and the counters stay.
void clear_caused_counters(CanaryOps& ops, const Counters& before, const std::string& injected_device,
                           CycleReport& r) {
  auto cend = ops.counters();
  if (!cend || r.preexisting_errors != 0 || cend->total() == 0) return;
  std::string others;
  if (!only_injected_device_counted(before, *cend, injected_device, &others)) {
    r.cleanup_errors.push_back("error counts rose on " + others +
                               ", which the canary did not corrupt: a real error? Counters not cleared");
  } else if (auto cl = ops.clear_counters(); cl) {
    r.caused_errors_cleared = cend->total();
  } else {
    r.cleanup_errors.push_back(cl.error());
  }
}

// One cycle of one canary, phase by phase. A phase returns the final report when the cycle ends
// there, nullopt to go on; once anything is on disk, an ending goes through abort() (undo, back
// online, verify, delete the file; the marker goes only when all of that worked).
class Cycle {
 public:
  Cycle(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env)
      : cfg_(cfg), name_(name), env_(env), t_start_(std::chrono::steady_clock::now()) {
    r_.canary = name;
    r_.started = now_s(env.clock);
  }

  CycleReport run() {
    try {
      for (auto step : {&Cycle::prepare, &Cycle::mark, &Cycle::write_file, &Cycle::go_offline, &Cycle::locate,
                        &Cycle::inject, &Cycle::come_online})
        if (auto end = (this->*step)()) return *end;
      Verdict verdict = Verdict::error;
      if (auto end = read_back_file(verdict)) return *end;
      scrub(verdict);
      return clean_up(verdict);
    } catch (const std::exception& e) {
      return finish(Verdict::error, std::string("internal error: ") + e.what());
    }
  }

 private:
  using End = std::optional<CycleReport>;

  CycleReport finish(Verdict verdict, const std::string& reason) {
    r_.verdict = verdict;
    if (!reason.empty()) r_.reason = reason;
    r_.finished = now_s(env_.clock);
    r_.duration_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start_).count();
    r_.expectation_met = expectation_met(r_.expect, std::string(to_string(r_.verdict)));
    return r_;
  }

  void advance(const std::string& p) {
    mk_.phase = p;
    (void)write_marker(env_.state_dir, name_, mk_);
    phase(env_, p);
  }

  // Any failure after the marker: undo the injection while offline, back online, verify, delete the
  // file. The marker goes only when all of that worked.
  CycleReport abort(Verdict verdict, const std::string& reason) {
    bool clean = true;
    if (!online_) {
      if (inj_) clean = undo_injection();
      auto on = ops_nostop_->bring_online();
      if (!on) {
        r_.cleanup_errors.push_back(on.error());
        return finish(verdict, reason + " (and the canary could not be brought back online; the marker stays for the next run)");
      }
      if (!wait_online(*t_, env_.host)) {
        r_.cleanup_errors.push_back("the canary did not appear at " + t_->mountpoint);
        return finish(verdict, reason + " (and the canary did not come back online; the marker stays for the next run)");
      }
      online_ = true;
    }
    auto vo = verify_canary(cfg_, name_, env_.host, env_.state_dir, *ops_nostop_, true);
    if (!vo) {
      r_.cleanup_errors.push_back("not verified online: " + vo.error());
      return finish(verdict, reason + " (the canary is not verified online; nothing removed, the marker stays)");
    }
    remove_canary_file(*t_, &r_.cleanup_errors);
    if (!clean) return finish(verdict, reason + " (cleanup incomplete; the marker stays for the next run)");
    remove_marker(env_.state_dir, name_);
    return finish(verdict, reason);
  }

  // Offline: puts the original bytes back where they differ. False when that could not be done.
  bool undo_injection() {
    auto vv = verify_canary(cfg_, name_, env_.host, env_.state_dir, *ops_nostop_, false);
    if (!vv) {
      r_.cleanup_errors.push_back("restore skipped: " + vv.error());
      return false;
    }
    auto cur = read_direct(inj_->device, inj_->offset, inj_before_.size());
    if (cur && *cur == inj_before_) return true;
    auto blk = inj_complete_ ? injected_block(key_, *inj_, inj_after_) : std::nullopt;
    auto w = restore_bytes(*vv, *inj_, inj_before_, blk, env_);
    if (!w) {
      r_.cleanup_errors.push_back("restore: " + w.error());
      return false;
    }
    return true;
  }

  // The canary is configured, not busy, has nothing pending, verifies online; the counters before.
  End prepare() {
    t_ = cfg_.find(name_);
    if (!t_) {
      if (fs::exists(inflight_path(env_.state_dir, name_)))
        r_.recovery = "found a pending cycle for a canary no longer in the config; left untouched";
      return finish(Verdict::refused, "\"" + name_ + "\" is not a canary in the config; only configured canaries may be corrupted");
    }
    // One cycle per canary at a time, recovery included: a live cycle's marker is not a crash.
    auto lock = CanaryLock::acquire(env_.state_dir, *t_, env_.host);
    if (!lock) {
      r_.busy = true;
      return finish(Verdict::refused, lock.error());
    }
    lock_.emplace(std::move(*lock));
    r_.recovery = recover_pending(cfg_, name_, env_);
    if (fs::exists(inflight_path(env_.state_dir, name_)))
      return finish(Verdict::error, "a pending cycle could not be cleaned up: " + r_.recovery);
    r_.fs = t_->fs;
    r_.layout = t_->layout;
    r_.expect = t_->expect;
    r_.file_blocks = t_->file_blocks;
    auto ops = make_canary_ops(*t_, StackEnv{env_.runner, env_.tools, env_.stop, env_.command_timeout}, env_.host);
    // Cleanup must finish even after a stop request: its commands do not take the stop token.
    auto ops_nostop = make_canary_ops(*t_, StackEnv{env_.runner, env_.tools, {}, env_.command_timeout}, env_.host);
    if (!ops) return finish(Verdict::error, ops.error());
    if (!ops_nostop) return finish(Verdict::error, ops_nostop.error());
    ops_ = std::move(*ops);
    ops_nostop_ = std::move(*ops_nostop);
    // The stack's health first: a member missing makes the member check below fail too, with a
    // reason that does not say what is wrong with the pool.
    auto model = ops_->model();
    if (model && !model->healthy()) return refuse_unhealthy(*model);
    auto v = verify_canary(cfg_, name_, env_.host, env_.state_dir, *ops_, true);
    if (!v) return finish(Verdict::refused, v.error());
    if (auto why = adopt_stack(model); why) return why;
    auto before = ops_->counters();
    if (!before) return finish(Verdict::error, before.error());
    before_counters_ = *before;
    r_.preexisting_errors = before_counters_.total();

    struct statvfs sv {};
    if (::statvfs(t_->mountpoint.c_str(), &sv) != 0) return finish(Verdict::error, "statvfs " + t_->mountpoint + " failed");
    bs_ = static_cast<std::size_t>(sv.f_bsize);
    if (!valid_block_size(bs_)) bs_ = 4096;
    r_.block_size = bs_;
    key_ = PatternKey{v->record.pattern_key, random_u64()};
    file_ = fs::path(t_->mountpoint) / kCanaryFile;
    return std::nullopt;
  }

  // What the filesystem says it is, read before anything is exported, unmounted or written. A stack
  // that is not whole is refused: a cycle would prove nothing about it, and its restore could land on
  // the one good copy.
  End refuse_unhealthy(const stack::StackModel& m) {
    if (r_.expect.empty()) r_.expect = std::string(stack::to_string(m.expectation()));  // from the design
    return finish(Verdict::refused, "the canary's stack is not healthy (" + std::string(stack::to_string(m.health)) +
                                        "): " + m.reason);
  }

  // The expectation and the copies to find come from the stack, not from the layout word.
  End adopt_stack(const Result<stack::StackModel>& m) {
    if (!m) return finish(Verdict::refused, "cannot read the health of the canary's stack: " + m.error());
    if (r_.expect.empty()) r_.expect = std::string(stack::to_string(m->expectation()));
    if (!stack::layout_matches(t_->fs, t_->layout, m->layout))
      return finish(Verdict::error, "the configured layout " + t_->layout + " is not the filesystem's (" + m->layout +
                                        "): the configured layout does not match the filesystem");
    r_.expected_copies = m->copies.value_or(0);
    return std::nullopt;
  }

  End mark() {
    mk_.phase = "started";
    mk_.started = r_.started;
    mk_.nonce = key_.nonce;
    mk_.counters_before = before_counters_.total();
    mk_.counters_before_devices = before_counters_.per_device;
    mk_.pid = static_cast<long>(::getpid());
    mk_.boot_id = boot_id(env_.host);
    if (auto w = write_marker(env_.state_dir, name_, mk_); !w) return finish(Verdict::error, "cannot write in-flight marker: " + w.error());
    phase(env_, "marked");
    return std::nullopt;
  }

  // 1. write the canary file
  End write_file() {
    if (auto w = write_canary_file(file_, key_, t_->file_blocks, bs_, ops_->fsync_before_offline()); !w) return abort(Verdict::error, w.error());
    advance("written");
    if (env_.stop.stop_requested()) return abort(Verdict::error, "cancelled");
    return std::nullopt;
  }

  // 3 (before 2, so that every copy is final on disk). Drop the caches: unmount / export.
  End go_offline() {
    if (auto off = ops_->take_offline(); !off) return abort(Verdict::error, off.error());
    online_ = false;
    advance("offline");
    // The offline re-check: the scan and the write go to the members it verified, nothing else.
    auto vv = verify_canary(cfg_, name_, env_.host, env_.state_dir, *ops_nostop_, false);
    if (!vv) return abort(Verdict::refused, vv.error());
    vv_.emplace(std::move(*vv));
    return std::nullopt;
  }

  // 2. locate every physical copy of the chosen block
  End locate() {
    chosen_ = t_->file_blocks / 2;
    want_ = make_block(key_, chosen_, bs_);
    std::uint64_t other_blocks = 0;
    auto located = locate_copies(*vv_, key_, chosen_, want_, env_, r_, other_blocks);
    if (!located) return abort(Verdict::error, located.error());
    copies_ = std::move(*located);
    r_.copies_found = copies_.size();
    for (const auto& c : copies_) r_.copies.push_back(c.device + "@" + std::to_string(c.offset));
    if (copies_.empty())
      return abort(Verdict::not_injectable, "block " + std::to_string(chosen_) + " of the canary file was not found on any member device (" +
                                                std::to_string(other_blocks) +
                                                " other canary blocks seen): compression, encryption or inline data?");
    // A layout that keeps N copies but shows another number is not the stack the verdict would describe.
    if (r_.expected_copies != 0 && r_.copies_found != r_.expected_copies)
      return abort(Verdict::error, "found " + std::to_string(r_.copies_found) + " copies of block " + std::to_string(chosen_) +
                                       " but the filesystem keeps " + std::to_string(r_.expected_copies) +
                                       ": the members scanned are not the filesystem's");
    if (env_.stop.stop_requested()) return abort(Verdict::error, "cancelled");
    return std::nullopt;
  }

  // 4. corrupt a few bytes of ONE copy, through the gate and the raw writer
  End inject() {
    auto st = load_state(env_.state_dir, name_);
    const Copy& victim = copies_[st.cycles % copies_.size()];
    const DeviceIdentity* member = find_member(*vv_, victim.device);
    if (!member) return abort(Verdict::refused, victim.device + " is not a verified member of the canary");
    Injection I = plan_injection(victim, want_, chosen_, t_->corrupt_bytes, inj_before_, inj_after_);
    auto grant = grant_for(*member, victim.offset, victim.offset + bs_);
    if (!grant) return abort(Verdict::refused, grant.error());
    grant->block = want_;       // the whole located block, compared through the descriptor that writes
    grant->exclusive = true;    // offline: a mount or another holder makes the open fail
    mk_.phase = "injecting";
    mk_.injection = I;
    if (auto w = write_marker(env_.state_dir, name_, mk_); !w) return abort(Verdict::error, "cannot write in-flight marker: " + w.error());
    inj_ = I;  // from here on, abort() restores the bytes (when they differ from the original)
    auto wr = raw_write(RawWriteRequest{I.device, I.offset, inj_after_, inj_before_}, {*grant});
    if (!wr) return abort(wr.kind() == ErrorKind::refused ? Verdict::refused : Verdict::error, wr.error());
    inj_complete_ = true;
    r_.injection = I;
    t_injected_ = std::chrono::steady_clock::now();
    advance("injected");
    return std::nullopt;
  }

  // back online (mount / import) with cold caches
  End come_online() {
    if (auto on = ops_nostop_->bring_online(); !on) return abort(Verdict::error, on.error());
    if (!wait_online(*t_, env_.host)) return abort(Verdict::error, "canary did not come back online at " + t_->mountpoint);
    online_ = true;
    if (auto von = verify_canary(cfg_, name_, env_.host, env_.state_dir, *ops_nostop_, true); !von)
      return abort(Verdict::refused, "after mounting: " + von.error());
    advance("online");
    return std::nullopt;
  }

  // 1 when the original bytes are back on disk at the injection (within 2 s), 0 when not, -1 unreadable.
  int raw_fixed() {
    for (int i = 0; i < 20; ++i) {
      auto b = read_direct(inj_->device, inj_->offset, inj_before_.size());
      if (!b) return -1;
      if (*b == inj_before_) return 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return 0;
  }

  // 5. read back through the filesystem
  End read_back_file(Verdict& verdict) {
    auto c0 = ops_nostop_->counters();
    r_.read_result = read_back(file_, key_, t_->file_blocks, bs_);
    auto t_read = std::chrono::steady_clock::now();
    auto c1 = ops_nostop_->counters();
    std::uint64_t read_delta = (c0 && c1 && c1->total() > c0->total()) ? c1->total() - c0->total() : 0;
    r_.errors_counted_on_read = read_delta;
    auto read_verdict = verdict_of_read(r_.read_result, read_delta);
    if (!read_verdict) return abort(Verdict::error, "reading the canary back: " + r_.read_result);
    verdict = *read_verdict;
    if (verdict == Verdict::detected || verdict == Verdict::repaired) r_.detected_by = "read";
    if (!r_.detected_by.empty())
      r_.time_to_detect_seconds = std::chrono::duration<double>(t_read - t_injected_).count();
    if (verdict == Verdict::repaired) r_.repair_verified = raw_fixed();
    return std::nullopt;
  }

  // 6. scrub when the read did not settle it (or the read-repair is not on disk yet)
  void scrub(Verdict& verdict) {
    bool want_scrub = verdict == Verdict::unverified || verdict == Verdict::silent || (verdict == Verdict::repaired && r_.repair_verified != 1);
    r_.scrub_supported = ops_->checksumming();
    if (want_scrub && r_.scrub_supported && !env_.stop.stop_requested()) {
      auto cs0 = ops_nostop_->counters();
      phase(env_, "scrubbing");
      auto so2 = ops_->scrub();
      auto cs1 = ops_nostop_->counters();
      r_.scrub_ran = true;
      r_.scrub_ok = so2.ok;
      r_.scrub_seconds = so2.seconds;
      r_.scrub_found = so2.errors_found;
      if (cs0 && cs1 && cs1->total() > cs0->total()) r_.scrub_found = std::max(r_.scrub_found, cs1->total() - cs0->total());
      r_.scrub_repaired = so2.errors_repaired;
      r_.scrub_uncorrectable = so2.uncorrectable;
      r_.scrub_summary = so2.ok ? so2.summary : so2.error;
      r_.repair_verified = raw_fixed();
      if (verdict == Verdict::unverified && r_.scrub_found > 0) {
        r_.detected_by = "scrub";
        r_.time_to_detect_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_injected_).count();
        verdict = r_.repair_verified == 1 ? Verdict::repaired : Verdict::detected;
      }
    } else if (!r_.scrub_supported) {
      r_.scrub_summary = t_->fs + " has no data scrub (unsupported)";
    }
    if (r_.repair_verified == -1 && verdict != Verdict::repaired) r_.repair_verified = raw_fixed();
  }

  // 7. clean up: delete the file, clear only the counters this cycle caused (on the injected
  // device only: a count elsewhere is a real error that arrived during the cycle)
  CycleReport clean_up(Verdict verdict) {
    advance("cleaning");
    remove_canary_file(*t_, &r_.cleanup_errors);
    ::sync();
    clear_caused_counters(*ops_nostop_, before_counters_, inj_->device, r_);
    remove_marker(env_.state_dir, name_);
    std::string why;
    if (verdict == Verdict::silent) why = "wrong data returned with success";
    if (verdict == Verdict::unverified) why = "correct data, but no error was seen" + std::string(r_.scrub_ran ? " even after a scrub" : "");
    return finish(verdict, why);
  }

  const config::CanaryConfig& cfg_;
  const std::string& name_;
  CycleEnv& env_;
  CycleReport r_;
  std::chrono::steady_clock::time_point t_start_, t_injected_;
  const config::CanaryTarget* t_ = nullptr;
  std::optional<CanaryLock> lock_;  // held until the cycle object ends
  std::unique_ptr<CanaryOps> ops_, ops_nostop_;
  Counters before_counters_;
  std::optional<Verified> vv_;  // the offline verification: the scan and the write go to its members
  std::size_t bs_ = 0;
  PatternKey key_;
  fs::path file_;
  Marker mk_;
  bool online_ = true;
  std::optional<Injection> inj_;
  bool inj_complete_ = false;  // the injected bytes are known to be on disk exactly
  std::vector<unsigned char> inj_before_, inj_after_;
  std::uint64_t chosen_ = 0;
  std::vector<unsigned char> want_;
  std::vector<Copy> copies_;
};

}  // namespace

CycleReport run_cycle(const config::CanaryConfig& cfg, const std::string& name, CycleEnv& env) {
  return Cycle(cfg, name, env).run();
}

}  // namespace fsaudit::canary
