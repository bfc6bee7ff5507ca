#include <cstdio>
#include <sstream>

#include "daemon/core/strings.hpp"
#include "probes/scrub_driver/model.hpp"

namespace fsaudit::scrub {
namespace {

// The whole number, however large: a fixed 64-byte buffer cut 1e70 to another number (fuzz_scrub_state).
std::string num(double v) {
  int n = std::snprintf(nullptr, 0, "%.3f", v);
  if (n <= 0) return "0";
  std::string b(static_cast<std::size_t>(n), '\0');
  std::snprintf(b.data(), b.size() + 1, "%.3f", v);
  return b;
}

void put(std::ostringstream& o, const std::string& k, const std::string& v) { o << k << '=' << v << '\n'; }
void put_opt(std::ostringstream& o, const std::string& k, const std::optional<double>& v) {
  if (v) put(o, k, num(*v));
}
void put_opt(std::ostringstream& o, const std::string& k, const std::optional<std::uint64_t>& v) {
  if (v) put(o, k, std::to_string(*v));
}

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) r += (c == '\n' || c == '\r') ? ' ' : c;
  return r;
}

// "<device>.<found|repaired|uncorrectable>" (kernel names hold no '.': split at the last one).
void parse_device_errors(ErrorDetail& d, const std::string& key, std::optional<std::uint64_t> v) {
  auto dot = key.rfind('.');
  if (dot == std::string::npos || dot == 0) return;
  auto& e = d.devices[key.substr(0, dot)];
  auto what = key.substr(dot + 1);
  if (what == "found") e.found = v;
  else if (what == "repaired") e.repaired = v;
  else if (what == "uncorrectable") e.uncorrectable = v;
}

}  // namespace

// One "key=value" per line: easy to read when debugging, tolerant of keys added later.
std::string TargetState::serialize() const {
  std::ostringstream o;
  put(o, "version", "1");
  put(o, "first_seen", num(first_seen));
  put(o, "running", running ? "1" : "0");
  put(o, "by_us", by_us ? "1" : "0");
  put(o, "paused_by_us", paused_by_us ? "1" : "0");
  put(o, "by_operator", by_operator ? "1" : "0");
  put(o, "run_start", num(run_start));
  put_opt(o, "run_bytes", run_bytes);
  put(o, "job_pid", std::to_string(job_pid));
  put(o, "job_dir", escape(job_dir));
  put(o, "last_attempt", num(last_attempt));
  put(o, "last_attempt_error", escape(last_attempt_error));
  put(o, "pause_unsupported", pause_unsupported ? "1" : "0");
  put(o, "unsupported_reason", escape(unsupported_reason));
  put(o, "unsupported_since", num(unsupported_since));
  put(o, "last.start", num(last.start));
  put(o, "last.end", num(last.end));
  put(o, "last.duration", num(last.duration));
  put_opt(o, "last.bytes", last.bytes);
  put_opt(o, "last.rate", last.rate);
  put_opt(o, "last.repaired_bytes", last.repaired_bytes);
  put_opt(o, "last.found", last.errors.found);
  put_opt(o, "last.repaired", last.errors.repaired);
  put_opt(o, "last.uncorrectable", last.errors.uncorrectable);
  for (const auto& [cause, n] : last.error_detail.causes) put(o, "last.cause." + cause, std::to_string(n));
  for (const auto& [dev, e] : last.error_detail.devices) {
    put_opt(o, "last.device." + dev + ".found", e.found);
    put_opt(o, "last.device." + dev + ".repaired", e.repaired);
    put_opt(o, "last.device." + dev + ".uncorrectable", e.uncorrectable);
  }
  put(o, "last.result", last.result);
  put(o, "last.by_us", last.by_us ? "1" : "0");
  put(o, "last_completed_end", num(last_completed_end));
  for (const auto& [k, v] : runs) put(o, "runs." + k, std::to_string(v));
  return o.str();
}

TargetState TargetState::parse(const std::string& text) {
  TargetState s;
  for (auto line : lines(text)) {
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string k(line.substr(0, eq));
    std::string v(line.substr(eq + 1));
    auto d = [&]() { return parse_double(v).value_or(0); };
    auto od = [&]() -> std::optional<double> { return parse_double(v); };
    auto ou = [&]() -> std::optional<std::uint64_t> { return parse_u64(v); };
    auto b = [&]() { return v == "1"; };
    if (k == "first_seen") s.first_seen = d();
    else if (k == "running") s.running = b();
    else if (k == "by_us") s.by_us = b();
    else if (k == "paused_by_us") s.paused_by_us = b();
    else if (k == "by_operator") s.by_operator = b();
    else if (k == "run_start") s.run_start = d();
    else if (k == "run_bytes") s.run_bytes = od();
    else if (k == "job_pid") s.job_pid = static_cast<int>(parse_i64(v).value_or(0));
    else if (k == "job_dir") s.job_dir = v;
    else if (k == "last_attempt") s.last_attempt = d();
    else if (k == "last_attempt_error") s.last_attempt_error = v;
    else if (k == "pause_unsupported") s.pause_unsupported = b();
    else if (k == "unsupported_reason") s.unsupported_reason = v;
    else if (k == "unsupported_since") s.unsupported_since = d();
    else if (k == "last.start") s.last.start = d();
    else if (k == "last.end") s.last.end = d();
    else if (k == "last.duration") s.last.duration = d();
    else if (k == "last.bytes") s.last.bytes = od();
    else if (k == "last.rate") s.last.rate = od();
    else if (k == "last.repaired_bytes") s.last.repaired_bytes = od();
    else if (k == "last.found") s.last.errors.found = ou();
    else if (k == "last.repaired") s.last.errors.repaired = ou();
    else if (k == "last.uncorrectable") s.last.errors.uncorrectable = ou();
    else if (k == "last.result") s.last.result = v;
    else if (k == "last.by_us") s.last.by_us = b();
    else if (k == "last_completed_end") s.last_completed_end = d();
    else if (k.rfind("last.cause.", 0) == 0) s.last.error_detail.causes[k.substr(11)] = parse_u64(v).value_or(0);
    else if (k.rfind("last.device.", 0) == 0) parse_device_errors(s.last.error_detail, k.substr(12), ou());
    else if (k.rfind("runs.", 0) == 0) s.runs[k.substr(5)] = parse_u64(v).value_or(0);
  }
  return s;
}

}  // namespace fsaudit::scrub
