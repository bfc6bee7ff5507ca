#include "probes/latency/probe.hpp"
#include "daemon/core/fstype.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "daemon/core/files.hpp"
#include "daemon/core/helper_client.hpp"
#include "daemon/core/spare_threads.hpp"
#include "probes/latency/sampler_child.hpp"
#include "probes/latency/stream.hpp"

namespace fsaudit::latency {

namespace {
constexpr const char* kHistHelp =
    "Latency of one 4 KiB write at a random offset of the stack's probe file followed by fsync (io_uring WRITE "
    "linked to FSYNC, or an O_DSYNC write), measured with CLOCK_MONOTONIC";
constexpr const char* kWindowHelp =
    "Rolling-window percentile (nearest rank) of the fsync sample latency over latency.window";
// The plan is rebuilt when the mount table changes, and at least this often (sysfs may change alone:
// an md array or a device-mapper name under an unchanged mount). Each replan reads sysfs for every
// watched mount, so not every minute on a host with 1,000 of them.
constexpr auto kReplanEvery = std::chrono::minutes(5);
}  // namespace

// ---- settings -------------------------------------------------------------------------------------

SamplerSettings SamplerSettings::from(const config::LatencyConfig& c) {
  SamplerSettings s;
  s.samples = c.samples_per_run;
  s.file_size = c.probe_file_size;
  s.mode = parse_mode(c.mode).value_or(Mode::io_uring_fsync);
  s.direct_reads = c.direct_reads;
  s.window = c.window;
  s.detail = c.detail == "full" ? Detail::full : c.detail == "compact" ? Detail::compact : Detail::summary;
  s.fill_threshold = c.fill_threshold;
  s.dir_name = c.dir_name;
  s.interval = c.interval;
  s.timeout = c.timeout;
  s.stack_writes_per_second = c.budget.stack_writes_per_second;
  s.writes_per_second = c.budget.writes_per_second;
  s.bytes_per_second = c.budget.bytes_per_second;
  s.parallel = c.parallel;
  return s;
}

// ---- one sampling of one stack --------------------------------------------------------------------

SampleResult sample_stack(const std::filesystem::path& mountpoint, const std::filesystem::path& dir,
                          const SamplerSettings& s, std::uint64_t seed, const std::function<bool()>& keep_going) {
  SampleResult r;
  auto fail = [&](State st, std::string why) {
    r.state = st;
    r.reason = std::move(why);
    return r;
  };
  // Live checks first: a read-only or too full filesystem is never written to.
  struct statvfs vfs;
  if (::statvfs(mountpoint.c_str(), &vfs) != 0) {
    int e = errno;
    return fail(classify_errno(e), "statvfs " + mountpoint.string() + ": " + std::strerror(e));
  }
  if (vfs.f_flag & ST_RDONLY) return fail(State::read_only, mountpoint.string() + " is mounted read-only");
  std::uint64_t used = vfs.f_blocks - std::min(vfs.f_blocks, static_cast<decltype(vfs.f_blocks)>(vfs.f_bfree));
  std::uint64_t denom = used + vfs.f_bavail;
  double fill = denom ? static_cast<double>(used) / static_cast<double>(denom) : 1.0;
  if (fill > s.fill_threshold)
    return fail(State::fill_threshold, mountpoint.string() + " is " + std::to_string(int(fill * 100)) +
                                           "% full, above latency.fill_threshold");

  ProbeFile file;
  std::uint64_t filled = 0;
  auto failed_open = file.open(dir, s.file_size, 0, &filled);
  // An unprivileged fsauditd may not create files here: fsaudit-helper makes the directory and the
  // file (ours) where its own config puts them, and the fill is ours again.
  if (failed_open && (failed_open->err == EACCES || failed_open->err == EPERM) && !s.helper.empty()) {
    auto made = helper_call(s.helper, "latency-file-create", {{"target", dir.parent_path().string()}}, std::chrono::seconds(60));
    if (made) failed_open = file.open(dir, s.file_size, 0, &filled);
    else failed_open->message += "; " + made.error();
  }
  r.fill_bytes = filled;
  r.bytes += filled;
  if (filled) ++r.fsyncs;  // the fill ends with one fsync
  if (failed_open) return fail(failed_open->state(), failed_open->message);

  auto opened = make_writer(s.mode, file);
  auto& writer = opened.writer;
  r.mode = writer->mode();
  r.reason = opened.note;
  OffsetPicker pick(seed);
  for (int i = 0; i < s.samples; ++i) {
    if (!keep_going()) break;
    auto off = pick.next(file.size());
    auto t0 = mono_ns();
    ++r.fsyncs;
    int e = writer->write_sync(off);
    auto t1 = mono_ns();
    if (e != 0) return fail(classify_errno(e), "write+fsync " + file.path().string() + ": " + std::strerror(e));
    r.bytes += kBlock;
    r.fsync_ns.push_back(t1 - t0);
  }
  writer.reset();
  if (s.direct_reads) {
    int rfd = ::open(file.path().c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
    if (rfd < 0) {
      r.reason = std::string("O_DIRECT reads unavailable: ") + std::strerror(errno);
    } else {
      for (int i = 0; i < s.samples; ++i) {
        auto off = pick.next(file.size());
        auto t0 = mono_ns();
        int e = direct_read(rfd, off);
        auto t1 = mono_ns();
        if (e != 0) {
          if (e == EIO) r.state = State::io_error;
          r.reason = "O_DIRECT read " + file.path().string() + ": " + std::strerror(e);
          break;
        }
        r.bytes += kBlock;
        r.read_ns.push_back(t1 - t0);
      }
      ::close(rfd);
    }
  }
  return r;
}

// ---- budget ---------------------------------------------------------------------------------------

Dispatcher::Dispatcher(const SamplerSettings& s, SteadyTime now)
    : samples_(s.samples),
      stack_rate_(s.stack_writes_per_second),
      host_(s.writes_per_second, static_cast<double>(s.bytes_per_second),
            std::max<double>(s.samples, s.writes_per_second),
            std::max<double>(static_cast<double>(s.samples * kBlock), static_cast<double>(s.bytes_per_second)), now) {}

// The per-stack arrays (the dispatcher's rate state, the probe's stats) are (id, state) pairs sorted by id.
namespace {
constexpr auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
template <typename It>
It lower_by_id(It begin, It end, const std::string& id) {
  return std::lower_bound(begin, end, id, [](const auto& s, const std::string& k) { return s.first < k; });
}
template <typename It>
It find_stack(It begin, It end, const std::string& id) {
  auto it = lower_by_id(begin, end, id);
  return it != end && it->first == id ? it : end;
}
}  // namespace

Dispatcher::Stack Dispatcher::new_stack(const std::string& id, SteadyTime now) const {
  return Stack{id, PerStack{RateBucket(stack_rate_, 2 * samples_, now), SteadyTime{}, SteadyTime{}}};
}

std::size_t Dispatcher::position_locked(const std::string& id, SteadyTime now) {
  auto it = lower_by_id(stacks_.begin(), stacks_.end(), id);
  const auto pos = static_cast<std::size_t>(it - stacks_.begin());
  if (it != stacks_.end() && it->first == id) return pos;
  stacks_.insert(it, new_stack(id, now));
  for (auto& s : slots_)
    if (s >= pos) ++s;
  return pos;
}

template <typename SlotAt>
std::vector<std::size_t> Dispatcher::due_locked(SteadyTime now, std::size_t n, SlotAt slot_at,
                                                const std::vector<char>& busy, std::vector<std::size_t>* deferred) {
  auto& ready = ready_;
  ready.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (i < busy.size() && busy[i]) continue;
    if (slot_at(i).bucket.available(now) + 1e-9 * samples_ < samples_) continue;  // not due yet
    ready.emplace_back(slot_at(i).last, i);
  }
  std::sort(ready.begin(), ready.end());
  std::vector<std::size_t> out;
  for (auto [last, i] : ready) {
    if (!host_.take(now, samples_, samples_ * static_cast<double>(kBlock))) {
      if (deferred) deferred->push_back(i);
      continue;
    }
    PerStack& st = slot_at(i);
    st.bucket.charge(now, samples_);
    st.previous_last = st.last;
    st.last = now;
    out.push_back(i);
  }
  return out;
}

std::vector<std::string> Dispatcher::due(SteadyTime now, const std::vector<std::string>& ids,
                                         const std::set<std::string>& busy, std::vector<std::string>* deferred) {
  std::lock_guard l(mu_);
  for (const auto& id : ids) position_locked(id, now);
  std::vector<std::size_t> pos;  // after every insertion, so none moves
  std::vector<char> b;
  for (const auto& id : ids) {
    pos.push_back(position_locked(id, now));
    b.push_back(busy.count(id) ? 1 : 0);
  }
  std::vector<std::size_t> put_off;
  std::vector<std::string> out;
  auto slot_at = [&](std::size_t i) -> PerStack& { return stacks_[pos[i]].second; };
  for (auto i : due_locked(now, ids.size(), slot_at, b, deferred ? &put_off : nullptr)) out.push_back(ids[i]);
  for (auto i : put_off) deferred->push_back(ids[i]);
  return out;
}

void Dispatcher::set_stacks(const std::vector<std::string>& ids) {
  std::lock_guard l(mu_);
  slots_.clear();
  // A new stack's bucket starts full on the host budget's clock: now is not known here, and a
  // full bucket is what a stack's first turn gets either way.
  // New stacks added in one go and sorted once: one insertion each would move the array per stack.
  const auto old_end = static_cast<std::ptrdiff_t>(stacks_.size());
  for (const auto& id : ids)
    if (find_stack(stacks_.begin(), stacks_.begin() + old_end, id) == stacks_.begin() + old_end)
      stacks_.push_back(new_stack(id, SteadyTime{}));
  std::sort(stacks_.begin(), stacks_.end(), by_id);
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end(), [](const Stack& a, const Stack& b) { return a.first == b.first; }),
                stacks_.end());
  slots_.reserve(ids.size());
  for (const auto& id : ids) slots_.push_back(static_cast<std::uint32_t>(position_locked(id, SteadyTime{})));
}

std::vector<std::size_t> Dispatcher::due_at(SteadyTime now, const std::vector<char>& busy,
                                            std::vector<std::size_t>* deferred) {
  std::lock_guard l(mu_);
  return due_locked(now, slots_.size(), [&](std::size_t i) -> PerStack& { return stacks_[slots_[i]].second; }, busy,
                    deferred);
}

void Dispatcher::charge(SteadyTime now, double ops, double bytes) {
  std::lock_guard l(mu_);
  host_.charge(now, ops, bytes);
}

void Dispatcher::give_back(std::size_t i) {
  std::lock_guard l(mu_);
  if (i >= slots_.size()) return;
  PerStack& st = stacks_[slots_[i]].second;
  st.bucket.give_back(samples_);
  st.last = st.previous_last;
  host_.give_back(samples_, samples_ * static_cast<double>(kBlock));
}

void Dispatcher::forget_except(const std::set<std::string>& ids) {
  std::lock_guard l(mu_);
  std::erase_if(stacks_, [&](const Stack& st) { return !ids.count(st.first); });
  slots_.clear();  // positions moved: set_stacks() again
}

// ---- per-stack state and metrics ------------------------------------------------------------------

void StackStats::set_state(State s) {
  ++version_;
  state = s;
  if (s != State::ok) ++skipped[static_cast<std::size_t>(s)];
}

void StackStats::record(SteadyTime now, const SampleResult& r) {
  ++version_;
  for (auto ns : r.fsync_ns) {
    fsync.observe(ns);
    window.add(now, ns);
  }
  if (!r.read_ns.empty() && !reads) reads = std::make_unique<Histogram>();
  for (auto ns : r.read_ns) reads->observe(ns);
  io_bytes += r.bytes;
  if (!r.mode.empty()) mode = r.mode;
  set_state(r.state);
}

void StackStats::emit(metrics::Batch& b, const metrics::Labels& l, SteadyTime now, Detail detail, bool direct_reads) {
  const bool full = detail == Detail::full;
  // By default (detail summary) no bucket but +Inf, which only repeats the count: a summary without
  // quantiles says the same in two series instead of three (the window gauges give the percentiles).
  auto put_latency = [&](const std::string& name, const std::string& help, const Histogram& h) {
    if (detail == Detail::summary) b.summary(name, help, l, h.count(), h.sum_seconds());
    else b.histogram(name, help, l, Histogram::bounds_seconds(detail), h.cumulative(detail), h.sum_seconds());
  };
  put_latency("fsaudit_fsync_latency_seconds", kHistHelp, fsync);
  if (direct_reads)
    put_latency("fsaudit_direct_read_latency_seconds",
                "Latency of one 4 KiB O_DIRECT read at a random offset of the stack's probe file",
                reads ? *reads : Histogram{});
  if (auto q = window.quantiles(now)) {
    // `percentile`, not `quantile`: a gauge with a quantile label is reserved for summaries.
    auto put = [&](const char* percentile, std::uint64_t ns) {
      auto ql = l;
      ql["percentile"] = percentile;
      b.gauge("fsaudit_fsync_latency_window_seconds", kWindowHelp, ql, static_cast<double>(ns) / 1e9);
    };
    // The alert and the fleet read p99; the typical latency is the mean (sum / count) by default.
    if (detail != Detail::summary) put("50", q->p50_ns);
    put("99", q->p99_ns);
    if (full) {
      put("99.9", q->p999_ns);
      b.gauge("fsaudit_fsync_latency_window_max_seconds", "Largest fsync sample latency inside the rolling window",
              l, static_cast<double>(q->max_ns) / 1e9);
    }
  }
  if (full)
    b.gauge("fsaudit_fsync_latency_window_samples", "fsync samples inside the rolling window (latency.window)", l,
            static_cast<double>(window.size()));
  // Compact: the state set only while the stack is in trouble (stuck, read-only, full, failing), so
  // a healthy stack, or one waiting its turn in the host budget, exports none.
  if (full || (state != State::ok && state != State::io_budget)) {
    b.stateset("fsaudit_latency_sampler_state",
               "Outcome of the stack's last sampler turn: ok, or why it skipped (read_only, fill_threshold, no_space, "
               "io_error, io_budget, stuck, error)",
               l, state_names(), std::string(state_name(state)));
  }
  // Compact: only reasons that occurred, so a stack that always samples exports none; a stuck
  // stack counts one skip per run while its fsync hangs. Waiting a turn in the host budget is how
  // the budget works, not trouble (as for the state set above): counted only with detail full, so a
  // healthy stack's series do not come and go with its neighbours' turns.
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    const auto s = static_cast<State>(i);
    if (s == State::ok) continue;
    if (!full && (skipped[i] == 0 || s == State::io_budget)) continue;
    auto sl = l;
    sl["reason"] = std::string(state_name(s));
    b.counter("fsaudit_latency_sampler_skipped_total", "Sampler turns of the stack that did not sample, by reason",
              sl, static_cast<double>(skipped[i]));
  }
  if (!full) return;
  b.counter("fsaudit_latency_sampler_io_bytes_total",
            "Bytes the sampler wrote and read on this stack (samples and probe file fill)", l,
            static_cast<double>(io_bytes));
  if (!mode.empty()) {
    auto ml = l;
    ml["mode"] = mode;
    b.info("fsaudit_latency_sampler_info", "How the sampler writes on this stack (mode actually used)", ml);
  }
}

std::uint64_t StackStats::version(SteadyTime now) {
  if (auto live = window.size(now); live != live_) {
    live_ = live;
    ++version_;
  }
  return version_;
}

// ---- the probe ------------------------------------------------------------------------------------

struct LatencyProbe::Shared {
  Shared(const SamplerSettings& s, SteadyTime now) : dispatcher(s, now) {}
  Dispatcher dispatcher;
  std::mutex mu;  // guards stats (the array; each StackStats has its own lock)
  // By stack id, sorted: one array, not a tree node per stack.
  std::vector<std::pair<std::string, std::shared_ptr<StackStats>>> stats;
  std::atomic<std::uint64_t> fsyncs{0};
  std::atomic<std::uint64_t> seed{0};
  std::atomic<int> in_flight{0};  // samples dispatched and not recorded yet, over all stacks
};

SpareThreads& sample_threads() {
  static auto* threads = new SpareThreads(std::chrono::seconds(60));
  return *threads;
}

LatencyProbe::LatencyProbe(SamplerSettings s, TargetSelection watch, StackSelection stacks)
    : s_(std::move(s)), watch_(std::move(watch)), sel_(std::move(stacks)) {
  sel_.dir_name = s_.dir_name;
}


bool sampler_applies(const Target& t) {
  if (t.is_host() || t.mountpoint.empty()) return false;
  if (fstype::is_pseudo(t.fstype)) return false;
  static const std::vector<std::string> never = {"nfs", "nfs4", "cifs", "smb3", "ceph", "glusterfs", "9p",
                                                 "fuse.sshfs", "erofs", "cramfs", "udf", "romfs"};
  return std::find(never.begin(), never.end(), t.fstype) == never.end();
}

namespace {
bool same_mounts(const std::vector<MountEntry>& a, const std::vector<MountEntry>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const MountEntry& x, const MountEntry& y) {
           return x.mount_id == y.mount_id && x.major == y.major && x.minor == y.minor && x.root == y.root &&
                  x.mountpoint == y.mountpoint && x.mount_options == y.mount_options && x.fstype == y.fstype &&
                  x.source == y.source && x.super_options == y.super_options;
         });
}
}  // namespace

Result<void> LatencyProbe::replan(ProbeContext& ctx) {
  // The daemon reads the mount table once per cycle and hands every run the same snapshot: most
  // runs (one a second) see the snapshot they planned with and stop at a pointer comparison; reading
  // and comparing mountinfo here on every run cost more than all the sampling on a host with 1,000
  // mounts.
  auto table = mount_table(ctx);
  if (!table) return err("cannot read the mount table: " + table.error());
  auto now = ctx.clock.now();
  // Past the probe budget the periodic replan is stretched like every other pass over the filesystems.
  const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      kReplanEvery * std::max(1.0, ctx.budget_stretch));
  bool recent = planned_at_ != SteadyTime{} && now - planned_at_ < every;
  if (recent && mounts_ && (*table == mounts_ || same_mounts(**table, *mounts_))) {
    mounts_ = *table;
    return {};
  }
  const auto& mounts = **table;
  std::vector<Target> watched;  // for this plan only: 10,000 targets are megabytes to keep
  for (auto& t : select_targets(mounts, watch_))
    if (sampler_applies(t)) watched.push_back(std::move(t));
  auto next = plan_stacks(mounts, watched, sel_, ctx.host);
  // A stack whose probe file moved (another opted-in path) removes the old one too. By id: a scan of
  // the old plan per stack was 81 million comparisons at 9,000 stacks.
  std::unordered_map<std::string_view, const StackPlan*> old_by_id;
  old_by_id.reserve(plans_->size());
  for (const auto& old : *plans_) old_by_id.emplace(old.id, &old);
  for (auto& p : next)
    if (auto it = old_by_id.find(p.id); it != old_by_id.end() && it->second->sampled && it->second->target != p.target)
      p.other_dirs.push_back(it->second->dir(sel_.dir_name));
  mounts_ = *table;
  planned_at_ = now;
  // Unchanged (the periodic replan, or a mount elsewhere): the same generation, so nothing built
  // from the plan (1,000 stack_info lines, the per-stack entries) is built again.
  if (next == *plans_) return {};
  ++generation_;
  plans_ = std::make_shared<const std::vector<StackPlan>>(std::move(next));
  return {};
}

ProbeResult LatencyProbe::run(const Target&, ProbeContext& ctx) {
  auto planned = replan(ctx);
  if (!planned && plans_->empty()) return ProbeResult::failed(planned.error());
  if (!shared_) {  // on the first run: the budget's buckets start on the context's clock
    shared_ = std::make_shared<Shared>(s_, ctx.clock.now());
    shared_->seed = mono_ns();
  }
  if (entries_generation_ != generation_) rebuild_entries();
  auto due = take_due(ctx.clock.now());
  auto sampled = due.empty() ? Result<void>{} : sample(due, ctx);
  const auto end = ctx.clock.now();
  mark_late_stuck();
  // A run a second, a scrape every 15 s or so: the stacks' series are published every few seconds,
  // not every run (801 stacks at 1,000 filesystems made that the daemon's largest publish). On a
  // fixed 5 s grid, so two reads of a counter a multiple of 5 s apart span that much sampling.
  const auto slot = static_cast<std::int64_t>(end.time_since_epoch() / kPublishEvery);
  const bool same_plan = published_generation_ == generation_;
  if (planned && sampled && !ctx.republish && !ctx.requested && same_plan && slot == published_slot_)
    return ProbeResult::same_as_last();
  published_generation_ = generation_;
  published_slot_ = slot;
  auto b = batch(end, ctx.republish || !same_plan);
  if (!planned) return ProbeResult::failed(planned.error() + " (sampling on the last known mount table)", std::move(b));
  if (!sampled) return ProbeResult::failed(sampled.error(), std::move(b));
  return ProbeResult::ok(std::move(b));
}

// Stats per sampled stack, with the plan; stacks gone from the plan are forgotten.
void LatencyProbe::rebuild_entries() {
  auto& sh = *shared_;
  entries_.clear();
  entries_.reserve(plans_->size());
  std::vector<std::string> ids;
  std::set<std::string> id_set;
  std::lock_guard l(sh.mu);
  // Stacks still in the plan keep their stats; new ones start; the others are forgotten.
  decltype(sh.stats) kept;
  kept.reserve(plans_->size());
  for (const auto& p : *plans_) {
    if (!p.sampled) continue;
    std::shared_ptr<StackStats> st;
    if (auto it = find_stack(sh.stats.begin(), sh.stats.end(), p.id); it != sh.stats.end()) st = it->second;
    if (!st) {
      st = std::make_shared<StackStats>(s_.window);
      st->seed = std::hash<std::string>{}(p.id) ^ sh.seed.fetch_add(1);
    }
    entries_.push_back({&p, st});
    kept.emplace_back(p.id, st);
    ids.push_back(p.id);
    id_set.insert(p.id);
  }
  std::sort(kept.begin(), kept.end(), by_id);
  sh.stats = std::move(kept);
  sh.dispatcher.forget_except(id_set);
  sh.dispatcher.set_stacks(ids);
  waiting_.assign(entries_.size(), 0);
  entries_generation_ = generation_;
}

// The entries due to sample now; marks the ones still in flight (busy_, stuck) and the ones the host
// budget puts off (io_budget).
std::vector<std::size_t> LatencyProbe::take_due(SteadyTime now) {
  auto& sh = *shared_;
  // A run a second over hundreds of stacks: nothing here locks every stack unless a sample is
  // still in flight (a hung one); most runs touch only the stacks that sample or change.
  busy_.assign(entries_.size(), 0);
  if (sh.in_flight.load() > 0) {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      auto& st = *entries_[i].st;
      std::lock_guard l(st.mu);
      if (st.in_flight) {
        busy_[i] = 1;
        st.set_state(State::stuck);
      }
    }
  }
  deferred_.clear();
  auto due = sh.dispatcher.due_at(now, busy_, &deferred_);
  waiting_.resize(entries_.size(), 0);
  for (auto i : deferred_) {
    // One skip per wait for the host budget, not one per second of it: a stack waiting its turn
    // stays unchanged (and costs nothing to publish) until it samples.
    if (waiting_[i]) continue;  // marked on an earlier run, and not dispatched since
    waiting_[i] = 1;
    auto& st = *entries_[i].st;
    std::lock_guard l(st.mu);
    if (st.state != State::io_budget) st.set_state(State::io_budget);
  }
  for (auto i : due) waiting_[i] = 0;
  return due;
}

// What a lane needs of each due stack, copied: entries_ may be rebuilt while a lane still runs.
struct LatencyProbe::Lanes {  // shared with the lanes, which may outlive the run (a hung sample)
  struct Item {
    std::size_t entry;  // its index in entries_ (and the dispatcher's stacks), for give_back()
    std::shared_ptr<StackStats> st;
    std::string mountpoint, dir;
    std::vector<std::string> other_dirs;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Item> items;  // in dispatch order
  std::size_t next = 0;     // the first not taken
  std::size_t running = 0;  // lanes not finished
  bool closed = false;      // the run has ended: lanes take nothing more
};

// One lane: takes the next due stack, samples it, and takes the next, until none is left or the
// run has ended.
void LatencyProbe::lane(const std::shared_ptr<Lanes>& lanes, const std::shared_ptr<Shared>& shared,
                        const SamplerSettings& settings, const Clock* clock, SteadyTime deadline,
                        std::uint64_t generation) {
  for (;;) {
    std::size_t k;
    {
      std::lock_guard l(lanes->mu);
      if (lanes->closed || lanes->next == lanes->items.size()) return;
      k = lanes->next++;
    }
    const Lanes::Item& it = lanes->items[k];  // never moved: items is not changed after the lanes start
    const auto& st = it.st;
    std::uint64_t seed;
    std::vector<std::string> stale;
    {
      std::lock_guard l(st->mu);
      st->in_flight = true;
      seed = st->seed++;
      if (st->cleaned_generation != generation) {
        stale = it.other_dirs;
        st->cleaned_generation = generation;
      }
    }
    ++shared->in_flight;
    // On this thread, not the scheduler's: a hung filesystem holds only its own stack.
    for (const auto& d : stale) {
      std::error_code ec;
      if (std::filesystem::exists(ProbeFile::path_in(d), ec)) (void)ProbeFile::remove(d);  // retried next run
    }
    // In a child process: a write+fsync that never returns must not keep the daemon from exiting.
    auto r = shared_sampler_children().sample(it.mountpoint, it.dir, settings, seed,
                                              std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - clock->now()));
    shared->fsyncs += r.fsyncs;
    if (r.fill_bytes) shared->dispatcher.charge(clock->now(), 1, static_cast<double>(r.fill_bytes));
    {
      std::lock_guard l(st->mu);
      st->record(clock->now(), r);
      st->in_flight = false;
    }
    --shared->in_flight;
  }
}

// The due stacks sample in at most s_.parallel lanes (each sample in flight is one sampler process:
// a burst of ten due stacks needs two, not ten). A lane is one task on a spare thread, so the run's
// thread hands work over once per lane, not once per sample (each hand-off is two thread wake-ups).
// A hung fsync holds only its own stack and its lane; the other lanes go on, and due stacks no lane
// took before the run's end get their turn and budget back. Fails when a lane's thread could not start.
Result<void> LatencyProbe::sample(const std::vector<std::size_t>& due, ProbeContext& ctx) {
  auto lanes = std::make_shared<Lanes>();
  lanes->items.reserve(due.size());
  for (auto i : due) {
    const StackPlan& p = *entries_[i].plan;
    lanes->items.push_back({i, entries_[i].st, p.mountpoint(), p.dir(sel_.dir_name), p.other_dirs});
  }
  const Clock* clock = &ctx.clock;
  auto one_lane = [lanes, shared = shared_, settings = s_, clock, deadline = ctx.deadline, generation = generation_] {
    lane(lanes, shared, settings, clock, deadline, generation);
  };
  // Once the thread is free again, so the next run's lane takes this thread, not a new one.
  auto lane_done = [lanes] {
    std::lock_guard l(lanes->mu);
    --lanes->running;
    lanes->cv.notify_all();
  };
  const std::size_t want = std::min(due.size(), static_cast<std::size_t>(std::max(1, s_.parallel)));
  {
    std::lock_guard l(lanes->mu);
    lanes->running = want;
  }
  Result<void> started;
  for (std::size_t n = 0; n < want; ++n) {
    if (auto e = sample_threads().run(one_lane, lane_done); !e.empty()) {  // these turns are lost, not the stacks
      std::lock_guard l(lanes->mu);
      --lanes->running;
      started = err("sampler: " + e);
    }
  }
  std::unique_lock l(lanes->mu);
  auto until = ctx.deadline - std::chrono::milliseconds(200);
  while (lanes->running > 0 && !ctx.stop.stop_requested() && clock->now() < until)
    lanes->cv.wait_for(l, std::chrono::milliseconds(50));
  lanes->closed = true;
  for (std::size_t k = lanes->next; k < lanes->items.size(); ++k) shared_->dispatcher.give_back(lanes->items[k].entry);
  return started;
}

// Stacks dispatched on this run whose sample is not back in time are stuck.
void LatencyProbe::mark_late_stuck() {
  if (shared_->in_flight.load() == 0) return;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    std::lock_guard l(e.st->mu);
    if (e.st->in_flight && !busy_[i]) e.st->set_state(State::stuck);
  }
}

// The run's series: the plan's stack_info (built again only with the plan), each stack's part (the
// store skips unchanged versions), the page's fsync figures, the budget.
metrics::Batch LatencyProbe::batch(SteadyTime end, bool whole) {
  metrics::Batch b;
  b.parts_delta = !whole;
  // Built only when the store needs it (a new generation), from the plan itself: a copy of 9,000 info
  // series kept between plans cost more than the plan.
  if (whole)
    b.include({"stack_info", generation_, [plans = plans_](metrics::Batch& out) {
                 for (const auto& p : *plans)
                   p.for_each_target([&](const std::string& t) {
                     out.info("fsaudit_latency_stack_info",
                              "Maps a watched filesystem (target) to the device stack whose sampler measures it "
                              "(stack); sampled=false when nothing on that stack may be written",
                              {{"target", t}, {"stack", p.id}, {"sampled", p.sampled ? "true" : "false"}});
                   });
               }});
  for (auto& e : entries_) {
    std::uint64_t version;
    {
      std::lock_guard l(e.st->mu);
      version = e.st->version(end);
    }
    if (!whole && version == e.published_version) continue;  // the store keeps its part as it was
    e.published_version = version;
    // The part's id made here, for the parts that changed: kept per stack it was a string of 60 bytes or
    // more (the stack and its target's path) for each of 9,000 stacks.
    b.include({e.plan->id + "\x1f" + e.plan->target, version,
               [st = e.st, plans = plans_, plan = e.plan, end, detail = s_.detail,
                reads = s_.direct_reads](metrics::Batch& out) {
                 // The labels made here, when the store builds the part: kept per stack, they were a
                 // map of two copied strings for each of 9,000 stacks between the few builds.
                 (void)plans;  // keeps *plan alive: the next run may re-plan before the store builds this
                 std::lock_guard lk(st->mu);
                 st->emit(out, metrics::Labels{{"stack", plan->id}, {"target", plan->target}}, end, detail, reads);
                 // The page's fsync figures, for every watched filesystem on the stack (they share its
                 // latency; a filesystem is on one stack).
                 if (auto q = st->window.quantiles(end))
                   plan->for_each_target([&](const std::string& t) {
                     auto& f = out.status.filesystems.emplace_back();
                     f.target = t;
                     f.fsync_p50_seconds = static_cast<double>(q->p50_ns) / 1e9;
                     f.fsync_p99_seconds = static_cast<double>(q->p99_ns) / 1e9;
                     f.fsync_p999_seconds = static_cast<double>(q->p999_ns) / 1e9;
                   });
               }});
  }
  b.gauge("fsaudit_latency_samplers", "Device stacks with a latency sampler (one per pool / filesystem / array)", {},
          static_cast<double>(entries_.size()));
  b.counter("fsaudit_latency_fsyncs_total",
            "write+fsync operations the latency sampler issued (samples and probe file fills)", {},
            static_cast<double>(shared_->fsyncs.load()));
  b.gauge("fsaudit_latency_budget_writes_per_second", "Configured write+fsync budget (latency.budget)",
          {{"scope", "stack"}}, s_.stack_writes_per_second);
  b.gauge("fsaudit_latency_budget_writes_per_second", "Configured write+fsync budget (latency.budget)",
          {{"scope", "host"}}, s_.writes_per_second);
  b.gauge("fsaudit_latency_budget_bytes_per_second", "Configured host-wide byte budget (latency.budget)", {},
          static_cast<double>(s_.bytes_per_second));
  return b;
}

// Disabled means nothing here may fire FsauditProbeFailing: what the cleanup could not do (no mount
// table to find the watched filesystems, a probe file that stays) is said in the not-applicable reason.
ProbeResult LatencyCleanupProbe::run(const Target&, ProbeContext& ctx) {
  std::vector<std::string> dirs, notes;
  auto mounts = mount_table(ctx);
  if (mounts) {
    for (const auto& t : select_targets(**mounts, watch_))
      if (sampler_applies(t)) dirs.push_back((std::filesystem::path(t.mountpoint) / dir_name_).string());
  } else {
    notes.push_back("cannot read the mount table to look for probe files left on watched filesystems: " +
                    mounts.error());
  }
  for (const auto& p : paths_) dirs.push_back((std::filesystem::path(p) / dir_name_).string());
  std::vector<std::string> removed;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!std::filesystem::exists(ProbeFile::path_in(d), ec)) continue;
    auto gone = ProbeFile::remove(d);
    if (gone) removed.push_back(ProbeFile::path_in(d).string());
    else notes.push_back("its probe file stays: " + gone.error());
  }
  std::string why = "latency sampling is disabled (latency.enabled: false)";
  if (!removed.empty())
    why += "; removed " + removed[0] + (removed.size() > 1 ? " and " + std::to_string(removed.size() - 1) + " more" : "");
  for (const auto& n : notes) why += "; " + n;
  return ProbeResult::not_applicable(why);
}

StackSelection stack_selection(const config::LatencyConfig& c) {
  StackSelection sel;
  sel.discover = c.discover;
  sel.opt_in = c.targets;
  sel.exclude = c.exclude;
  sel.dir_name = c.dir_name;
  return sel;
}

std::vector<std::unique_ptr<Probe>> make_latency_probes(const config::Config& cfg) {
  std::vector<std::unique_ptr<Probe>> out;
  const auto& c = cfg.latency;
  if (!c.enabled) {
    out.push_back(std::make_unique<LatencyCleanupProbe>(c.dir_name, cfg.watched_targets(), c.targets));
  } else {
    auto settings = SamplerSettings::from(c);
    settings.helper = cfg.canary.helper;
    out.push_back(std::make_unique<LatencyProbe>(settings, cfg.watched_targets(), stack_selection(c)));
  }
  if (c.stream.enabled) out.push_back(std::make_unique<StreamProbe>(c, cfg.state_dir));
  return out;
}

}  // namespace fsaudit::latency
