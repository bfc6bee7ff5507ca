#include "ctl/render.hpp"

#include <cmath>
#include <cstdio>

#include "daemon/core/units.hpp"

namespace fsaudit::ctl {
namespace {

using nlohmann::json;

std::size_t width(const std::string& s) {
  std::size_t w = 0;
  bool esc = false;
  for (unsigned char c : s) {
    if (c == 0x1b) esc = true;
    if (esc) {
      if (c == 'm') esc = false;
      continue;
    }
    if ((c & 0xc0) != 0x80) ++w;
  }
  return w;
}

std::string paint(const Style& st, const std::string& text, const char* code) {
  if (!st.color) return text;
  return std::string("\x1b[") + code + "m" + text + "\x1b[0m";
}

std::string health(const Style& st, const std::string& h) {
  if (h == "ok") return paint(st, h, "32");
  if (h == "warning") return paint(st, h, "33");
  if (h == "critical") return paint(st, h, "1;31");
  return h;
}

std::string verdict(const Style& st, const json& v) {
  if (!v.is_string()) return "pending";
  std::string s = v.get<std::string>();
  if (s == "silent" || s == "error" || s == "refused") return paint(st, s, "1;31");
  if (s == "repaired") return paint(st, s, "32");
  if (s == "detected") return paint(st, s, "33");
  return s;
}

std::optional<double> num(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string() && j.get<std::string>() == "+Inf") return INFINITY;
  return std::nullopt;
}

std::string fmt(double v, const char* f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

std::string used(const json& t) {
  auto u = num(t["used_ratio"]);
  return u ? fmt(*u * 100, "%.0f%%") : "-";
}

std::string days(const json& t) {
  auto d = num(t["days_to_full"]);
  return d ? fmt(*d, "%.0f") : "-";
}

std::string scrub_age(const json& t) {
  if (t["scrub"].is_null()) return "-";
  const auto& s = t["scrub"];
  if (s["running"].get<bool>()) {
    auto p = num(s["progress_ratio"]);
    return p ? "running " + fmt(*p * 100, "%.0f%%") : "running";
  }
  auto a = num(s["age_seconds"]);
  if (!a) return "unknown";
  return std::isfinite(*a) ? format_seconds(*a) + " ago" : "never";
}

std::string scrub_findings(const json& t) {
  if (t["scrub"].is_null()) return "-";
  std::string f;
  for (auto& [k, v] : t["scrub"]["errors"].items()) f += (f.empty() ? "" : ", ") + fmt(v.get<double>(), "%.0f") + " " + k;
  return f.empty() ? "none" : f;
}

std::string fsync(const json& t) {
  auto p = num(t["fsync_seconds"]["p99"]);
  return p ? format_seconds(*p) : "-";
}

std::string canaries_of(const json& status, const json& t, const Style& st) {
  std::string out;
  for (const auto& name : t["canaries"])
    for (const auto& c : status["canaries"])
      if (c["name"] == name) out += (out.empty() ? "" : ", ") + verdict(st, c["verdict"]);
  return out.empty() ? "-" : out;
}

std::string article(const std::string& fs) {
  return !fs.empty() && (fs[0] == 'x' || fs[0] == 'e' || fs[0] == 'a' || fs[0] == 'o' || fs[0] == 'i') ? "an " : "a ";
}

std::string ago(const json& ts, double now) {
  auto t = num(ts);
  return t ? format_seconds(now - *t) + " ago" : "never";
}

}  // namespace

std::string table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> w(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) w[i] = width(header[i]);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l;
    for (std::size_t i = 0; i < r.size(); ++i) {
      l += r[i];
      if (i + 1 < r.size()) l += std::string(w[i] - width(r[i]) + 2, ' ');
    }
    out += l + "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  return out;
}

std::string render_status(const json& s, const Style& st, double now) {
  std::string out = "fsaudit " + str(s, "version") + ": " + health(st, str(s, "overall")) + " (" + str(s, "summary") + ")\n";
  if (s["config_reload_ok"].is_boolean() && !s["config_reload_ok"].get<bool>())
    out += "The last configuration reload was rejected; the previous configuration is running.\n";
  out += "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : s["targets"])
    rows.push_back({str(t, "name"), str(t, "fs"), health(st, str(t, "health")), used(t), days(t), canaries_of(s, t, st),
                    scrub_age(t), fsync(t)});
  out += table({"FILESYSTEM", "FS", "HEALTH", "USED", "DAYS-TO-FULL", "CANARY", "LAST-SCRUB", "FSYNC-P99"}, rows);
  for (const auto& t : s["targets"])
    for (const auto& p : t["problems"]) out += "  " + str(t, "name") + ": " + p.get<std::string>() + "\n";
  for (const auto& h : s["host_issues"]) out += "  host probe " + str(h, "probe") + " failing: " + str(h, "reason") + "\n";
  if (!s["canaries"].empty()) out += "\n" + render_canaries(s, st, now);
  return out;
}

std::string render_targets(const json& s, const Style& st) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : s["targets"]) {
    std::string problems;
    for (const auto& p : t["problems"]) problems += (problems.empty() ? "" : "; ") + p.get<std::string>();
    rows.push_back({str(t, "name"), str(t, "fs"), str(t, "device"), health(st, str(t, "health")), problems.empty() ? "-" : problems});
  }
  return table({"TARGET", "FS", "DEVICE", "HEALTH", "PROBLEMS"}, rows);
}

std::string render_probes(const json& probes, const Style&) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : probes) {
    std::string targets;
    for (const auto& t : p["targets"]) targets += (targets.empty() ? "" : ", ") + t.get<std::string>();
    rows.push_back({str(p, "name"), str(p, "scope"), format_seconds(p["interval_ms"].get<double>() / 1000),
                    format_seconds(p["timeout_ms"].get<double>() / 1000), targets});
  }
  return table({"PROBE", "SCOPE", "INTERVAL", "TIMEOUT", "TARGETS"}, rows);
}

std::string render_canaries(const json& s, const Style& st, double now) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : s["canaries"]) {
    std::string exp = str(c, "expected");
    if (c["expectation_met"].is_boolean()) exp += c["expectation_met"].get<bool>() ? " (met)" : " (NOT met)";
    rows.push_back({str(c, "name"), str(c, "fs") + (str(c, "layout").empty() ? "" : " " + str(c, "layout")), verdict(st, c["verdict"]),
                    exp, ago(c["last_run"], now)});
  }
  return table({"CANARY", "STACK", "VERDICT", "EXPECTED", "LAST-RUN"}, rows);
}

std::string render_canary(const json& c, const Style& st, double now) {
  std::string out = "canary " + str(c, "name") + " (" + str(c, "fs") + " " + str(c, "layout") + ", mounted at " +
                    (str(c, "mountpoint").empty() ? "?" : str(c, "mountpoint")) + ")\n";
  out += "  last verdict: " + verdict(st, c["verdict"]) + ", " + ago(c["last_run"], now) + "\n";
  out += "  expected:     " + str(c, "expected") +
         (c["expectation_met"].is_boolean() ? (c["expectation_met"].get<bool>() ? " (met)" : " (NOT met)") : "") + "\n";
  out += "  story:        " + str(c, "story") + "\n";
  return out;
}

std::string render_scrubs(const json& s, const Style&) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : s["targets"]) {
    if (t["scrub"].is_null()) continue;
    const auto& sc = t["scrub"];
    std::string state = sc["running"].get<bool>() ? "running" : sc["paused"].get<bool>() ? "paused" : "idle";
    rows.push_back({str(t, "name"), str(t, "fs"), state, scrub_age(t), scrub_findings(t),
                    str(sc, "mode").empty() ? "-" : str(sc, "mode"), str(sc, "decision").empty() ? "-" : str(sc, "decision")});
  }
  return table({"TARGET", "FS", "STATE", "LAST-COMPLETED", "FINDINGS", "MODE", "DECISION"}, rows);
}

std::string render_job(const json& j, bool finished) {
  std::string out = "job " + std::to_string(j["job"].get<std::uint64_t>()) + " " + str(j, "state") + ": " + str(j, "subject");
  return out + (finished ? ": " + str(j, "result") : "") + "\n";
}

std::string render_jobs(const json& jobs, double now) {
  if (jobs.empty()) return "no jobs since fsauditd started (run, canary run|init and scrub start|pause|cancel make them)\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : jobs) {
    auto finished = num(j["finished_at"]);
    std::string took = finished ? format_seconds(*finished - num(j["queued_at"]).value_or(*finished)) : "-";
    rows.push_back({std::to_string(j["job"].get<std::uint64_t>()), str(j, "state"), str(j, "kind"), str(j, "subject"),
                    ago(j["queued_at"], now), took, str(j, "result").empty() ? "-" : str(j, "result")});
  }
  return table({"JOB", "STATE", "KIND", "SUBJECT", "QUEUED", "TOOK", "RESULT"}, rows);
}

std::string render_explain(const json& t, double now) {
  std::string name = str(t, "name"), fs = str(t, "fs");
  std::string out = name + " is " + article(fs) + fs + " filesystem" +
                    (str(t, "device").empty() ? "" : " on " + str(t, "device")) + ".\n";
  std::string h = str(t, "health");
  if (h == "ok") out += "Its health is ok: nothing fsaudit checks is wrong.\n";
  else {
    out += "Its health is " + h + " because:\n";
    for (const auto& p : t["problems"]) out += "  - " + p.get<std::string>() + "\n";
  }
  // One sentence from whichever of the two the daemon knows: a missing half is left out, not
  // printed as a fragment (", read-write." alone).
  std::string mount = !t["mounted"].is_boolean() ? "" : t["mounted"].get<bool>() ? "mounted" : "NOT mounted";
  std::string mode = !t["readonly"].is_boolean() ? "" : t["readonly"].get<bool>() ? "read-only" : "read-write";
  if (!mount.empty() || !mode.empty())
    out += "It is " + mount + (!mount.empty() && !mode.empty() ? ", " : "") + mode + ".\n";
  else out += "fsaudit has no mount state for it.\n";
  auto size = num(t["size_bytes"]), avail = num(t["avail_bytes"]);
  if (size && avail)
    out += format_bytes(*avail) + " of " + format_bytes(*size) + " are free (" + used(t) + " used); " +
           (num(t["days_to_full"]) ? "at the recent rate it is full in " + days(t) + " days.\n"
                                   : "it is not filling up (or fsaudit has not watched it long enough to tell).\n");
  if (t["data_checksums"].is_boolean())
    out += t["data_checksums"].get<bool>() ? "It checksums data, so corruption is detected when read.\n"
                                           : "It does not checksum data: corrupted file contents are returned without an error.\n";
  if (t.contains("canary_details") && !t["canary_details"].empty()) {
    for (const auto& c : t["canary_details"]) {
      out += "The " + str(c, "name") + " canary tests this kind of stack (" + str(c, "fs") + " " + str(c, "layout") + "): ";
      out += c["verdict"].is_string() ? "its last verdict, " + ago(c["last_run"], now) + ", was " + c["verdict"].get<std::string>() + ": " + str(c, "story") + "\n"
                                      : "it has not finished a cycle yet.\n";
    }
  } else {
    out += "No canary tests " + article(fs) + fs + " stack, so fsaudit has not shown what this stack does with corrupted data.\n";
  }
  if (t["scrub"].is_null()) out += "fsaudit does not scrub it (no scrub for " + fs + ").\n";
  else {
    const auto& s = t["scrub"];
    auto a = num(s["age_seconds"]);
    out += "Scrub: " + std::string(s["running"].get<bool>() ? "running now; " : "") +
           (a ? (std::isfinite(*a) ? "last completed " + format_seconds(*a) + " ago" : "never completed") : "age unknown") +
           ", findings: " + scrub_findings(t) + (str(s, "mode").empty() ? "" : ", mode " + str(s, "mode")) + ".\n";
  }
  auto p50 = num(t["fsync_seconds"]["p50"]), p99 = num(t["fsync_seconds"]["p99"]);
  if (p99) out += "fsync latency over the recent window: p50 " + (p50 ? format_seconds(*p50) : "?") + ", p99 " + format_seconds(*p99) + ".\n";
  else out += "fsync latency is not sampled here.\n";
  if (!t["setup_findings"].empty()) {
    out += "Setup findings:\n";
    for (const auto& f : t["setup_findings"]) out += "  - " + str(f, "rule") + " (" + str(f, "severity") + ")\n";
  }
  for (const auto& p : t["probe_issues"]) out += "Probe " + str(p, "probe") + " is failing: " + str(p, "reason") + "\n";
  return out;
}

}  // namespace fsaudit::ctl
