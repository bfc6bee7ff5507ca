#include "daemon/config/sections/latency.hpp"

namespace fsaudit::config {

namespace {

std::vector<std::string> absolute_paths(Section& s, const std::string& key) {
  auto v = s.strings(key, {});
  for (auto& p : v) {
    if (p.empty() || p[0] != '/') s.fail(key, "\"" + p + "\" is not an absolute path; write it as /srv/scratch");
    if (p == "/") s.fail(key, "the root directory cannot be a latency path; name a dedicated directory");
    while (p.size() > 1 && p.back() == '/') p.pop_back();
  }
  return v;
}

LatencyStreamConfig parse_stream(Section s) {
  using namespace std::chrono_literals;
  LatencyStreamConfig c;
  c.enabled = s.boolean("enabled", c.enabled);
  c.targets = absolute_paths(s, "targets");
  if (c.enabled && c.targets.empty())
    // (failing on "enabled": Section::fail() on an absent key throws a YAML error, see the report)
    s.fail("enabled", "the streaming test is enabled but latency.stream.targets names no directory; list canary "
                      "mount points or scratch directories (the streaming write only ever goes there)");
  c.size = s.size("size", c.size, 1ull << 20, 1ull << 40);
  c.duration = s.duration("duration", c.duration, 1s, 1h);
  c.sample_period = s.duration("sample_period", c.sample_period, 10ms, 60s);
  c.idle_samples = static_cast<int>(s.integer("idle_samples", c.idle_samples, 1, 10000));
  auto wtext = s.string("window", "*");
  auto w = CalendarWindow::parse(wtext);
  if (!w) s.fail("window", w.error());
  c.window = *w;
  c.interval = s.duration("interval", c.interval, 1min, std::chrono::days(366));
  s.finish();
  return c;
}

}  // namespace

LatencyConfig parse_latency(Section s) {
  using namespace std::chrono_literals;
  LatencyConfig c;
  c.enabled = s.boolean("enabled", c.enabled);
  c.discover = s.boolean("discover", c.discover);
  c.targets = absolute_paths(s, "targets");
  c.exclude = s.strings("exclude", {});
  c.samples_per_run = static_cast<int>(s.integer("samples_per_run", c.samples_per_run, 1, 1000));
  c.interval = s.duration("interval", c.interval, 100ms, 24h);
  c.timeout = s.duration("timeout", c.timeout, 1s, 1h);
  c.probe_file_size = s.size("probe_file_size", c.probe_file_size, 1ull << 20, 1ull << 30);
  if (c.probe_file_size % 4096 != 0)
    s.fail("probe_file_size", "must be a multiple of 4KiB (the sample block size), e.g. 4MiB");
  c.mode = s.choice("mode", c.mode, {"io_uring_fsync", "o_dsync"});
  c.direct_reads = s.boolean("direct_reads", c.direct_reads);
  c.window = s.duration("window", c.window, 10s, 24h);
  c.detail = s.choice("detail", c.detail, {"summary", "compact", "full"});
  {
    auto b = s.section("budget");
    c.budget.stack_writes_per_second =
        b.number("stack_writes_per_second", c.budget.stack_writes_per_second, 0.001, 10000);
    c.budget.writes_per_second = b.number("writes_per_second", c.budget.writes_per_second, 0.001, 100000);
    c.budget.bytes_per_second = b.size("bytes_per_second", c.budget.bytes_per_second, 4096, 1ull << 40);
    b.finish();
  }
  c.parallel = static_cast<int>(s.integer("parallel", c.parallel, 1, 64));
  c.fill_threshold = s.number("fill_threshold", c.fill_threshold, 0.0, 1.0);
  c.dir_name = s.string("dir_name", c.dir_name);
  if (c.dir_name.empty() || c.dir_name.find('/') != std::string::npos || c.dir_name == "." || c.dir_name == "..")
    s.fail("dir_name", "must be a plain directory name such as .fsaudit");
  c.stream = parse_stream(s.section("stream"));
  s.finish();
  return c;
}

}  // namespace fsaudit::config
