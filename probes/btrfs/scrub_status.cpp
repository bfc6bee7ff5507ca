#include "probes/btrfs/scrub_status.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

#include "daemon/core/dates.hpp"
#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::btrfs {

namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// "Key:   value" -> value when s starts with key (case-sensitive) followed by ':'.
std::optional<std::string_view> field(std::string_view s, std::string_view key) {
  if (s.size() <= key.size() || s.substr(0, key.size()) != key || s[key.size()] != ':') return std::nullopt;
  return trim(s.substr(key.size() + 1));
}

ScrubState state_from(std::string_view v) {
  v = trim(v);
  if (v == "running") return ScrubState::running;
  if (v == "finished") return ScrubState::finished;
  if (v == "aborted") return ScrubState::aborted;
  if (v == "interrupted") return ScrubState::interrupted;
  return ScrubState::unknown;
}

std::optional<double> parse_rate(std::string_view v) {
  v = trim(v);
  if (v.size() > 2 && v.substr(v.size() - 2) == "/s") v.remove_suffix(2);
  auto r = parse_human_bytes(v);
  if (!r) return std::nullopt;
  return *r;
}

bool set_raw_counter(ScrubRawCounters& c, std::string_view key, std::uint64_t v) {
  struct Entry {
    std::string_view name;
    std::uint64_t ScrubRawCounters::*member;
  };
  static const Entry entries[] = {
      {"data_extents_scrubbed", &ScrubRawCounters::data_extents_scrubbed},
      {"tree_extents_scrubbed", &ScrubRawCounters::tree_extents_scrubbed},
      {"data_bytes_scrubbed", &ScrubRawCounters::data_bytes_scrubbed},
      {"tree_bytes_scrubbed", &ScrubRawCounters::tree_bytes_scrubbed},
      {"read_errors", &ScrubRawCounters::read_errors},
      {"csum_errors", &ScrubRawCounters::csum_errors},
      {"verify_errors", &ScrubRawCounters::verify_errors},
      {"no_csum", &ScrubRawCounters::no_csum},
      {"csum_discards", &ScrubRawCounters::csum_discards},
      {"super_errors", &ScrubRawCounters::super_errors},
      {"malloc_errors", &ScrubRawCounters::malloc_errors},
      {"uncorrectable_errors", &ScrubRawCounters::uncorrectable_errors},
      {"unverified_errors", &ScrubRawCounters::unverified_errors},
      {"corrected_errors", &ScrubRawCounters::corrected_errors},
      {"last_physical", &ScrubRawCounters::last_physical},
  };
  for (const auto& e : entries) {
    if (e.name == key) {
      c.*(e.member) = v;
      return true;
    }
  }
  return false;
}

// "csum=7137 read=2" -> details
void parse_details(std::string_view v, std::map<std::string, std::uint64_t>& out) {
  for (auto tok : split_ws(v)) {
    auto eq = tok.find('=');
    if (eq == std::string_view::npos) continue;
    if (auto n = parse_u64(tok.substr(eq + 1))) out[std::string(tok.substr(0, eq))] += *n;
  }
}

// Old format: "scrub started at Wed Jul  8 19:53:52 2020 and finished after 10:04:57"
bool parse_old_started_line(std::string_view t, ScrubSection& s) {
  std::string_view rest;
  if (t.starts_with("scrub started at ")) {
    rest = t.substr(17);
  } else if (t.starts_with("scrub resumed at ")) {
    rest = t.substr(17);
    s.resumed = true;
  } else {
    return false;
  }
  struct Tail {
    std::string_view marker;
    ScrubState state;
  };
  static const Tail tails[] = {
      {" and finished after ", ScrubState::finished},
      {" and was aborted after ", ScrubState::aborted},
      {", running for ", ScrubState::running},
      {", interrupted after ", ScrubState::interrupted},
  };
  for (const auto& tail : tails) {
    auto p = rest.find(tail.marker);
    if (p == std::string_view::npos) continue;
    s.started_text = std::string(trim(rest.substr(0, p)));
    s.state = tail.state;
    auto dur = rest.substr(p + tail.marker.size());
    auto comma = dur.find(',');
    if (comma != std::string_view::npos) dur = dur.substr(0, comma);
    s.duration_seconds = parse_scrub_duration(dur);
    s.started_epoch = parse_ctime_local(s.started_text);
    return true;
  }
  s.started_text = std::string(trim(rest));
  s.started_epoch = parse_ctime_local(s.started_text);
  return true;
}

template <class T>
void add_opt(std::optional<T>& into, const std::optional<T>& v) {
  if (!v) return;
  into = into.value_or(T{}) + *v;
}

ScrubSection aggregate(const std::vector<ScrubSection>& devs) {
  ScrubSection t;
  bool all_raw = !devs.empty();
  bool any_running = false, any_aborted = false, any_interrupted = false, all_finished = true, all_never = true;
  bool any_unknown = false;
  ScrubRawCounters raw;
  for (const auto& d : devs) {
    switch (d.state) {
      case ScrubState::running: any_running = true; break;
      case ScrubState::aborted: any_aborted = true; break;
      case ScrubState::interrupted: any_interrupted = true; break;
      case ScrubState::unknown: any_unknown = true; break;
      default: break;
    }
    if (d.state != ScrubState::finished) all_finished = false;
    if (d.state != ScrubState::never) all_never = false;
    if (d.started_epoch && (!t.started_epoch || *d.started_epoch < *t.started_epoch)) {
      t.started_epoch = d.started_epoch;
      t.started_text = d.started_text;
    }
    if (d.duration_seconds && (!t.duration_seconds || *d.duration_seconds > *t.duration_seconds))
      t.duration_seconds = d.duration_seconds;
    if (d.time_left_seconds && (!t.time_left_seconds || *d.time_left_seconds > *t.time_left_seconds))
      t.time_left_seconds = d.time_left_seconds;
    add_opt(t.total_bytes, d.total_bytes);
    add_opt(t.scrubbed_bytes, d.scrubbed_bytes);
    add_opt(t.rate_bytes_per_second, d.rate_bytes_per_second);
    add_opt(t.corrected, d.corrected);
    add_opt(t.uncorrectable, d.uncorrectable);
    add_opt(t.unverified, d.unverified);
    add_opt(t.old_total_errors, d.old_total_errors);
    for (const auto& [k, v] : d.error_details) t.error_details[k] += v;
    t.summary_seen = t.summary_seen || d.summary_seen;
    t.resumed = t.resumed || d.resumed;
    t.malloc_warning = t.malloc_warning || d.malloc_warning;
    if (d.raw) raw.add(*d.raw);
    else all_raw = false;
  }
  if (all_raw) t.raw = raw;
  if (any_running) t.state = ScrubState::running;
  else if (any_aborted) t.state = ScrubState::aborted;
  else if (any_interrupted) t.state = ScrubState::interrupted;
  else if (any_unknown || devs.empty()) t.state = ScrubState::unknown;
  else if (all_finished) t.state = ScrubState::finished;
  else if (all_never) t.state = ScrubState::never;
  else t.state = ScrubState::finished;  // a mix of finished and never-scrubbed devices
  if (t.total_bytes && t.scrubbed_bytes && *t.total_bytes > 0 && t.state == ScrubState::running)
    t.progress_ratio = std::min(1.0, *t.scrubbed_bytes / *t.total_bytes);
  else if (t.state == ScrubState::finished)
    t.progress_ratio = 1.0;
  return t;
}

bool section_has_content(const ScrubSection& s) {
  return s.state != ScrubState::unknown || s.summary_seen || s.raw || !s.started_text.empty() ||
         s.duration_seconds || s.total_bytes;
}

}  // namespace

std::string_view to_string(ScrubState s) {
  switch (s) {
    case ScrubState::never: return "never";
    case ScrubState::running: return "running";
    case ScrubState::finished: return "finished";
    case ScrubState::aborted: return "aborted";
    case ScrubState::interrupted: return "interrupted";
    case ScrubState::unknown: break;
  }
  return "unknown";
}

const std::vector<std::string>& scrub_states() {
  static const std::vector<std::string> all = {"unknown", "never", "running", "finished", "aborted", "interrupted"};
  return all;
}

void ScrubRawCounters::add(const ScrubRawCounters& o) {
  data_extents_scrubbed += o.data_extents_scrubbed;
  tree_extents_scrubbed += o.tree_extents_scrubbed;
  data_bytes_scrubbed += o.data_bytes_scrubbed;
  tree_bytes_scrubbed += o.tree_bytes_scrubbed;
  read_errors += o.read_errors;
  csum_errors += o.csum_errors;
  verify_errors += o.verify_errors;
  no_csum += o.no_csum;
  csum_discards += o.csum_discards;
  super_errors += o.super_errors;
  malloc_errors += o.malloc_errors;
  uncorrectable_errors += o.uncorrectable_errors;
  unverified_errors += o.unverified_errors;
  corrected_errors += o.corrected_errors;
  last_physical = std::max(last_physical, o.last_physical);
}

std::optional<std::uint64_t> ScrubSection::errors_found() const {
  if (raw) return raw->read_errors + raw->csum_errors + raw->verify_errors + raw->super_errors;
  if (!error_details.empty()) {
    std::uint64_t n = 0;
    for (const auto& [k, v] : error_details)
      if (k == "read" || k == "csum" || k == "verify" || k == "super") n += v;
    return n;
  }
  if (old_total_errors) return old_total_errors;
  if (summary_seen) return 0;  // "no errors found"
  return std::nullopt;
}

std::optional<std::uint64_t> ScrubSection::corrected_errors() const {
  if (raw) return raw->corrected_errors;
  if (corrected) return corrected;
  if (summary_seen && error_details.empty() && old_total_errors.value_or(0) == 0) return 0;
  return std::nullopt;
}

std::optional<std::uint64_t> ScrubSection::uncorrectable_errors() const {
  if (raw) return raw->uncorrectable_errors;
  if (uncorrectable) return uncorrectable;
  if (summary_seen && error_details.empty() && old_total_errors.value_or(0) == 0) return 0;
  return std::nullopt;
}

std::optional<std::uint64_t> ScrubSection::csum_errors() const {
  if (raw) return raw->csum_errors;
  if (!error_details.empty()) {
    auto it = error_details.find("csum");
    return it == error_details.end() ? 0 : it->second;
  }
  if (summary_seen && old_total_errors.value_or(0) == 0) return 0;
  return std::nullopt;
}

std::optional<std::uint64_t> ScrubSection::read_errors() const {
  if (raw) return raw->read_errors;
  if (!error_details.empty()) {
    auto it = error_details.find("read");
    return it == error_details.end() ? 0 : it->second;
  }
  if (summary_seen && old_total_errors.value_or(0) == 0) return 0;
  return std::nullopt;
}

bool ScrubStatus::uncorrectable_reported() const {
  for (const auto& l : error_lines)
    if (l.find("uncorrectable") != std::string::npos) return true;
  return false;
}

std::optional<double> parse_scrub_duration(std::string_view text) {
  text = trim(text);
  double days = 0;
  auto ws = split_ws(text);
  if (ws.size() == 3 && (ws[1] == "days" || ws[1] == "day")) {
    auto d = parse_u64(ws[0]);
    if (!d) return std::nullopt;
    days = static_cast<double>(*d);
    text = ws[2];
  } else if (ws.size() != 1) {
    return std::nullopt;
  }
  auto parts = split(text, ':');
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  double total = 0;
  for (auto p : parts) {
    auto n = parse_u64(p);
    if (!n) return std::nullopt;
    total = total * 60 + static_cast<double>(*n);
  }
  return total + days * 86400;
}

std::optional<std::int64_t> parse_ctime_local(std::string_view text) { return parse_c_date(text); }

namespace {

// What one line of `btrfs scrub status` was: not of this kind, understood, or understood and proof
// that the text is scrub status output at all.
enum class Line { unknown, seen, recognised };

// One pass over the text: the filesystem section, -d device sections, and the section lines go to.
struct StatusReader {
  ScrubStatus st;
  ScrubSection fs;
  std::vector<ScrubSection> devs;
  ScrubSection* cur = &fs;

  Line read(std::string_view t) {
    for (auto kind : {&StatusReader::header, &StatusReader::new_format, &StatusReader::old_format, &StatusReader::raw_counter})
      if (Line l = (this->*kind)(t); l != Line::unknown) return l;
    return Line::unknown;  // anything else (warnings, blank decorations) is ignored
  }

  // Headers and section starts.
  Line header(std::string_view t) {
    if (auto v = field(t, "UUID")) {
      st.uuid = std::string(*v);
      return Line::recognised;
    }
    if (t.starts_with("scrub status for ")) {
      st.uuid = std::string(trim(t.substr(17)));
      return Line::recognised;
    }
    if (t.starts_with("scrub done for ") || t.starts_with("scrub canceled for ") ||
        t.starts_with("scrub started for ")) {
      st.uuid = std::string(trim(t.substr(t.find(" for ") + 5)));
      return Line::recognised;
    }
    if (t.starts_with("Starting scrub on devid") || t.starts_with("scrub started on ") ||
        t.starts_with("scrub resumed on ")) {
      return Line::recognised;
    }
    if (starts_with_ci(t, "scrub device ")) {
      // "scrub device /dev/sda (id 1) history" / "Scrub device /dev/sda2 (id 1) done"
      ScrubSection d;
      auto rest = t.substr(13);
      auto idp = rest.rfind(" (id ");
      if (idp != std::string_view::npos) {
        d.device = std::string(trim(rest.substr(0, idp)));
        auto close = rest.find(')', idp);
        if (close != std::string_view::npos) d.devid = parse_u64(rest.substr(idp + 5, close - idp - 5));
      } else {
        auto ws = split_ws(rest);
        if (!ws.empty()) d.device = std::string(ws[0]);
      }
      devs.push_back(std::move(d));
      cur = &devs.back();
      return Line::recognised;
    }
    if (t.starts_with("ERROR:")) {
      st.error_lines.emplace_back(t);
      return Line::recognised;
    }
    if (t.starts_with("*** WARNING: memory allocation failed")) {
      cur->malloc_warning = true;
      return Line::seen;
    }
    return Line::unknown;
  }

  // "Key: value" fields of progs >= 5.x.
  Line new_format(std::string_view t) {
    if (auto v = field(t, "Scrub started")) {
      cur->started_text = std::string(*v);
      cur->started_epoch = parse_ctime_local(*v);
      return Line::recognised;
    }
    if (auto v = field(t, "Scrub resumed")) {
      cur->started_text = std::string(*v);
      cur->started_epoch = parse_ctime_local(*v);
      cur->resumed = true;
      return Line::recognised;
    }
    if (auto v = field(t, "Status")) {
      cur->state = state_from(*v);
      return Line::recognised;
    }
    if (auto v = field(t, "Duration")) {
      cur->duration_seconds = parse_scrub_duration(*v);
      return Line::recognised;
    }
    if (auto v = field(t, "Time left")) {
      cur->time_left_seconds = parse_scrub_duration(*v);
      return Line::seen;
    }
    if (auto v = field(t, "ETA")) {
      cur->eta_text = std::string(*v);
      return Line::seen;
    }
    if (auto v = field(t, "Total to scrub")) {
      if (auto b = parse_human_bytes(*v)) cur->total_bytes = *b;
      return Line::recognised;
    }
    if (auto v = field(t, "Bytes scrubbed")) {
      auto ws = split_ws(*v);
      if (!ws.empty())
        if (auto b = parse_human_bytes(ws[0])) cur->scrubbed_bytes = *b;
      if (ws.size() > 1) {
        auto pct = ws[1];
        if (pct.starts_with("(")) pct.remove_prefix(1);
        if (pct.ends_with(")")) pct.remove_suffix(1);
        if (pct.ends_with("%")) pct.remove_suffix(1);
        if (auto p = parse_double(pct)) cur->progress_ratio = *p / 100.0;
      }
      return Line::seen;
    }
    if (auto v = field(t, "Rate")) {
      cur->rate_bytes_per_second = parse_rate(*v);
      return Line::seen;
    }
    if (auto v = field(t, "Error summary")) {
      cur->summary_seen = true;
      if (*v != "no errors found") parse_details(*v, cur->error_details);
      return Line::recognised;
    }
    if (auto v = field(t, "Corrected")) {
      cur->corrected = parse_u64(*v);
      return Line::seen;
    }
    if (auto v = field(t, "Uncorrectable")) {
      cur->uncorrectable = parse_u64(*v);
      return Line::seen;
    }
    if (auto v = field(t, "Unverified")) {
      cur->unverified = parse_u64(*v);
      return Line::seen;
    }
    return Line::unknown;
  }

  // Lines of progs 4.x.
  Line old_format(std::string_view t) {
    if (parse_old_started_line(t, *cur)) {
      return Line::recognised;
    }
    if (t == "no stats available") {
      cur->state = ScrubState::never;
      return Line::recognised;
    }
    if (t.starts_with("total bytes scrubbed: ")) {
      // "total bytes scrubbed: 1.23GiB with 0 errors"
      auto ws = split_ws(t.substr(22));
      if (!ws.empty())
        if (auto b = parse_human_bytes(ws[0])) cur->scrubbed_bytes = *b;
      if (ws.size() >= 3 && ws[1] == "with") cur->old_total_errors = parse_u64(ws[2]);
      cur->summary_seen = true;
      return Line::recognised;
    }
    if (auto v = field(t, "error details")) {
      parse_details(*v, cur->error_details);
      cur->summary_seen = true;
      return Line::seen;
    }
    if (t.starts_with("corrected errors: ")) {
      // "corrected errors: 0, uncorrectable errors: 0, unverified errors: 0"
      for (auto part : split(t, ',')) {
        auto p = trim(part);
        auto colon = p.find(':');
        if (colon == std::string_view::npos) continue;
        auto key = trim(p.substr(0, colon));
        auto n = parse_u64(trim(p.substr(colon + 1)));
        if (key == "corrected errors") cur->corrected = n;
        else if (key == "uncorrectable errors") cur->uncorrectable = n;
        else if (key == "unverified errors") cur->unverified = n;
      }
      return Line::seen;
    }
    return Line::unknown;
  }

  // Raw counters (-R), old and new format alike.
  Line raw_counter(std::string_view t) {
    auto colon = t.find(':');
    if (colon != std::string_view::npos) {
      auto key = trim(t.substr(0, colon));
      if (auto n = parse_u64(trim(t.substr(colon + 1)))) {
        ScrubRawCounters probe_c;
        if (set_raw_counter(probe_c, key, *n)) {
          if (!cur->raw) cur->raw = ScrubRawCounters{};
          set_raw_counter(*cur->raw, key, *n);
          return Line::recognised;
        }
      }
    }
    return Line::unknown;
  }

  ScrubStatus finish() {
    auto done = [](ScrubSection& s) {
      if (s.raw) s.scrubbed_bytes = static_cast<double>(s.raw->data_bytes_scrubbed + s.raw->tree_bytes_scrubbed);
      if (!s.progress_ratio && s.state == ScrubState::finished) s.progress_ratio = 1.0;
    };
    done(fs);
    for (auto& d : devs) done(d);
    if (!devs.empty() && !section_has_content(fs)) {
      st.total = aggregate(devs);
      st.total_aggregated = true;
    } else {
      st.total = std::move(fs);
    }
    st.devices = std::move(devs);
    return std::move(st);
  }
};

}  // namespace

Result<ScrubStatus> parse_scrub_status(std::string_view text) {
  StatusReader r;
  bool recognised = false;
  for (auto line : lines(text)) {
    auto t = trim(line);
    if (!t.empty() && r.read(t) == Line::recognised) recognised = true;
  }
  if (!recognised) {
    auto ls = lines(text);
    std::string first = ls.empty() ? std::string("(empty output)") : std::string(trim(ls.front()).substr(0, 80));
    return err("btrfs scrub status output not recognised; first line: '" + first + "'");
  }
  // btrfs-progs ends every line with a newline; a last line without it was cut, and its value may be
  // a valid but wrong number ("21" of "2112").
  if (text.back() != '\n')
    return err("btrfs scrub status output ends inside a line (cut short): '" +
               std::string(trim(lines(text).back()).substr(0, 80)) + "'");
  return r.finish();
}

bool scrub_records_final(const ScrubStatus& s) {
  if (s.total.state != ScrubState::finished) return false;
  for (const auto& d : s.devices)
    if (d.state != ScrubState::finished && d.state != ScrubState::aborted) return false;
  return true;
}

ScrubState ScrubFileRecord::state() const {
  if (t_start == 0) return ScrubState::never;
  if (canceled) return ScrubState::aborted;
  if (finished) return ScrubState::finished;
  return ScrubState::interrupted;
}

std::optional<ScrubFileRecord> ScrubFile::aggregate(std::string_view fsid) const {
  std::optional<ScrubFileRecord> out;
  for (const auto& r : records) {
    if (!fsid.empty() && r.fsid != fsid) continue;
    if (!out) {
      out = r;
      continue;
    }
    out->counters.add(r.counters);
    if (r.t_start && (!out->t_start || r.t_start < out->t_start)) out->t_start = r.t_start;
    if (r.t_resumed && (!out->t_resumed || r.t_resumed < out->t_resumed)) out->t_resumed = r.t_resumed;
    out->duration_seconds = std::max(out->duration_seconds, r.duration_seconds);
    out->canceled = out->canceled || r.canceled;
    out->finished = out->finished && r.finished;
    out->devid = 0;  // aggregated
  }
  return out;
}

Result<ScrubFile> parse_scrub_status_file(std::string_view text) {
  ScrubFile f;
  auto ls = lines(text);
  size_t i = 0;
  while (i < ls.size() && trim(ls[i]).empty()) ++i;
  if (i == ls.size()) return err("btrfs scrub status file is empty");
  {
    auto head = trim(ls[i]);
    auto v = field(head, "scrub status");
    auto n = v ? parse_u64(*v) : std::nullopt;
    if (!n) return err("btrfs scrub status file: first line is '" + std::string(head) + "', expected 'scrub status:1'");
    f.version = static_cast<int>(*n);
    if (f.version != 1)
      return err("btrfs scrub status file version " + std::to_string(f.version) + " is not supported (only 1)");
    ++i;
  }
  for (; i < ls.size(); ++i) {
    auto line = trim(ls[i]);
    if (line.empty()) continue;
    auto fields = split(line, '|');
    auto head = fields[0];
    auto colon = head.find(':');
    if (colon == std::string_view::npos)
      return err("btrfs scrub status file line " + std::to_string(i + 1) + ": no '<fsid>:<devid>' at the start");
    ScrubFileRecord r;
    r.fsid = std::string(head.substr(0, colon));
    auto devid = parse_u64(head.substr(colon + 1));
    if (!devid || r.fsid.size() != 36)
      return err("btrfs scrub status file line " + std::to_string(i + 1) + ": bad '<fsid>:<devid>' '" +
                 std::string(head) + "'");
    r.devid = *devid;
    for (size_t k = 1; k < fields.size(); ++k) {
      auto kv = fields[k];
      auto c = kv.find(':');
      if (c == std::string_view::npos) continue;
      auto key = kv.substr(0, c);
      auto n = parse_u64(kv.substr(c + 1));
      if (!n) continue;
      if (set_raw_counter(r.counters, key, *n)) continue;
      if (key == "t_start") r.t_start = static_cast<std::int64_t>(*n);
      else if (key == "t_resumed") r.t_resumed = static_cast<std::int64_t>(*n);
      else if (key == "duration") r.duration_seconds = *n;
      else if (key == "canceled") r.canceled = *n != 0;
      else if (key == "finished") r.finished = *n != 0;
    }
    f.records.push_back(std::move(r));
  }
  return f;
}

}  // namespace fsaudit::btrfs
