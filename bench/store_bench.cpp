// µs per publish and per scrape of the metrics store at 10 / 100 / 1,000 targets, beside the store's
// former algorithm (rebuild and copy the whole merged snapshot on every publish, serialise on every
// scrape), in the same run. Build: cmake --build build --target fsaudit_store_bench
#include <benchmark/benchmark.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/metrics/store.hpp"

namespace {

using fsaudit::metrics::Batch;

// What one target publishes per cycle in the daemon: capacity, mount and ext4 samples plus the
// self series of the job (about 14 samples over 4 keys).
std::vector<std::pair<std::string, Batch>> target_batches(int i, double v) {
  std::string t = "/srv/fsaudit-scale/fs" + std::to_string(i);
  fsaudit::metrics::Labels l{{"target", t}, {"fs", "ext4"}};
  std::vector<std::pair<std::string, Batch>> out;
  Batch cap;
  for (const char* n : {"fsaudit_filesystem_size_bytes", "fsaudit_filesystem_free_bytes",
                        "fsaudit_filesystem_avail_bytes", "fsaudit_filesystem_files", "fsaudit_filesystem_files_free"})
    cap.gauge(n, "Capacity.", l, v);
  out.emplace_back("capacity\x1f" + t, std::move(cap));
  Batch mnt;
  mnt.gauge("fsaudit_filesystem_readonly", "Read-only.", l, 0);
  mnt.gauge("fsaudit_filesystem_data_checksums", "Checksums.", l, 0);
  mnt.info("fsaudit_filesystem_info", "Info.", {{"target", t}, {"fs", "ext4"}, {"device", "/dev/loop" + std::to_string(i)},
                                                {"mountpoint", t}, {"options", "rw,relatime;rw"}});
  out.emplace_back("mount\x1f" + t, std::move(mnt));
  Batch ext;
  ext.gauge("fsaudit_ext4_errors", "Errors.", {{"target", t}, {"device", "loop" + std::to_string(i)}}, 0);
  ext.gauge("fsaudit_ext4_warnings", "Warnings.", {{"target", t}, {"device", "loop" + std::to_string(i)}}, 0);
  out.emplace_back("ext4\x1f" + t, std::move(ext));
  for (const char* p : {"capacity", "mount", "ext4"}) {
    Batch self;
    self.gauge("fsaudit_probe_success", "Success.", {{"probe", p}, {"target", t}}, 1);
    out.emplace_back(std::string("self\x1f") + p + "\x1f" + t, std::move(self));
  }
  return out;
}

// The former store kept prometheus-cpp's client model; a batch now has its own sample type.
prometheus::MetricFamily client_model(const fsaudit::metrics::MetricFamily& f) {
  using fsaudit::metrics::MetricType;
  prometheus::MetricFamily out{f.name, f.help,
                               f.type == MetricType::Counter     ? prometheus::MetricType::Counter
                               : f.type == MetricType::Gauge     ? prometheus::MetricType::Gauge
                               : f.type == MetricType::Histogram ? prometheus::MetricType::Histogram
                                                                 : prometheus::MetricType::Untyped,
                               {}};
  for (const auto& m : f.metric) {
    prometheus::ClientMetric c;
    for (const auto& l : m.label) c.label.push_back({l.name, l.value});
    c.counter.value = m.counter.value;
    c.gauge.value = m.gauge.value;
    c.untyped.value = m.untyped.value;
    for (const auto& b : m.histogram.bucket) c.histogram.bucket.push_back({b.cumulative_count, b.upper_bound});
    c.histogram.sample_count = m.histogram.sample_count;
    c.histogram.sample_sum = m.histogram.sample_sum;
    out.metric.push_back(std::move(c));
  }
  return out;
}

// The store as it was: every publish merges every key's families into a new snapshot; a scrape
// copies that snapshot and serialises it.
class RebuildingStore {
 public:
  void publish(const std::string& key, Batch b) {
    std::lock_guard l(mu_);
    auto& mine = by_key_[key];
    mine.clear();
    for (const auto& f : b.families()) mine.push_back(client_model(f));
    std::map<std::string, prometheus::MetricFamily> merged;
    for (const auto& [k, batch] : by_key_)
      for (const auto& f : batch) {
        auto [it, ins] = merged.try_emplace(f.name, prometheus::MetricFamily{f.name, f.help, f.type, {}});
        it->second.metric.insert(it->second.metric.end(), f.metric.begin(), f.metric.end());
      }
    auto out = std::make_shared<std::vector<prometheus::MetricFamily>>();
    for (auto& [n, f] : merged) out->push_back(std::move(f));
    snapshot_ = std::move(out);
  }
  std::string text() const {
    std::shared_ptr<const std::vector<prometheus::MetricFamily>> s;
    {
      std::lock_guard l(mu_);
      s = snapshot_;
    }
    auto copy = *s;
    return prometheus::TextSerializer().Serialize(copy);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<prometheus::MetricFamily>> by_key_;
  std::shared_ptr<const std::vector<prometheus::MetricFamily>> snapshot_ =
      std::make_shared<const std::vector<prometheus::MetricFamily>>();
};

template <class S>
void fill(S& s, int targets) {
  for (int i = 0; i < targets; ++i)
    for (auto& [k, b] : target_batches(i, 1)) s.publish(k, std::move(b));
}

// One target's cycle: its 6 batches published (µs per publish = time / 6).
template <class S>
void BM_Publish(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  S s;
  fill(s, n);
  int i = 0;
  std::vector<std::vector<std::pair<std::string, Batch>>> pre;
  for (int t = 0; t < n; ++t) pre.push_back(target_batches(t, 2));
  for (auto _ : state) {
    for (const auto& [k, b] : pre[i]) s.publish(k, b);
    i = (i + 1) % n;
  }
  state.counters["publishes_per_iteration"] = 6;
}

// What a scrape takes from the store: the new store's shared pieces (the HTTP handler writes them
// out as they are), the former store's serialised text.
// The exposition, and its text written out as the server does (into a 64 KiB buffer, the packed
// pieces unpacked on the way).
std::size_t scrape(const fsaudit::metrics::Store& s) {
  auto t = s.exposition();
  static std::string out;
  out.clear();
  out.reserve(64 * 1024);
  t->write(64 * 1024, out, [](std::string_view chunk) {
    benchmark::DoNotOptimize(chunk.data());
    return true;
  });
  return t->size;
}
template <class S>
std::size_t scrape(const S& s) {
  auto t = s.text();
  benchmark::DoNotOptimize(t);
  return t.size();
}

// A scrape after a change (the text has to be built) and between changes (served as it is).
template <class S>
void BM_ScrapeAfterChange(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  S s;
  fill(s, n);
  auto one = target_batches(0, 3);
  std::size_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    s.publish(one[0].first, one[0].second);
    state.ResumeTiming();
    bytes = scrape(s);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

template <class S>
void BM_ScrapeUnchanged(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  S s;
  fill(s, n);
  for (auto _ : state) benchmark::DoNotOptimize(scrape(s));
}

using fsaudit::metrics::Store;
BENCHMARK(BM_Publish<Store>)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Publish<RebuildingStore>)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScrapeAfterChange<Store>)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScrapeAfterChange<RebuildingStore>)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScrapeUnchanged<Store>)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ScrapeUnchanged<RebuildingStore>)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
