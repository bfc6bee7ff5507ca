#include "probes/zfs/status.hpp"

#include <cctype>
#include <cmath>
#include <set>

#include "daemon/core/strings.hpp"
#include "daemon/core/units.hpp"

namespace fsaudit::zfs {

namespace {

const std::set<std::string, std::less<>> kKeys = {"pool",   "id",    "state", "status",     "action",
                                                  "see",    "scan",  "scrub", "config",     "errors",
                                                  "remove", "checkpoint", "expand", "comment"};

// Leading whitespace width, tabs to the next multiple of 8 (as a terminal shows it).
std::size_t indent_of(std::string_view line) {
  std::size_t col = 0;
  for (char c : line) {
    if (c == ' ') ++col;
    else if (c == '\t') col = (col / 8 + 1) * 8;
    else break;
  }
  return col;
}

// The line with tabs expanded to the next multiple of 8, as column positions are counted.
std::string expand_tabs(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 8);
  for (char c : line) {
    if (c == '\t') out.append(8 - out.size() % 8, ' ');
    else out.push_back(c);
  }
  return out;
}

// At most `n` bytes of `s` for an error message (the rest of a junk line is noise).
std::string excerpt(std::string_view s, std::size_t n = 80) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "...";
}

bool known_vdev_state(std::string_view s) {
  static const std::set<std::string_view> states = {"ONLINE", "DEGRADED", "FAULTED", "OFFLINE", "UNAVAIL",
                                                    "REMOVED", "AVAIL", "INUSE", "SUSPENDED", "-"};
  return states.count(s) > 0;
}

// "0", "7", "1.05K", "3.45K" (abbreviated without -p).
std::optional<std::uint64_t> count(std::string_view s) {
  if (auto v = parse_u64(s)) return v;
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9')) return std::nullopt;
  auto h = parse_human_bytes(s);
  if (!h || *h < 0) return std::nullopt;
  return static_cast<std::uint64_t>(std::llround(*h));
}

std::string role_of_section(std::string_view header) {
  if (header == "logs") return "log";
  if (header == "cache") return "cache";
  if (header == "spares") return "spare";
  return std::string(header);  // special, dedup, ...
}

// Interior vdev type from its printed name: "mirror-0" -> mirror, "raidz2-1" -> raidz2,
// "draid2:4d:11c:0s-0" -> draid2, legacy "mirror"/"raidz" -> as is.
std::string interior_type(std::string_view name) {
  auto colon = name.find(':');
  if (colon != std::string_view::npos) return std::string(name.substr(0, colon));
  auto dash = name.rfind('-');
  if (dash != std::string_view::npos && dash + 1 < name.size() && parse_u64(name.substr(dash + 1)))
    return std::string(name.substr(0, dash));
  return std::string(name);
}

std::string join_ws(std::string_view s) {
  std::string out;
  for (auto w : split_ws(s)) {
    if (!out.empty()) out += ' ';
    out.append(w);
  }
  return out;
}

// ^(\d+) data errors?\b -> the number (matched by hand: std::regex is slow for what runs on every
// probe run and fuzz input).
std::optional<std::string_view> data_error_count(std::string_view e) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::size_t d = 0;
  while (d < e.size() && e[d] >= '0' && e[d] <= '9') ++d;
  auto rest = e.substr(d);
  if (d == 0 || !rest.starts_with(" data error")) return std::nullopt;
  rest.remove_prefix(11);
  if (rest.starts_with('s')) rest.remove_prefix(1);
  if (!rest.empty() && word(rest[0])) return std::nullopt;
  return e.substr(0, d);
}

// ^\s*([a-z]+):(?:\s(.*))?$ -> key and value: a header line of zpool status ("  state: ONLINE").
struct HeaderKey {
  std::string_view key, value;
};
std::optional<HeaderKey> header_key(std::string_view line) {
  auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::size_t i = 0;
  while (i < line.size() && blank(line[i])) ++i;
  std::size_t k = i;
  while (k < line.size() && line[k] >= 'a' && line[k] <= 'z') ++k;
  if (k == i || k == line.size() || line[k] != ':') return std::nullopt;
  auto value = line.substr(k + 1);
  if (!value.empty()) {
    // One blank, then anything but a line end.
    if (!blank(value[0]) || value.find_first_of("\r\n", 1) != std::string_view::npos) return std::nullopt;
    value.remove_prefix(1);
  }
  return HeaderKey{line.substr(i, k - i), value};
}

void finish_errors(ZfsPoolStatus& p, const std::vector<std::string>& extra) {
  const std::string& e = p.errors_text;
  if (e.starts_with("No known data errors")) {
    p.data_errors = 0;
  } else if (auto n = data_error_count(e)) {
    p.data_errors = parse_u64(*n);
  } else if (e.starts_with("Permanent errors have been detected")) {
    std::uint64_t n = 0;
    for (auto& l : extra) {
      auto t = trim(l);
      if (!t.empty() && t.find_first_not_of('.') != std::string_view::npos) ++n;
    }
    if (n > 0) p.data_errors = n;  // a lower bound when the list was cut
  }
}

// A vdev that groups others (mirror-0, raidz2-1, draid2:4d:12c:1s-0, replacing-0, spare-1): its
// children follow on the next rows.
bool is_group(std::string_view name) {
  auto type = interior_type(name);
  if (type == name) return false;  // no "-N" id nor draid's ":": a device
  return type == "mirror" || type.starts_with("raidz") || type.starts_with("draid") || type == "replacing" ||
         type == "spare";
}

void finish_tree(ZfsPoolStatus& p) {
  for (std::size_t i = 0; i < p.vdevs.size(); ++i) {
    auto& v = p.vdevs[i];
    v.leaf = !(i + 1 < p.vdevs.size() && p.vdevs[i + 1].depth > v.depth);
    v.type = v.leaf ? "leaf" : interior_type(v.name);
  }
}

}  // namespace

bool state_is_healthy(std::string_view state) { return state == "ONLINE" || state == "HEALTHY"; }

bool pool_prints_error_count(std::string_view state) {
  return state.empty() || state == "ONLINE" || state == "DEGRADED" || state == "SUSPENDED";
}

Result<ZfsStatusReport> parse_zpool_status(std::string_view text, ScanTimeZone tz) {
  ZfsStatusReport rep;
  ZfsPoolStatus* pool = nullptr;
  std::string key;            // current header key for continuation lines
  std::string scan_text;      // scan block being collected
  std::vector<std::string> error_lines;
  bool in_config = false, have_header = false, have_root = false;
  std::size_t base = 0;
  std::size_t state_col = 0;  // column of the header's STATE: a name ends before it (names may hold blanks)
  std::string problem;        // first reason the output cannot be trusted
  std::vector<bool> complete; // per pool: its "errors:" line (the last one zpool prints) was seen
  std::vector<bool> tree_done;  // per pool: the config tree ended with its blank line
  bool last_row_open = false;   // the tree's last row so far is a group or section still waiting for its children
  int nslow = 0;              // extra numeric columns after CKSUM (-s: SLOW)
  std::string section_role = "data";
  std::vector<std::string> parents;  // by depth

  auto close_pool = [&]() {
    if (!pool) return;
    if (pool->has_scan) pool->scan = parse_zfs_scan(scan_text, tz);
    else pool->scan.recognized = true;  // no scan line: never scrubbed/resilvered (OpenZFS 2.x)
    finish_errors(*pool, error_lines);
    finish_tree(*pool);
    scan_text.clear();
    error_lines.clear();
  };

  for (auto raw : lines(text)) {
    std::string_view line = raw;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto t = trim(line);
    if (in_config) {
      if (t.empty()) {
        if (have_root) {
          in_config = false;
          if (!tree_done.empty()) tree_done.back() = true;
        }
        continue;
      }
      auto toks = split_ws(t);
      if (!have_header) {
        if (toks.size() >= 2 && toks[0] == "NAME" && toks[1] == "STATE") {
          have_header = true;
          base = indent_of(line);
          auto ex = expand_tabs(line);
          state_col = ex.find(" STATE");
          state_col = state_col == std::string::npos ? 0 : state_col + 1;
          nslow = 0;
          for (std::size_t i = 5; i < toks.size(); ++i) ++nslow;
          continue;
        }
        // No tree header: this line is a header key or something unknown; fall through.
        in_config = false;
      } else if (indent_of(line) < base) {
        in_config = false;  // less indented than NAME: the tree is over
      } else {
        std::size_t depth = (indent_of(line) - base) / 2;
        // zpool pads every name to one width, so the STATE column of the header is where each name
        // ends: names with blanks ("my pool", "/srv/zfs images/disk 1.img") are read whole.
        auto ex = expand_tabs(line);
        std::string name;
        std::vector<std::string_view> rest_toks;
        if (state_col > 0 && ex.size() <= state_col) {
          name = std::string(trim(ex));  // a section header ("logs", "spares") has no columns
        } else if (state_col > 1 && ex[state_col - 1] == ' ' && ex[state_col] != ' ') {
          name = std::string(trim(std::string_view(ex).substr(0, state_col)));
          rest_toks = split_ws(std::string_view(ex).substr(state_col));
        } else if (toks.size() >= 2 && known_vdev_state(toks[1])) {
          // Not aligned with the header (hand-edited or reflowed text): one-word name, as printed.
          name = std::string(toks[0]);
          rest_toks.assign(toks.begin() + 1, toks.end());
        } else {
          if (problem.empty())
            problem = "config row '" + excerpt(t) +
                      "' does not line up with the NAME/STATE header and its second word is not a vdev "
                      "state: cannot tell where the name ends (ambiguous with blanks in names)";
          continue;
        }
        if (name.empty()) continue;
        // Keep the token layout of the rest: [name, state, read, write, cksum, slow..., note...].
        toks.clear();
        toks.push_back(name);
        toks.insert(toks.end(), rest_toks.begin(), rest_toks.end());
        std::string state = toks.size() > 1 ? std::string(toks[1]) : "";
        std::optional<std::uint64_t> r, w, c;
        std::size_t next = 2;
        if (toks.size() >= 5) {
          r = count(toks[2]);
          w = count(toks[3]);
          c = count(toks[4]);
          if (r && w && c) {
            next = 5;
            for (int s = 0; s < nslow && next < toks.size() && count(toks[next]); ++s) ++next;
          } else {
            r = w = c = std::nullopt;
          }
        }
        std::string note;
        for (std::size_t i = next; i < toks.size(); ++i) {
          if (!note.empty()) note += ' ';
          note.append(toks[i]);
        }
        last_row_open = depth == 0 || is_group(name);
        if (depth == 0) {
          if (!have_root) {
            have_root = true;
            if (pool) {
              pool->root_state = state;
              pool->read_errors = r;
              pool->write_errors = w;
              pool->checksum_errors = c;
            }
            section_role = "data";
          } else {
            section_role = role_of_section(name);  // logs / cache / spares / special / dedup
          }
          parents.assign(1, "");
          continue;
        }
        if (!pool) continue;
        ZfsVdev v;
        v.name = name;
        v.depth = static_cast<int>(depth) - 1;
        v.role = section_role;
        v.state = state == "-" ? "" : state;
        v.read_errors = r;
        v.write_errors = w;
        v.checksum_errors = c;
        v.note = note;
        parents.resize(depth + 1);
        v.parent = depth >= 2 ? parents[depth - 1] : "";
        parents[depth] = name;
        pool->vdevs.push_back(std::move(v));
        continue;
      }
    }
    if (auto hk = header_key(line); hk && kKeys.count(hk->key)) {
      key = std::string(hk->key);
      std::string value(trim(hk->value));
      if (key == "pool") {
        close_pool();
        rep.pools.emplace_back();
        complete.push_back(false);
        tree_done.push_back(false);
        pool = &rep.pools.back();
        pool->name = value;
        have_header = have_root = false;
        section_role = "data";
      } else if (!pool) {
        continue;
      } else if (key == "state") {
        pool->state = value;
      } else if (key == "status") {
        pool->status = value;
      } else if (key == "action") {
        pool->action = value;
      } else if (key == "see") {
        pool->see = value;
      } else if (key == "scan" || key == "scrub") {
        pool->has_scan = true;
        scan_text = value;
      } else if (key == "config") {
        in_config = true;
        have_header = have_root = false;
        // A pool whose configuration is unknown gets no tree and no "errors:" line.
        if (value.starts_with("The configuration cannot be determined")) complete.back() = true;
      } else if (key == "errors") {
        pool->errors_text = value;
        complete.back() = true;
      }
      continue;
    }
    if (t.empty()) {
      if (key != "errors") key.clear();
      continue;
    }
    if (!pool) {
      if (t.starts_with("no pools available")) rep.no_pools = true;
      continue;
    }
    // Continuation of the current key.
    if (key == "status") pool->status += " " + join_ws(t);
    else if (key == "action") pool->action += " " + join_ws(t);
    else if (key == "scan" || key == "scrub") scan_text += "\n" + std::string(t);
    else if (key == "errors") error_lines.emplace_back(t);
  }
  close_pool();
  if (!problem.empty()) return err(problem);
  if (rep.pools.empty() && !rep.no_pools) {
    auto t = trim(text);
    if (t.starts_with("all pools are healthy") || t.empty()) return rep;
    auto first = lines(t);
    return err("not zpool status output (first line: '" + excerpt(first.empty() ? "" : first[0]) + "')");
  }
  // zpool prints "errors:" only when the pool's error count is known, which it is not for a pool it
  // could not open (devices gone at import or at the daemon's start: state UNAVAIL or FAULTED): a
  // config tree closed by its blank line is whole too. The last pool's tree has no blank line after
  // it: there the output's end is its end when the pool could not be opened, the last line is whole
  // and the last row is a device, not a group or section still waiting for its children (a
  // mirror-0 with none is a cut). An open pool (ONLINE, DEGRADED, SUSPENDED) always ends with
  // "errors:"; without it, it was cut. A cut inside the tree or before it is not whole.
  if (pool && in_config && have_root && !last_row_open && !pool_prints_error_count(pool->state))
    tree_done.back() = true;
  // zpool ends every line it prints: output that stops inside a line was cut there ("  poo" of the
  // next pool, the leading tab of the next vdev row), whatever came before it. Except a last line
  // that is a whole "errors:" line: text copied from elsewhere often lost its final newline.
  if (!rep.pools.empty() && !text.empty() && text.back() != '\n') {
    auto nl = text.rfind('\n');
    auto last = trim(nl == std::string_view::npos ? text : text.substr(nl + 1));
    if (!(last.starts_with("errors:") && rep.pools.back().data_errors)) complete.back() = tree_done.back() = false;
  }
  for (std::size_t i = 0; i < rep.pools.size(); ++i) rep.pools[i].complete = complete[i] || tree_done[i];
  return rep;
}

}  // namespace fsaudit::zfs
